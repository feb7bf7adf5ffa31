// Egress port (switch_models/port.py): the queues of one link, its queue manager and
// scheduler, and the serialiser.
//
// Like an ns-3 queue disc attached to a net device: the queue manager admits, drops, trims or
// marks (`qm->enqueue`), the scheduler picks the next queue, and the serialiser sends one
// packet at a time at the link rate. A packet starts serialising at max(port free, its
// arrival) and leaves at start + size / rate + link delay (`depart`): the schedule follows
// from the arrivals alone, however late the caller polls.
//
// Evicted packets stay in their queue marked not queued and are skipped at dequeue, so
// eviction from the middle of a queue is O(1); live counts exclude them (see Ref).
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "switch/packet.hpp"
#include "switch/queue_managers.hpp"
#include "base/ring.hpp"
#include "switch/schedulers.hpp"

namespace dlcp {

// Preamble, start delimiter, inter-frame gap and FCS: what a real link spends per frame
// beyond the bytes a veth carries.
constexpr int64_t ETHERNET_OVERHEAD = 24;

struct PortConfig {
  double rate_bps = 0;
  int64_t delay_ns = 0;
  int64_t buffer_bytes = 256 * 1024;
  int64_t buffer_packets = 0;  // 0: buffer_bytes / 64, as the Python model's `or`
  int64_t overhead_bytes = ETHERNET_OVERHEAD;
};

struct PortCounters {
  explicit PortCounters(int n_queues)
      : q_enqueued(n_queues), q_sent(n_queues), q_dropped(n_queues), q_max_bytes(n_queues) {}
  int64_t enqueued = 0, enqueued_bytes = 0;
  int64_t tx_packets = 0, tx_bytes = 0;
  int64_t trimmed = 0, marked = 0;
  std::array<int64_t, N_REASONS> drops{};  // by Reason
  int64_t drop_bytes = 0;
  std::vector<int64_t> q_enqueued, q_sent, q_dropped, q_max_bytes;
  int64_t max_bytes = 0;
  // Per job (Packet::job): tx packets, tx bytes, dropped packets, dropped bytes, in order of
  // first sight (a run has a few jobs: a scan beats a map); each column sums to the port's own.
  std::vector<std::pair<uint16_t, std::array<int64_t, 4>>> jobs;
  std::array<int64_t, 4>& job(uint16_t id) {
    for (auto& row : jobs)
      if (row.first == id) return row.second;
    jobs.push_back({id, {0, 0, 0, 0}});
    return jobs.back().second;
  }
};

// A drop with its reason: `port` is the egress port, or the input port for NO_ROUTE; `pkt`
// is the packet as it was dropped (a trimmed header has its trimmed size).
struct DropRecord {
  int64_t now;
  int32_t port;
  Reason reason;
  Slot slot;  // NO_SLOT for a packet that never had one (no route)
  Packet pkt;
};

// Drops are recorded only while `on` (Python's record_drops; a batch run turns it on).
struct DropLog {
  bool on = false;
  std::vector<DropRecord> records;
};

struct Departure {
  int32_t port;
  Slot slot;  // already free again: a driver maps it to its own object before the next receive
  Packet pkt;
};

class EgressPort {
 public:
  EgressPort(int number, const PortConfig& cfg, std::unique_ptr<QueueManager> qm,
             std::unique_ptr<Scheduler> scheduler, int n_classes, PacketPool& pool,
             DropLog& drop_log);

  // -- used by queue managers -------------------------------------------------------------
  void push(Slot slot);
  void drop(Slot slot, Reason reason, int64_t now);   // the arriving packet is not admitted
  void evict(Slot slot, Reason reason, int64_t now);  // remove a queued packet (lazily)
  Slot pop_tail(int q);                               // pFabric drops from the tail
  Slot lowest_droppable(int below_mag = 8);
  std::pair<uint32_t, std::optional<int64_t>> eligible(int64_t t);
  Slot head(int q);

  // -- the serialiser ---------------------------------------------------------------------
  void send_idle(Slot slot, int64_t now);
  void start(int64_t now);
  void release(int64_t now, std::vector<Departure>& out);
  // Every packet started so far, in departure order, appended to `wire` for a driver that
  // carries each to the far end by its `depart` itself (the simulator): counted as sent now.
  void hand_off(Ring<Packet>& wire);
  std::optional<int64_t> next_event() const;

  const int number;
  const double rate_bps;
  const int64_t delay_ns;
  const int64_t buffer_bytes;
  const int64_t buffer_packets;
  const int64_t overhead;
  const double ns_per_byte;
  PacketPool& pool;
  std::unique_ptr<Scheduler> scheduler;
  int n_queues;
  std::array<int, 8> qmap{};
  std::vector<Ring<Ref>> queues;
  std::vector<int64_t> qbytes;  // live bytes per queue
  std::vector<int64_t> qpkts;   // live packets per queue
  uint32_t mask = 0;            // bit q set while queue q holds a live packet
  int64_t bytes = 0;            // live bytes in all queues (the buffer occupancy)
  int64_t packets = 0;
  // Queued droppable packets by magnitude class, for a queue manager that evicts them
  // (DLCP); empty for the others.
  std::vector<Ring<Ref>> droppable;
  int64_t busy_until = 0;
  int64_t last_arrival = 0;  // newest arrival queued (all older ones: fast path)
  Ring<Slot> inflight;       // serialised or serialising, waiting for depart
  PortCounters counters;
  DropLog& drop_log;
  std::unique_ptr<QueueManager> qm;
  int64_t idle_limit = 0;  // see `send_idle`
  bool in_busy = false;    // listed in the switch's busy ports

 private:
  void unlink(int q, int64_t size);
  int64_t serialisation(int64_t size) const {
    return static_cast<int64_t>(static_cast<double>(size + overhead) * ns_per_byte + 0.5);
  }
};

}  // namespace dlcp
