#include "net/network.hpp"

#include <limits>
#include <stdexcept>
#include <string>

namespace dlcp {

namespace {

void check_peer(const Peer& peer, const std::vector<SwitchSetup>& switches, size_t n_hosts,
                const std::string& what) {
  const bool ok = peer.sw >= 0 ? peer.sw < static_cast<int>(switches.size()) && peer.port >= 0 &&
                                     peer.port < static_cast<int>(switches[peer.sw].ports.size())
                               : peer.host >= 0 && peer.host < static_cast<int>(n_hosts);
  if (!ok) throw std::invalid_argument(what + ": its link leads to no node of the network");
}

void check_packet(const Packet& pkt) {
  if (pkt.prio > 7 || pkt.mag > 7)
    throw std::invalid_argument("packet uid " + std::to_string(pkt.uid) + ": prio and mag must be in 0..7");
}

}  // namespace

Network::Network(const std::vector<SwitchSetup>& setups, const std::vector<HostSetup>& hosts,
                 bool record_drops_)
    : record_drops(record_drops_) {
  for (size_t s = 0; s < setups.size(); ++s) {
    const SwitchSetup& setup = setups[s];
    if (setup.peers.size() != setup.ports.size())
      throw std::invalid_argument("switch index " + std::to_string(s) + ": one peer per port");
    switches.push_back(std::make_unique<Switch>(setup.ports, setup.routes, std::vector<int>{},
                                                setup.pipeline, record_drops));
  }
  for (const HostSetup& h : hosts) nics.emplace_back(h.rate_bps, h.delay_ns);
  // wires[node][port]: the wire each egress leaves on (a host's NIC: one), switches first.
  for (size_t s = 0; s < setups.size(); ++s) {
    switch_wires.emplace_back();
    for (size_t p = 0; p < setups[s].ports.size(); ++p) {
      check_peer(setups[s].peers[p], setups, hosts.size(),
                 "switch index " + std::to_string(s) + " port index " + std::to_string(p));
      Wire wire;
      wire.sw = static_cast<int32_t>(s);
      wire.port = static_cast<int32_t>(p);
      wire.peer = setups[s].peers[p];
      switch_wires[s].push_back(static_cast<uint32_t>(wires.size()));
      wires.push_back(std::move(wire));
    }
  }
  for (size_t h = 0; h < hosts.size(); ++h) {
    check_peer(hosts[h].peer, setups, hosts.size(), "host index " + std::to_string(h));
    Wire wire;
    wire.peer = hosts[h].peer;
    host_wires.push_back(static_cast<uint32_t>(wires.size()));
    wires.push_back(std::move(wire));
  }
  handled_.assign(hosts.size(), 0);
  host_stacks_.resize(hosts.size());
}

// -- what the hosts do ----------------------------------------------------------------------
bool Network::send(int host, Packet pkt, int64_t now, int64_t major) {
  if (host < 0 || host >= static_cast<int>(nics.size()))
    throw std::out_of_range("no host index " + std::to_string(host));
  check_packet(pkt);
  return transmit(host, pkt, now, true, major);
}

void Network::send_at(int host, const Packet& pkt, int64_t t, int64_t major) {
  if (host < 0 || host >= static_cast<int>(nics.size()))
    throw std::out_of_range("no host index " + std::to_string(host));
  check_packet(pkt);
  const Slot slot = pool_.alloc(pkt);
  if (slot >= sender_.size()) sender_.resize(slot + 1);
  sender_[slot] = host;
  loop.schedule_outside(t > loop.now ? t : loop.now, SEND, slot, major);
}

uint32_t Network::call_at(int64_t t, int64_t major) {
  const uint32_t id = callbacks_++;
  loop.schedule_outside(t > loop.now ? t : loop.now, CALL, id, major);
  return id;
}

void Network::set_handled(int host, bool handled) {
  if (host < 0 || host >= static_cast<int>(nics.size()))
    throw std::out_of_range("no host index " + std::to_string(host));
  handled_[host] = handled;
}

bool Network::transmit(int host, Packet pkt, int64_t now, bool outside, int64_t major) {
  const std::optional<int64_t> arrival = nics[host].transmit(pkt.size, now);
  if (!arrival) {
    if (record_drops) note_drop({static_cast<int32_t>(switches.size()) + host, now, 0, BUFFER_FULL, pkt.uid});
    return false;
  }
  pkt.depart = *arrival;
  const uint32_t w = host_wires[host];
  Wire& wire = wires[w];
  if (wire.packets.empty()) {
    if (outside)
      loop.schedule_outside(pkt.depart, HEAD, w, major);
    else
      loop.schedule(pkt.depart, HEAD, w);
  }
  wire.packets.push_back(pkt);
  return true;
}

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
      loop.now = until;
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
  }
  loop.events += n;
  return n;
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
  if (port.packets) {
    const int64_t t = port.busy_until;
    if (!wire.waking || t < wire.wake_at) {
      wire.wake_at = t;
      wire.waking = true;
      loop.schedule(t, WAKE, w);
    }
  }
}

void Network::wake(uint32_t w, int64_t t) {
  Wire& wire = wires[w];
  if (!wire.waking || wire.wake_at != t) return;  // superseded by an earlier wake-up, which rescheduled
  wire.waking = false;
  forward(wire.sw, wire.port, t);
}

// -- stacks in the core ------------------------------------------------------------------------
uint32_t Network::attach_stack(std::unique_ptr<HostStack> stack) {
  const int host = stack->host;
  if (host < 0 || host >= static_cast<int>(nics.size()))
    throw std::out_of_range("no host index " + std::to_string(host));
  if (!record_drops)
    throw std::invalid_argument("a stack in the core needs record_drops: a dropped packet's record frees what it carried");
  for (uint32_t id : host_stacks_[host])
    if (stacks_[id]->job == stack->job)
      throw std::invalid_argument("host index " + std::to_string(host) + " has a stack of job " +
                                  std::to_string(stack->job) + " already");
  const uint32_t id = static_cast<uint32_t>(stacks_.size());
  stacks_.push_back(std::move(stack));
  host_stacks_[host].push_back(id);
  return id;
}

HostStack& Network::stack(uint32_t id) const {
  if (id >= stacks_.size()) throw std::out_of_range("no stack id " + std::to_string(id));
  return *stacks_[id];
}

void Network::note_drop(const NetDrop& d) {
  if (d.uid < CARRIED_UID) {
    drops.push_back(d);
    return;
  }
  const uint32_t slot = static_cast<uint32_t>(d.uid - CARRIED_UID);
  if (record_carried_drops) carried_drops.push_back({d, carried_[slot].h});
  let_go(slot);
}

uint32_t Network::carry(transport::OutPacket&& out) {
  if (carried_free_.empty()) {
    carried_.push_back(std::move(out));
    return static_cast<uint32_t>(carried_.size() - 1);
  }
  const uint32_t slot = carried_free_.back();
  carried_free_.pop_back();
  carried_[slot] = std::move(out);
  return slot;
}

void Network::let_go(uint32_t slot) {
  carried_[slot] = transport::OutPacket{};  // lets go of the message it pointed into
  carried_free_.push_back(slot);
}

void Network::stack_flush(uint32_t id, int64_t now, int64_t major) {
  HostStack& st = stack(id);
  const int host = st.host;
  out_.clear();
  st.poll(now, out_);
  for (transport::OutPacket& out : out_) {
    Packet pkt = st.packet(out);
    pkt.uid = CARRIED_UID + carry(std::move(out));
    transmit(host, pkt, now, true, major);
  }
  const std::optional<int64_t> t = st.next_timeout();
  if (t && st.armed != t) {  // hosts.py `_arm`: an event only before the one waiting
    st.armed = t;
    const int64_t at = *t > loop.now ? *t : loop.now;
    if (!st.queued || at < *st.queued) {
      st.queued = at;
      loop.schedule_outside(at, STACK_TIMER, id, major);
    }
  }
}

// hosts.py `deliver` for a packet of a stack in the core: the stack of its job at that host
// takes it (none: it is let go, as hosts.py lets go what no endpoint of the host's takes),
// with what the switches did to it (trim, CE) applied to what it carries; then its turn.
void Network::stack_deliver(const Packet& pkt, int host, std::vector<HostEvent>& batch) {
  const uint32_t slot = static_cast<uint32_t>(pkt.uid - CARRIED_UID);
  uint32_t id = NO_SLOT;
  {
    const transport::OutPacket& out = carried_[slot];
    for (uint32_t s : host_stacks_[host])
      if (stacks_[s]->job == out.h.job) id = s;
    if (id != NO_SLOT) {
      transport::Header h = out.h;
      transport::InPayload payload = out.in_payload();
      if (pkt.rewrite & REWRITE_TRIM) {
        h.flags |= transport::FLAG_TRIMMED;
        payload = transport::InPayload{};  // no payload: b"" in Python
      }
      stacks_[id]->receive(h, payload, pkt.depart, (pkt.rewrite & REWRITE_CE) != 0);
    }
  }
  let_go(slot);
  if (id != NO_SLOT) stack_turn(id, pkt.depart, batch);
}

// hosts.py `_timer`: the stack's earliest event; it waits on to the timeout armed last.
void Network::stack_timer(uint32_t id, int64_t t, std::vector<HostEvent>& batch) {
  HostStack& st = *stacks_[id];
  if (st.queued != t) return;  // superseded by an earlier one
  st.queued.reset();
  if (st.armed && *st.armed > t) {  // re-armed later while this one waited
    st.queued = st.armed;
    loop.schedule(*st.armed, STACK_TIMER, id);
    return;
  }
  if (st.armed != t) return;
  st.armed.reset();
  stack_turn(id, t, batch);
}

// After a stack took a packet, or its timer fired: its agent first if it has to run
// (the driver answers, then calls stack_flush), else the flush here and now.
void Network::stack_turn(uint32_t id, int64_t now, std::vector<HostEvent>& batch) {
  if (stacks_[id]->needs_agent(now)) {
    Delivery d{};
    d.host = stacks_[id]->host;
    d.time = now;
    batch.push_back({AGENT, id, loop.major(), d});
    agent_called_ = true;
    return;
  }
  stack_flush(id, now, loop.major());
}

void Network::carried_in_flight(std::vector<transport::Header>& out) const {
  std::vector<int64_t> uids;
  in_flight(uids);
  for (int64_t uid : uids)
    if (uid >= CARRIED_UID) out.push_back(carried_[static_cast<size_t>(uid - CARRIED_UID)].h);
}

void Network::in_flight(std::vector<int64_t>& out) const {
  for (const Wire& wire : wires)
    for (size_t i = 0; i < wire.packets.size(); ++i) out.push_back(wire.packets[i].uid);
  for (const auto& sw : switches)
    for (const auto& port : sw->ports) {
      for (size_t i = 0; i < port->inflight.size(); ++i) out.push_back(port->pool[port->inflight[i]].uid);
      for (const Ring<Ref>& q : port->queues)
        for (size_t i = 0; i < q.size(); ++i)
          if (port->pool.live(q[i])) out.push_back(port->pool[q[i].slot].uid);
    }
}

}  // namespace dlcp
