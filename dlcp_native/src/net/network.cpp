// The network's construction and what the hosts do; the loop's events are in
// network_events.cpp, the stacks in the core in network_stacks.cpp.
#include "net/network.hpp"

#include <stdexcept>
#include <string>
#include <utility>

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
  for (const HostSetup& h : hosts)
    nics.emplace_back(h.rate_bps, h.delay_ns, HOST_BUFFER_BYTES, ETHERNET_OVERHEAD, h.control_first);
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
    wire.port = static_cast<int32_t>(h);
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
  HostNic& nic = nics[host];
  if (nic.control_first) {  // network.py `send` with a priority NIC
    if (!nic.enqueue(pkt, now)) {
      if (record_drops) note_drop({static_cast<int32_t>(switches.size()) + host, now, 0, BUFFER_FULL, pkt.uid});
      return false;
    }
    nic_forward(host, now, outside, major);
    return true;
  }
  const std::optional<int64_t> arrival = nic.transmit(pkt.size, now);
  if (!arrival) {
    if (record_drops) note_drop({static_cast<int32_t>(switches.size()) + host, now, 0, BUFFER_FULL, pkt.uid});
    return false;
  }
  pkt.depart = *arrival;
  put_on(host_wires[host], pkt, outside, major);
  return true;
}

// network.py `_nic_forward`: put on the wire what a priority NIC starts now (control first),
// and come back when its link is free while packets wait.
void Network::nic_forward(int host, int64_t now, bool outside, int64_t major) {
  HostNic& nic = nics[host];
  const uint32_t w = host_wires[host];
  Packet pkt;
  if (nic.start(now, pkt)) put_on(w, pkt, outside, major);
  if (nic.waiting()) ask_wake(w, nic.free_at, outside, major);
}

// network.py `_put_on`: a packet that has started goes on its wire, whose head alone is an
// event, so an idle wire gets one.
void Network::put_on(uint32_t w, const Packet& pkt, bool outside, int64_t major) {
  Ring<Packet>& packets = wires[w].packets;
  if (packets.empty()) schedule(pkt.depart, HEAD, w, outside, major);
  packets.push_back(pkt);
}

// network.py `_ask_wake`: a switch port or a priority NIC with a backlog comes back at `t`,
// when its link is free, unless an earlier wake-up is asked for already (a later one would
// find nothing to start).
void Network::ask_wake(uint32_t w, int64_t t, bool outside, int64_t major) {
  Wire& wire = wires[w];
  if (wire.waking && t >= wire.wake_at) return;
  wire.wake_at = t;
  wire.waking = true;
  schedule(t, WAKE, w, outside, major);
}

// -- what is in it -------------------------------------------------------------------------
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
  for (const HostNic& nic : nics) {
    for (size_t i = 0; i < nic.control.size(); ++i) out.push_back(nic.control[i].item.uid);
    for (size_t i = 0; i < nic.data.size(); ++i) out.push_back(nic.data[i].item.uid);
  }
}

}  // namespace dlcp
