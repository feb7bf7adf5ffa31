#include "switch/queue_managers.hpp"

#include "switch/port.hpp"

namespace dlcp {

const char* const REASON_NAMES[N_REASONS] = {
    "no_route",       "buffer_full",     "dlcp_threshold",       "dlcp_evicted",
    "pfabric_lowest", "pfabric_evicted", "trim_header_overflow",
};

namespace {

double fraction(const std::string& kind, const std::string& field, double value) {
  require(0 < value && value <= 1, kind, field, "a fraction in (0, 1]");
  return value;
}

}  // namespace

void QueueManager::attach(const EgressPort& port) {
  limit_bytes_ = port.buffer_bytes;
  limit_packets_ = port.buffer_packets;
}

int64_t QueueManager::idle_limit() const { return limit_packets_ >= 1 ? limit_bytes_ : 0; }

bool QueueManager::fits(const EgressPort& port, int64_t size) const {
  return port.bytes + size <= limit_bytes_ && port.packets < limit_packets_;
}

namespace queue_managers {

void DropTail::enqueue(EgressPort& port, Slot slot, int64_t now) {
  if (port.bytes + port.pool[slot].size <= limit_bytes_ && port.packets < limit_packets_)
    port.push(slot);
  else
    port.drop(slot, BUFFER_FULL, now);
}

Ecn::Ecn(double mark_fraction) : mark_fraction_(fraction("ecn", "mark_fraction", mark_fraction)) {}

void Ecn::attach(const EgressPort& port) {
  QueueManager::attach(port);
  mark_bytes_ = static_cast<int64_t>(mark_fraction_ * port.buffer_bytes);
}

void Ecn::enqueue(EgressPort& port, Slot slot, int64_t now) {
  Packet& pkt = port.pool[slot];
  if (!fits(port, pkt.size)) {
    port.drop(slot, BUFFER_FULL, now);
    return;
  }
  if (port.bytes > mark_bytes_ && pkt.ect && !pkt.ce) {
    pkt.ce = true;
    pkt.rewrite |= REWRITE_CE;
    port.counters.marked += 1;
  }
  port.push(slot);
}

Dlcp::Dlcp(double threshold, const std::vector<double>& loss_tolerant)
    : threshold_(fraction("dlcp", "threshold", threshold)) {
  evicts_droppable = true;
  tolerant = tolerant_mask("dlcp", loss_tolerant);
}

void Dlcp::attach(const EgressPort& port) {
  QueueManager::attach(port);
  const double b = static_cast<double>(port.buffer_bytes), t = threshold_;
  for (int m = 0; m < 8; ++m) mag_limit_[m] = static_cast<int64_t>(b * (t + (1 - t) * m / 8));
}

int64_t Dlcp::idle_limit() const {
  const int64_t base = QueueManager::idle_limit();
  return base < mag_limit_[0] ? base : mag_limit_[0];
}

void Dlcp::enqueue(EgressPort& port, Slot slot, int64_t now) {
  const Packet& pkt = port.pool[slot];
  const int64_t size = pkt.size;
  int below;
  const bool droppable = may_drop(pkt);
  if (droppable) {
    if (port.bytes + size > mag_limit_[pkt.mag]) {
      port.drop(slot, DLCP_THRESHOLD, now);
      return;
    }
    below = pkt.mag;
  } else {
    below = 8;
  }
  while (!fits(port, size)) {
    const Slot victim = port.lowest_droppable(below);
    if (victim == NO_SLOT) {
      port.drop(slot, droppable ? DLCP_THRESHOLD : BUFFER_FULL, now);
      return;
    }
    port.evict(victim, DLCP_EVICTED, now);
  }
  port.push(slot);
}

void PFabric::enqueue(EgressPort& port, Slot slot, int64_t now) {
  const int64_t size = port.pool[slot].size;
  const int q = port.qmap[port.pool[slot].cls];
  while (!fits(port, size)) {
    const int worst = port.mask ? 31 - __builtin_clz(port.mask) : -1;  // mask.bit_length() - 1
    if (worst <= q) {
      port.drop(slot, PFABRIC_LOWEST, now);
      return;
    }
    const Slot victim = port.pop_tail(worst);
    port.drop(victim, PFABRIC_EVICTED, now);
  }
  port.push(slot);
}

Trim::Trim(int64_t trim_packets) : trim_packets_(trim_packets) {
  require(trim_packets >= 1, "trim", "trim_packets", "an integer >= 1");
}

int64_t Trim::idle_limit() const { return 0; }  // a bare header changes class here: always ask

void Trim::enqueue(EgressPort& port, Slot slot, int64_t now) {
  Packet& pkt = port.pool[slot];
  bool trimmed = false;
  if (is_header(pkt)) {
    // A bare header (trimmed upstream) or a control packet: never cut, top class.
    pkt.cls = 0;
  } else {
    const int64_t data_packets = port.n_queues > 1 ? port.packets - port.qpkts[0] : port.packets;
    if (data_packets < trim_packets_ && fits(port, pkt.size)) {
      port.push(slot);
      return;
    }
    if (!pkt.dlcp) {
      port.drop(slot, BUFFER_FULL, now);
      return;
    }
    pkt.size = pkt.header_size;
    pkt.rewrite |= REWRITE_TRIM;
    pkt.cls = 0;
    trimmed = true;
  }
  if (fits(port, pkt.size)) {
    port.counters.trimmed += trimmed;
    port.push(slot);
  } else {
    port.drop(slot, TRIM_OVERFLOW, now);
  }
}

}  // namespace queue_managers

std::unique_ptr<QueueManager> make_queue_manager(const StageSpec& spec) {
  const Params& p = spec.params;
  if (spec.name == "droptail") {
    p.expect("queue manager 'droptail'", {});
    return std::make_unique<queue_managers::DropTail>();
  }
  if (spec.name == "ecn") {
    p.expect("queue manager 'ecn'", {"mark_fraction"});
    return std::make_unique<queue_managers::Ecn>(p.number("mark_fraction"));
  }
  if (spec.name == "dlcp") {
    p.expect("queue manager 'dlcp'", {"threshold", "loss_tolerant"});
    return std::make_unique<queue_managers::Dlcp>(p.number("threshold"), p.list("loss_tolerant"));
  }
  if (spec.name == "pfabric") {
    p.expect("queue manager 'pfabric'", {});
    return std::make_unique<queue_managers::PFabric>();
  }
  if (spec.name == "trim") {
    p.expect("queue manager 'trim'", {"trim_packets"});
    return std::make_unique<queue_managers::Trim>(p.integer("trim_packets"));
  }
  throw SpecError("queue manager '" + spec.name + "' has no native implementation");
}

std::vector<std::string> queue_manager_names() {
  return {"droptail", "ecn", "dlcp", "pfabric", "trim"};
}

}  // namespace dlcp
