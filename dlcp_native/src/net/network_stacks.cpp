// The hosts' stacks in the core (host/host_stack.hpp) inside the network: the glue of
// dlcp_emu/sim/hosts.py (`deliver`, `_timer`, `_flush`) for a job's endpoints that run here.
#include "net/network.hpp"

#include <stdexcept>
#include <string>
#include <utility>

namespace dlcp {

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
  const int64_t t = st.next_due();
  if (t != HostStack::NO_DUE && st.armed != t) {  // hosts.py `_arm`: an event only before the one waiting
    st.armed = t;
    const int64_t at = t > loop.now ? t : loop.now;
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
// (the driver answers, then calls stack_flush), else the flush here and now. A worker's
// collectives in the core take their messages first: the driver hears of a collective
// only when it ends.
void Network::stack_turn(uint32_t id, int64_t now, std::vector<HostEvent>& batch) {
  HostStack& st = *stacks_[id];
  if (st.collectives) st.pump_collectives(now);
  if (st.agent && st.needs_agent(now)) {  // its agent is here: no driver
    agent_turn(id, now, loop.major(), false, batch);
    return;
  }
  if (st.needs_agent(now)) {
    Delivery d{};
    d.host = stacks_[id]->host;
    d.time = now;
    batch.push_back({AGENT, id, loop.major(), d});
    agent_called_ = true;
    return;
  }
  stack_flush(id, now, loop.major());
}

// A turn of an agent in the core (HostStack::run_agent, then the flush); the driver hears of
// it once, when the agent is done (an AGENT entry: it stops the run once every agent is).
void Network::agent_turn(uint32_t id, int64_t now, int64_t major, bool starting, std::vector<HostEvent>& batch) {
  HostStack& st = *stacks_[id];
  st.run_agent(now, starting);
  stack_flush(id, now, major);
  st.completions.clear();  // the simulator's records take the receivers' deliveries only
  if (st.agent->done && !st.done_reported) {
    st.done_reported = true;
    Delivery d{};
    d.host = st.host;
    d.time = now;
    batch.push_back({AGENT, id, major, d});
    agent_called_ = true;
  }
}

bool Network::start_agent(uint32_t id, int64_t now, int64_t major) {
  HostStack& st = stack(id);
  if (!st.agent) throw std::invalid_argument("stack id " + std::to_string(id) + " has no agent in the core");
  std::vector<HostEvent> none;
  agent_turn(id, now, major, true, none);
  agent_called_ = false;  // said by the return value
  return st.agent->done;
}

void Network::carried_in_flight(std::vector<transport::Header>& out) const {
  std::vector<int64_t> uids;
  in_flight(uids);
  for (int64_t uid : uids)
    if (uid >= CARRIED_UID) out.push_back(carried_[static_cast<size_t>(uid - CARRIED_UID)].h);
}

}  // namespace dlcp
