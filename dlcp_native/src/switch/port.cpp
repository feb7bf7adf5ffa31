#include "switch/port.hpp"

#include <stdexcept>
#include <string>

namespace dlcp {

namespace {

const PortConfig& checked(int number, const PortConfig& cfg) {
  const std::string port = "port index " + std::to_string(number) + ": ";
  if (!(cfg.rate_bps > 0)) throw std::invalid_argument(port + "rate_bps must be a positive number");
  if (cfg.delay_ns < 0) throw std::invalid_argument(port + "delay_ns must be an integer >= 0");
  if (cfg.buffer_bytes < 1514)
    throw std::invalid_argument(port + "buffer_bytes must be an integer >= 1514");
  return cfg;
}

}  // namespace

EgressPort::EgressPort(int number_, const PortConfig& cfg, std::unique_ptr<QueueManager> qm_,
                       std::unique_ptr<Scheduler> scheduler_, int n_classes, PacketPool& pool_,
                       DropLog& drop_log_)
    : number(number_),
      rate_bps(checked(number_, cfg).rate_bps),
      delay_ns(cfg.delay_ns),
      buffer_bytes(cfg.buffer_bytes),
      buffer_packets(cfg.buffer_packets ? cfg.buffer_packets : cfg.buffer_bytes / 64),
      overhead(cfg.overhead_bytes),
      ns_per_byte(8e9 / cfg.rate_bps),
      pool(pool_),
      scheduler(std::move(scheduler_)),
      n_queues(scheduler->queues_for(n_classes)),
      queues(n_queues),
      qbytes(n_queues),
      qpkts(n_queues),
      counters(n_queues),
      drop_log(drop_log_),
      qm(std::move(qm_)) {
  for (int c = 0; c < 8; ++c) qmap[c] = c < n_queues - 1 ? c : n_queues - 1;
  if (qm->evicts_droppable) droppable.resize(8);
  qm->attach(*this);
  idle_limit = qm->idle_limit();
}

// -- used by queue managers ---------------------------------------------------------------
void EgressPort::push(Slot slot) {
  const Packet& pkt = pool[slot];
  const int q = qmap[pkt.cls];
  if (pkt.arrival > last_arrival) last_arrival = pkt.arrival;
  queues[q].push_back(pool.ref(slot));
  pool.set_queued(slot, true);
  const int64_t size = pkt.size;
  qbytes[q] += size;
  qpkts[q] += 1;
  mask |= 1u << q;
  bytes += size;
  packets += 1;
  if (!droppable.empty() && qm->may_drop(pkt)) droppable[pkt.mag].push_back(pool.ref(slot));
  PortCounters& c = counters;
  c.enqueued += 1;
  c.enqueued_bytes += size;
  c.q_enqueued[q] += 1;
  if (qbytes[q] > c.q_max_bytes[q]) c.q_max_bytes[q] = qbytes[q];
  if (bytes > c.max_bytes) c.max_bytes = bytes;
}

void EgressPort::drop(Slot slot, Reason reason, int64_t now) {
  const Packet& pkt = pool[slot];
  PortCounters& c = counters;
  c.drops[reason] += 1;
  c.drop_bytes += pkt.size;
  auto& row = c.job(pkt.job);
  row[2] += 1;
  row[3] += pkt.size;
  c.q_dropped[qmap[pkt.cls]] += 1;
  if (drop_log.on) drop_log.records.push_back({now, number, reason, slot, pkt});
  pool.release(slot);
}

void EgressPort::evict(Slot slot, Reason reason, int64_t now) {
  const int q = qmap[pool[slot].cls];
  pool.set_queued(slot, false);
  unlink(q, pool[slot].size);
  drop(slot, reason, now);
  Ring<Ref>& dq = queues[q];
  if (static_cast<int64_t>(dq.size()) > 2 * qpkts[q] + 64)
    dq.keep_if([this](Ref r) { return pool.live(r); });
}

Slot EgressPort::pop_tail(int q) {
  Ring<Ref>& dq = queues[q];
  Ref r = dq.pop_back();
  while (!pool.live(r)) r = dq.pop_back();
  pool.set_queued(r.slot, false);
  unlink(q, pool[r.slot].size);
  return r.slot;
}

// A queued droppable packet of the lowest magnitude class under `below_mag`, newest first
// within the class (it has waited least), or NO_SLOT.
Slot EgressPort::lowest_droppable(int below_mag) {
  for (int mag = 0; mag < below_mag; ++mag) {
    Ring<Ref>& idx = droppable[mag];
    while (!idx.empty()) {
      const Ref r = idx.pop_back();
      if (pool.live(r)) return r.slot;
    }
  }
  return NO_SLOT;
}

// (mask of queues whose head arrived by t, earliest head arrival of the others).
std::pair<uint32_t, std::optional<int64_t>> EgressPort::eligible(int64_t t) {
  uint32_t result = 0;
  std::optional<int64_t> first;
  uint32_t m = mask;
  while (m) {
    const uint32_t low = m & (0u - m);
    const int q = __builtin_ctz(m);
    m ^= low;
    const int64_t arrival = pool[head(q)].arrival;
    if (arrival <= t)
      result |= low;
    else if (!first || arrival < *first)
      first = arrival;
  }
  return {result, first};
}

Slot EgressPort::head(int q) {
  Ring<Ref>& dq = queues[q];
  while (!pool.live(dq.front())) dq.pop_front();
  return dq.front().slot;
}

void EgressPort::unlink(int q, int64_t size) {
  qbytes[q] -= size;
  qpkts[q] -= 1;
  if (!qpkts[q]) mask &= ~(1u << q);
  bytes -= size;
  packets -= 1;
}

// -- the serialiser -----------------------------------------------------------------------
// The fast path of an idle port (nothing queued, the link free by `now`) for a packet no
// bigger than `idle_limit`, which the queue manager would admit unchanged: it starts
// serialising at once, counted exactly as push() then start() would count it.
void EgressPort::send_idle(Slot slot, int64_t now) {
  Packet& pkt = pool[slot];
  const int64_t size = pkt.size;
  const int q = qmap[pkt.cls];
  last_arrival = now;
  PortCounters& c = counters;
  c.enqueued += 1;
  c.enqueued_bytes += size;
  c.q_enqueued[q] += 1;
  c.q_sent[q] += 1;
  if (size > c.q_max_bytes[q]) c.q_max_bytes[q] = size;
  if (size > c.max_bytes) c.max_bytes = size;
  const int64_t busy = now + serialisation(size);
  busy_until = busy;
  pkt.depart = busy + delay_ns;
  inflight.push_back(slot);
}

// Start serialising every packet whose turn has come by `now`.
void EgressPort::start(int64_t now) {
  int64_t busy = busy_until;
  const bool stateless = scheduler->stateless;
  PortCounters& c = counters;
  while (mask && busy <= now) {
    int q;
    if (packets == 1 && stateless) {
      // One packet queued (the usual case below saturation): no choice to make.
      q = 31 - __builtin_clz(mask);
    } else if (last_arrival <= busy) {
      q = scheduler->pick(*this, mask);
    } else {
      // Causality: at `busy` the port may only choose among packets that had arrived by
      // then, or it would idle for a later, higher-priority one.
      const auto [ready, first] = eligible(busy);
      if (!ready) {
        busy = *first;
        continue;
      }
      q = scheduler->pick(*this, ready);
    }
    Ring<Ref>& dq = queues[q];
    Ref r = dq.pop_front();
    while (!pool.live(r)) r = dq.pop_front();
    const Slot slot = r.slot;
    pool.set_queued(slot, false);
    Packet& pkt = pool[slot];
    const int64_t size = pkt.size;
    unlink(q, size);
    if (!droppable.empty() && qm->may_drop(pkt)) {
      Ring<Ref>& idx = droppable[pkt.mag];
      while (!idx.empty() && !pool.live(idx.front())) idx.pop_front();
    }
    if (pkt.arrival > busy) busy = pkt.arrival;
    busy += serialisation(size);
    pkt.depart = busy + delay_ns;
    inflight.push_back(slot);
    c.q_sent[q] += 1;
  }
  busy_until = busy;
}

// Append a Departure for every packet whose departure time has come; its slot is freed.
void EgressPort::release(int64_t now, std::vector<Departure>& out) {
  PortCounters& c = counters;
  while (!inflight.empty() && pool[inflight.front()].depart <= now) {
    const Slot slot = inflight.pop_front();
    const Packet& pkt = pool[slot];
    c.tx_packets += 1;
    c.tx_bytes += pkt.size;
    auto& row = c.job(pkt.job);
    row[0] += 1;
    row[1] += pkt.size;
    out.push_back({number, slot, pkt});
    pool.release(slot);
  }
}

void EgressPort::hand_off(Ring<Packet>& wire) {
  PortCounters& c = counters;
  while (!inflight.empty()) {
    const Slot slot = inflight.pop_front();
    const Packet& pkt = pool[slot];
    c.tx_packets += 1;
    c.tx_bytes += pkt.size;
    auto& row = c.job(pkt.job);
    row[0] += 1;
    row[1] += pkt.size;
    wire.push_back(pkt);
    pool.release(slot);
  }
}

// The earliest time this port has something to do, or none.
std::optional<int64_t> EgressPort::next_event() const {
  std::optional<int64_t> t;
  if (!inflight.empty()) t = pool[inflight.front()].depart;
  if (mask && (!t || busy_until < *t)) t = busy_until;
  return t;
}

}  // namespace dlcp
