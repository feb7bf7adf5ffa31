// Queue managers (switch_models/queue_managers.py): admit, drop, evict, trim or mark each
// arriving packet at an egress port.
//
// `enqueue(port, slot, now)` ends in exactly one of port.push(slot) or port.drop(slot,
// reason, now), and may first evict queued packets with port.evict (each counted with its
// reason), so every packet a port takes in is accounted for. Thresholds are fractions of the
// port buffer so that a spec means the same thing at every link rate.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "switch/packet.hpp"
#include "switch/registry.hpp"

namespace dlcp {

class EgressPort;

// Drop reasons, as counted per port (NO_ROUTE is the switch's, before any port).
enum Reason : uint8_t {
  NO_ROUTE,
  BUFFER_FULL,
  DLCP_THRESHOLD,
  DLCP_EVICTED,
  PFABRIC_LOWEST,
  PFABRIC_EVICTED,
  TRIM_OVERFLOW,
  N_REASONS
};
// The names the Python model counts them by, in Reason order.
extern const char* const REASON_NAMES[N_REASONS];

class QueueManager {
 public:
  virtual ~QueueManager() = default;
  virtual void attach(const EgressPort& port);
  // The largest packet this manager admits unchanged into an empty queue: the port starts
  // such a packet at once without asking (its fast path). 0: always ask.
  virtual int64_t idle_limit() const;
  bool fits(const EgressPort& port, int64_t size) const;
  virtual void enqueue(EgressPort& port, Slot slot, int64_t now) = 0;

  bool evicts_droppable = false;  // true: the port keeps an index of its queued droppable packets
  // Bit c set: this manager may drop a droppable packet of traffic class c (the port indexes
  // only those).
  uint32_t tolerant = 0xFFFFFFFFu;
  bool may_drop(const Packet& pkt) const { return pkt.droppable && (tolerant >> pkt.tclass & 1u); }

 protected:
  int64_t limit_bytes_ = 0;
  int64_t limit_packets_ = 0;
};

namespace queue_managers {

// Admit while the buffer has room in bytes and packets, else drop the arrival.
class DropTail : public QueueManager {
 public:
  void enqueue(EgressPort& port, Slot slot, int64_t now) override;
};

// Drop-tail that marks CE on ECN-capable packets above `mark_fraction` of the buffer
// (DCTCP-style instantaneous threshold).
class Ecn : public QueueManager {
 public:
  explicit Ecn(double mark_fraction);
  void attach(const EgressPort& port) override;
  void enqueue(EgressPort& port, Slot slot, int64_t now) override;

 private:
  double mark_fraction_;
  int64_t mark_bytes_ = 0;
};

// DLCP bounded-loss dropping. Above `threshold` of the buffer, droppable packets are
// dropped, the lowest magnitude class first: class m is refused once occupancy passes
// threshold + (1 - threshold) * m / 8, so the bottom class goes at `threshold` and the top
// one just before the buffer is full. A packet that does not fit in the full buffer evicts
// queued droppable packets of lower magnitude (any magnitude, for a non-droppable arrival);
// a non-droppable packet is dropped only when no droppable one is left to evict.
class Dlcp : public QueueManager {
 public:
  Dlcp(double threshold, const std::vector<double>& loss_tolerant);
  void attach(const EgressPort& port) override;
  int64_t idle_limit() const override;
  void enqueue(EgressPort& port, Slot slot, int64_t now) override;

 private:
  double threshold_;
  std::array<int64_t, 8> mag_limit_{};
};

// pFabric: a full buffer makes room by dropping the least important packet, which is the
// arrival itself unless a queued packet is of a strictly worse class.
class PFabric : public QueueManager {
 public:
  void enqueue(EgressPort& port, Slot slot, int64_t now) override;
};

// NDP: once `trim_packets` are queued, a DLCP packet loses its payload and its header
// goes on in class 0, ahead of all data, so the receiver learns at once what to pull
// again. Headers are dropped only when the whole buffer is full; packets that cannot be
// trimmed (not DLCP) are dropped at the trim point.
class Trim : public QueueManager {
 public:
  explicit Trim(int64_t trim_packets);
  int64_t idle_limit() const override;
  void enqueue(EgressPort& port, Slot slot, int64_t now) override;

 private:
  int64_t trim_packets_;
};

}  // namespace queue_managers

std::unique_ptr<QueueManager> make_queue_manager(const StageSpec& spec);
std::vector<std::string> queue_manager_names();

}  // namespace dlcp
