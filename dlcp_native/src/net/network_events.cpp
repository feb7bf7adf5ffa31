// The network's loop and its events (dlcp_emu/sim/network.py `head_arrives`, `_forward`,
// `_wake`): a wire's head reaching its far end, a port putting on the wire what it has
// started, and the wake-up of a port with a backlog.
#include "net/network.hpp"

#include <limits>

#include "base/prefetch.hpp"

namespace dlcp {

// -- the loop --------------------------------------------------------------------------------
bool Network::for_driver(const Event& e) const {
  if (e.kind == CALL) return true;
  if (e.kind != HEAD) return false;
  const Peer& peer = wires[e.target].peer;
  return peer.sw < 0 && handled_[peer.host] && wires[e.target].packets.front().uid < CARRIED_UID;
}

uint64_t Network::run(int64_t until, int64_t max_events, std::vector<HostEvent>& batch) {
  const uint64_t budget = max_events < 0 ? std::numeric_limits<uint64_t>::max()
                                         : static_cast<uint64_t>(max_events);
  uint64_t n = 0;
  int64_t batch_time = 0;
  uint64_t bound = 0;  // keys from here on were scheduled after the batch began
  while (!loop.empty() && n != budget) {
    const Event& top = loop.top();
    if (top.time > until) {
      // A batch still to answer is answered at its own time (events.py runs each event at
      // its time); the clock reaches `until` once nothing is left before it.
      if (batch.empty()) loop.now = until;
      break;
    }
    const bool driver = for_driver(top);
    if (!batch.empty() && (!driver || top.time != batch_time || top.key >= bound)) break;
    if (driver && batch.empty()) {
      batch_time = top.time;
      bound = static_cast<uint64_t>(loop.major() + 1) << MINOR_BITS;
    }
    const Event e = loop.pop();
    loop.now = e.time;
    ++n;
    look_ahead();
    switch (e.kind) {
      case HEAD:
        head_arrives(e.target, batch);
        break;
      case WAKE:
        wake(e.target, e.time);
        break;
      case SEND: {
        const Packet pkt = pool_[e.target];
        pool_.release(e.target);
        transmit(sender_[e.target], pkt, e.time, false, -1);
        break;
      }
      case CALL: {
        Delivery none{};
        none.time = e.time;  // a timer's time is in the delivery's place
        batch.push_back({CALLBACK, e.target, loop.major(), none});
        break;
      }
      case STACK_TIMER:
        stack_timer(e.target, e.time, batch);
        break;
    }
    if (agent_called_) {  // the agent answers before anything else runs
      agent_called_ = false;
      break;
    }
    look_deeper();
  }
  loop.events += n;
  return n;
}

// The loop is bound by memory at scale: each event reads a wire, its head packet, and what that
// packet leads to (a switch's route and port, or a carried packet's header and its host's
// stack), most of them out of the caches. The next events are known (the heap's top and, one
// further, among the top's children), so their data is asked for while this event runs, one
// level deeper each step: the wires of the events after the next, the next event's head
// packet, and once that has arrived (after this event ran), what it leads to. Prefetches
// change nothing that runs, only when memory is read.
namespace {
inline void prefetch_packet(const Packet* p) { prefetch_both_ends(p, sizeof(Packet)); }
}  // namespace

void Network::look_ahead() const {
  const size_t n = loop.pending();
  if (n == 0) return;
  const Event& next = loop.at(0);
  if (next.kind == HEAD) {
    const Ring<Packet>& packets = wires[next.target].packets;
    prefetch_packet(&packets.front());
    // The packet behind it: its departure is the wire's next event, scheduled as it runs.
    if (packets.size() > 1) prefetch_packet(&packets[1]);
  }
  const size_t last = n < 5 ? n : 5;
  for (size_t i = 1; i < last; ++i) {
    const Event& e = loop.at(i);
    if (e.kind == HEAD || e.kind == WAKE) prefetch(&wires[e.target]);
  }
}

void Network::look_deeper() const {
  if (loop.empty()) return;
  const Event& next = loop.top();
  if (next.kind != HEAD) return;
  const Wire& wire = wires[next.target];
  const Packet& pkt = wire.packets.front();
  if (wire.peer.sw >= 0) {
    switches[wire.peer.sw]->prefetch(pkt, wire.peer.port);
  } else if (pkt.uid >= CARRIED_UID) {
    const transport::OutPacket* out = &carried_[static_cast<size_t>(pkt.uid - CARRIED_UID)];
    prefetch_both_ends(out, sizeof(transport::OutPacket));
    prefetch(host_stacks_[wire.peer.host].data());
  }
}

std::optional<int64_t> Network::next_event_time() const {
  if (loop.empty()) return std::nullopt;
  return loop.top().time;
}

// The event of a wire: its head packet reaches the far end. The event's time is the packet's
// `depart`, which nothing changes while it is on the wire.
void Network::head_arrives(uint32_t w, std::vector<HostEvent>& batch) {
  Wire& wire = wires[w];
  const Packet pkt = wire.packets.pop_front();
  if (!wire.packets.empty()) loop.schedule(wire.packets.front().depart, HEAD, w);
  if (wire.peer.sw < 0) {
    delivered += 1;
    if (pkt.uid >= CARRIED_UID) {
      stack_deliver(pkt, wire.peer.host, batch);
      return;
    }
    const Delivery d{pkt.uid, wire.peer.host, pkt.depart, pkt.size, pkt.rewrite, pkt.cls, pkt.ce, pkt.arrival};
    if (handled_[wire.peer.host])
      batch.push_back({DELIVER, 0, loop.major(), d});
    else
      deliveries.push_back(d);
    return;
  }
  const int64_t now = pkt.depart;
  Switch& sw = *switches[wire.peer.sw];
  const int out = sw.receive(pkt, wire.peer.port, now);
  if (record_drops && !sw.drop_log.records.empty()) {
    for (const DropRecord& d : sw.drop_log.records) note_drop({wire.peer.sw, d.now, d.port, d.reason, d.pkt.uid});
    sw.drop_log.records.clear();
  }
  if (out >= 0) forward(wire.peer.sw, out, now);
}

// Put on the wire what this port has started, and come back when it can start more.
void Network::forward(int s, int p, int64_t now) {
  EgressPort& port = *switches[s]->ports[p];
  if (port.packets) port.start(now);
  const uint32_t w = switch_wires[s][p];
  Wire& wire = wires[w];
  const bool idle = wire.packets.empty();
  port.hand_off(wire.packets);
  if (idle && !wire.packets.empty()) loop.schedule(wire.packets.front().depart, HEAD, w);
  if (port.packets) ask_wake(w, port.busy_until, false, -1);
}

void Network::wake(uint32_t w, int64_t t) {
  Wire& wire = wires[w];
  if (!wire.waking || wire.wake_at != t) return;  // superseded by an earlier wake-up, which rescheduled
  wire.waking = false;
  if (wire.sw < 0)
    nic_forward(wire.port, t, false, -1);  // a priority NIC's wake-up
  else
    forward(wire.sw, wire.port, t);
}

}  // namespace dlcp
