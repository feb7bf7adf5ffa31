// One host's transport endpoints of one job inside the core: the packet half of
// dlcp_emu/host/stack.py (a receiver, a sender per destination) with the glue of
// dlcp_emu/sim/hosts.py (`_flush`: what the endpoints put out goes to the NIC as switch
// packets; one timer armed at their next timeout). The agent stays in Python and is called
// per message: the network hands the stack to the driver when its receiver has completed a
// tensor the agent reads, or the agent's own timer is due, and runs everything else (every
// packet, every transport timer) without it. A schedule's agent can live here too
// (`adopt_agent`, schedule_agent.hpp; host_stack_agent.cpp): then no driver is called per
// message at all. A data-parallel worker's collectives can run here too (`adopt_collectives`,
// worker_collectives.hpp; host_stack_collectives.cpp): then the driver is called once a
// collective, when it ends, and for the worker's compute timers.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "host/schedule_agent.hpp"
#include "host/worker_collectives.hpp"
#include "switch/packet.hpp"
#include "transport/transport_receiver.hpp"
#include "transport/transport_sender.hpp"
#include "wire/wire_layout.hpp"

namespace dlcp {

// CPython's hash of a tuple of non-negative ints below 2**61 - 1 (tuplehash, 64-bit): the
// flow hash SimHosts gives a packet is `hash(5-tuple)`, and the core must give the same.
int64_t python_tuple_hash(const int64_t* items, size_t n);
// The same for a tuple written out: a per-packet hash allocates nothing.
inline int64_t python_tuple_hash(std::initializer_list<int64_t> items) {
  return python_tuple_hash(items.begin(), items.size());
}

// How a job's packets look on the wire (hosts.py `wire`): DLCP, or plain traffic (priority 7,
// no magnitude); ECN-capable data and probes, or never (the stand-in for kernel TCP); one
// flow per host pair on `udp_port`, or (udp_port < 0) one per message, as TCP connections.
struct StackWire {
  bool dlcp = true;
  bool ect = true;
  int64_t udp_port = wire::DLCP_UDP_PORT;
  int64_t ip = 0;                       // this host's IPv4 address, as an int
  std::vector<int32_t> host_of_rank;    // rank -> host index (-1: no such rank)
  std::vector<int64_t> ip_of_rank;      // rank -> its host's address
};

// host/packet_log.py's rows: every packet a stack sends and receives, up to `max_records`
// each (then counted in `overflow`). A row: src, dst, type, iteration, tensor_id, chunk,
// send_ts_ns, flags, priority, mag_class, tclass, size; received ones also recv_ns and ce.
struct PacketRow {
  uint16_t src, dst;
  uint8_t type;
  uint32_t iteration, tensor_id, chunk;
  int64_t send_ts_ns;
  uint8_t flags, priority, mag_class, tclass;
  int64_t size;
  int64_t recv_ns = 0;
  bool ce = false;
};
PacketRow packet_row(const transport::Header& h, int64_t payload_len);

struct PacketRecords {
  explicit PacketRecords(int64_t max) : max_records(max) {}
  const int64_t max_records;
  std::vector<PacketRow> sent, received;
  int64_t overflow = 0;
};

// What stack.py's pump needs to send for an agent in the core: how to make a sender
// (`sender_cls(rank, dst, job=, mtu=, policy=, cc=, rtt=)`) and the MagnitudePolicy's numbers
// (drop_order "magnitude", no class edges: the chunks' own octiles).
struct SenderSpec {
  bool bounded_loss;
  int64_t mtu;
  transport::CongestionControl cc;  // fresh: each sender starts from a copy
  transport::RttEstimator rtt;
  double reorder_fraction, droppable_fraction, loss_bound;
};

// stack.py `deliveries`: src, iteration, tensor_id, bytes, lost bytes, first_ns, done_ns,
// {magnitude class: lost bytes} (in the order Python's dict fills).
// The MagnitudePolicy's numbers a message's chunk plan needs (drop_order "magnitude", no
// class edges) and whether the transport has bounded loss.
struct ChunkPolicy {
  bool bounded_loss;
  double droppable_fraction, loss_bound;
};
// `prepare`'s plan of a gradient message from its chunks' magnitudes.
transport::ChunkPlan plan_message(const std::vector<double>& mags, int64_t nbytes, int64_t chunk_size,
                                  const ChunkPolicy& policy);

struct DeliveryRecord {
  int64_t src, iteration, tensor_id, nbytes, lost_bytes, first_ns, done_ns;
  std::vector<std::pair<int, int64_t>> lost_by_class;
};

class HostStack {
 public:
  // agent_reads: the agent reads the receiver's tensors (training); else they are let go as
  // they complete (background flows).
  HostStack(int32_t host, uint16_t job, transport::Receiver* receiver, StackWire wire, bool agent_reads);

  // A sender the agent made (Python's HostStack: on its first message to that rank).
  void add_sender(transport::Sender* sender);

  // stack.py `receive` up to its pump: feedback to the sender it answers, the rest to the
  // receiver.
  void receive(const transport::Header& h, const transport::InPayload& payload, int64_t now, bool ce);
  // stack.py `poll` after its agent part: the receiver's packets, then each sender's in the
  // order they were made. Only the senders given input since they were last polled and those
  // whose timeout has come are visited: any other would put out nothing and change nothing
  // (why the Python twin, which polls every one, gives the same packets in the same order).
  void poll(int64_t now, std::vector<transport::OutPacket>& out);
  // stack.py `next_timeout`: the agent's timer, the receiver's (its pull pacer) and the senders',
  // NO_DUE for none. A time, not an optional: one returned in registers was composed through
  // the stack (a byte stored, eight bytes loaded back), whose failed store forwarding held 5%
  // of the fat tree's samples at the core's every flush.
  static constexpr int64_t NO_DUE = transport::SenderWatch::NO_DUE;
  int64_t next_due();
  // The agent has to run before the endpoints are polled: a tensor for it, or its timer due.
  bool needs_agent(int64_t now) const;
  // The switch packet that carries `out` (hosts.py `_flush`: dlcp_packet or plain_packet).
  Packet packet(const transport::OutPacket& out);

  // A schedule agent runs here from now on (host_stack_agent.cpp): the stack makes its
  // senders and messages as stack.py's pump does.
  void adopt_agent(std::unique_ptr<ScheduleAgent> agent, SenderSpec spec);
  // stack.py `start` (starting) or `pump`, then `agent_turn`: the agent's part of a flush.
  void run_agent(int64_t now, bool starting);

  // A worker's collectives run here from now on: the stack takes in their messages and sends
  // their steps' through the senders the worker's Python stack made (host_stack_collectives.cpp).
  void adopt_collectives(int32_t rank, ChunkPolicy policy);
  // The worker begins a collective (WorkerCollectives::begin); true if it ended at once.
  bool begin_collective(Collective c, int64_t now);
  // stack.py `pump` for the collectives: the tensors delivered, then the steps' sends.
  void pump_collectives(int64_t now);

  const int32_t host;
  const uint16_t job;
  std::unique_ptr<ScheduleAgent> agent;     // null: the agent is the driver's
  std::unique_ptr<WorkerCollectives> collectives;  // null: none run here
  bool done_reported = false;               // the driver was told the agent is done
  std::vector<DeliveryRecord> deliveries;   // with an agent or collectives here
  int64_t timer_lateness_sum = 0;
  std::optional<int64_t> agent_timer;  // set by the driver after every call of the agent
  std::optional<int64_t> armed;        // hosts.py `armed`: the timeout last armed
  std::optional<int64_t> queued;       // hosts.py `queued`: its earliest event in the loop
  std::vector<transport::SendResult> completions;  // since the driver last took them
  std::unique_ptr<PacketRecords> records;           // null: none taken

 private:
  int64_t flow(const transport::Header& h);
  void pump(int64_t now);
  void send(const Outgoing& m, int64_t now);  // one message of the agent's to its sender
  void send_sized(const SizedMessage& m, int64_t now);  // one of the collectives'
  void record(transport::Delivery& d);  // into `deliveries`
  transport::Sender* sender_to(int64_t dst) const;  // null: none made

  transport::Receiver* receiver_;
  std::vector<std::pair<uint16_t, transport::Sender*>> senders_;  // in the order made: Python's dict
  // Which senders `poll` visits: those that can have work (transport_sender_watch.hpp).
  std::shared_ptr<transport::SenderWatch> watch_ = std::make_shared<transport::SenderWatch>();
  std::vector<uint32_t> visit_;  // this poll's senders (left empty between polls)
  StackWire wire_;
  bool agent_reads_;
  std::vector<int64_t> pair_flow_;  // by rank, once computed (-1: not yet)
  std::optional<SenderSpec> spec_;  // with an agent here
  ChunkPolicy chunk_policy_{};      // with collectives here
  std::vector<std::unique_ptr<transport::Sender>> own_senders_;
};

}  // namespace dlcp
