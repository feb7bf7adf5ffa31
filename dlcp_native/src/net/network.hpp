// A topology in virtual time (dlcp_emu/sim/network.py): every switch a `Switch`, every host
// a `HostNic` at its link rate, so hosts are paced by their links as in the emulator. A NIC
// with a `priority` queue holds what it has not started and is woken when its link is free.
//
// Per hop the loop does one arrival event: the switch takes the packet in, and what its
// egress port has started serialising goes onto that link's wire with its departure time,
// which is when it arrives at the peer (delay included). A wire delivers in order, so only
// its head is on the event heap: the heap holds a wire per busy link, not a packet per packet
// in flight, which keeps it small at scale. A port with a backlog gets a wake-up at the time
// it can start the next packet.
//
// Everything happens as in the Python network, event for event and in the same order, so the
// two agree to the nanosecond. A host's endpoints are either outside (Python): a delivery to
// a host that a driver handles, and a driver's own timer, stop the loop and come back as a
// batch (`run`), deliveries to other hosts are logged; or in the core (`attach_stack`,
// host_stack.hpp): their packets, timers and deliveries run here, and the driver is called
// only when the host's agent has to run (a tensor delivered, its timer due).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "net/events.hpp"
#include "host/host_stack.hpp"
#include "switch/nic.hpp"
#include "switch/packet.hpp"
#include "switch/port.hpp"
#include "switch/registry.hpp"
#include "base/ring.hpp"
#include "switch/switch.hpp"

namespace dlcp {

// The far end of a link: switch `sw`'s port index `port`, or (sw < 0) host `host`.
struct Peer {
  int32_t sw = -1;
  int32_t port = -1;
  int32_t host = -1;
};

// A topology as plain data. Hosts and switches are dense indices; a packet's `dst` is the
// index of its destination host (-1: none).
struct SwitchSetup {
  std::vector<PortConfig> ports;         // by port index (the topology's numbers, in order)
  std::vector<std::vector<int>> routes;  // by host index: the equal-cost port indices
  PipelineSpec pipeline;                 // its load balancer's seed salted for this switch
  std::vector<Peer> peers;               // by port index
};
struct HostSetup {
  double rate_bps;
  int64_t delay_ns;
  Peer peer;
  bool control_first = false;  // its NIC's queue is `priority` (nic.hpp)
};

// One direction of a link: what its sender has started, in departure order, on its way to
// the far end; and, for a switch port, the wake-up it has asked for. The packets are held in
// the wire itself, not copied into and out of slots of one pool for the network, and the
// next head lies beside the one arriving.
struct Wire {
  Ring<Packet> packets;
  int64_t wake_at = 0;
  bool waking = false;  // wake_at is set (Python: not None)
  int32_t sw = -1, port = -1;  // the switch port it leaves from (sw < 0: host `port`'s NIC)
  Peer peer;
};

// A packet handed to a host: its fields as the switches left them.
struct Delivery {
  int64_t uid;
  int32_t host;
  int64_t time;     // the packet's arrival at the host (its `depart` from the last hop)
  int64_t size;     // trimmed, if it was
  uint8_t rewrite;  // REWRITE_* bits the driver applies to its frame
  uint8_t cls;
  bool ce;
  int64_t arrival;  // when the last switch took it in
};

// A drop, with packet records on: node (switches first, then hosts), time, port index (0 for
// a NIC; the input port for NO_ROUTE), reason, uid.
struct NetDrop {
  int32_t node;
  int64_t time;
  int32_t port;
  Reason reason;
  int64_t uid;
};

// A drop of a stack's packet, with its header (packet records: where each lost one went).
struct CarriedDrop {
  NetDrop at;
  transport::Header h;
};

// What comes back to the driver: a delivery to a host it handles, its own timer, or a host
// whose stack is in the core and whose agent must run now (then `stack_flush`; the batch
// ends there).
enum HostEventKind : uint8_t { DELIVER, CALLBACK, AGENT };
struct HostEvent {
  HostEventKind kind;
  uint32_t callback;  // the id `call_at` returned; for AGENT, the stack's
  int64_t major;      // schedule what answers this event under this major (events.hpp)
  Delivery delivery;   // for a timer, only its time
};

class Network {
 public:
  Network(const std::vector<SwitchSetup>& switches, const std::vector<HostSetup>& hosts,
          bool record_drops);

  // A host hands a packet to its NIC at `now`; false if the NIC dropped it. `major`: see
  // events.hpp (below 0: now).
  bool send(int host, Packet pkt, int64_t now, int64_t major = -1);
  // The same as an event at `t`: what `loop.at(t, net.send, host, pkt)` does in Python.
  void send_at(int host, const Packet& pkt, int64_t t, int64_t major = -1);
  // A timer of the driver's at t >= now: it comes back in a batch. Returns its id.
  uint32_t call_at(int64_t t, int64_t major = -1);
  // Deliveries to `host` come back to the driver (else they are logged in `deliveries`).
  void set_handled(int host, bool handled);

  // A job's endpoints at a host run in the core from now on (see host_stack.hpp); the
  // endpoints are the caller's and must outlive the network. Returns the stack's id.
  uint32_t attach_stack(std::unique_ptr<HostStack> stack);
  HostStack& stack(uint32_t id) const;
  // hosts.py `_flush` for a stack in the core: what its endpoints put out goes to the NIC,
  // and its timer is armed at their next timeout. The driver calls it once the agent has run
  // (`AGENT`), under that entry's major.
  void stack_flush(uint32_t id, int64_t now, int64_t major);

  // stack.py `start` and the flush after it for a stack whose agent is in the core
  // (HostStack::adopt_agent), under `major`; whether the agent is done already.
  bool start_agent(uint32_t id, int64_t now, int64_t major);

  // Run events in time order until none is left, the next one is after `until` (then
  // now = until), `max_events` have run (below 0: no limit), or a batch is collected: the
  // events for the driver at one time that follow each other in the order of the heap and
  // were scheduled before the first of them ran. Everything the driver schedules in answer
  // then comes after them, as in Python, where it would run them one by one. Returns the
  // number of events run.
  uint64_t run(int64_t until, int64_t max_events, std::vector<HostEvent>& batch);
  std::optional<int64_t> next_event_time() const;

  // Every packet still in the network (queued, serialising, or on a wire): its uid.
  void in_flight(std::vector<int64_t>& out) const;
  // The headers of the stacks' packets among them.
  void carried_in_flight(std::vector<transport::Header>& out) const;
  // Drops of the stacks' packets are kept in carried_drops from now on.
  bool record_carried_drops = false;
  std::vector<CarriedDrop> carried_drops;

  EventLoop loop;
  std::vector<std::unique_ptr<Switch>> switches;
  std::vector<HostNic> nics;
  std::vector<Wire> wires;
  std::vector<std::vector<uint32_t>> switch_wires;  // [switch][port index] -> wire
  std::vector<uint32_t> host_wires;                 // [host] -> the wire its NIC drives
  std::vector<Delivery> deliveries;                 // to hosts no driver handles
  std::vector<NetDrop> drops;                       // with record_drops
  int64_t delivered = 0;
  const bool record_drops;

 private:
  enum Kind : uint8_t { HEAD, WAKE, SEND, CALL, STACK_TIMER };
  // Packets of the stacks in the core carry uids from here on (a slot in carried_): the
  // driver's own uids are below.
  static constexpr int64_t CARRIED_UID = int64_t{1} << 60;
  bool for_driver(const Event& e) const;
  void look_ahead() const;   // before an event runs: the next ones' wires and packet
  void look_deeper() const;  // after it ran: what the next event's packet leads to
  bool transmit(int host, Packet pkt, int64_t now, bool outside, int64_t major);
  void head_arrives(uint32_t w, std::vector<HostEvent>& batch);
  void forward(int sw, int port, int64_t now);
  void wake(uint32_t w, int64_t t);
  void nic_forward(int host, int64_t now, bool outside, int64_t major);
  void put_on(uint32_t w, const Packet& pkt, bool outside, int64_t major);
  void ask_wake(uint32_t w, int64_t t, bool outside, int64_t major);
  // An event of the loop's own (its key from the loop), or one answering the driver (`major`).
  void schedule(int64_t t, Kind kind, uint32_t target, bool outside, int64_t major) {
    if (outside)
      loop.schedule_outside(t, kind, target, major);
    else
      loop.schedule(t, kind, target);
  }
  void note_drop(const NetDrop& d);
  uint32_t carry(transport::OutPacket&& out);  // a slot of carried_ for what a stack's packet carries
  void let_go(uint32_t slot);
  void stack_deliver(const Packet& pkt, int host, std::vector<HostEvent>& batch);
  void stack_timer(uint32_t id, int64_t t, std::vector<HostEvent>& batch);
  void stack_turn(uint32_t id, int64_t now, std::vector<HostEvent>& batch);
  void agent_turn(uint32_t id, int64_t now, int64_t major, bool starting, std::vector<HostEvent>& batch);

  PacketPool pool_;               // sends waiting for their time
  std::vector<int32_t> sender_;   // by slot: the host of a send waiting for its time
  std::vector<char> handled_;     // by host
  uint32_t callbacks_ = 0;
  std::vector<std::unique_ptr<HostStack>> stacks_;  // by id
  std::vector<std::vector<uint32_t>> host_stacks_;  // by host: its stacks' ids (one a job)
  std::vector<transport::OutPacket> carried_;      // what a stack's packet in flight carries
  std::vector<uint32_t> carried_free_;
  std::vector<transport::OutPacket> out_;          // scratch for stack_flush
  bool agent_called_ = false;                      // an AGENT entry ends the batch
};

}  // namespace dlcp
