#include "transport/transport_outbound.hpp"

namespace dlcp::transport {

namespace {

// Empty, its block kept unless grown past `keep` elements.
template <class V>
void clear_keeping(V& v, size_t keep) {
  if (v.capacity() > keep)
    V().swap(v);
  else
    v.clear();
}

}  // namespace

Outbound& Outbounds::add(uint64_t key) {
  uint32_t s;
  if (!free_.empty()) {
    s = free_.back();
    free_.pop_back();
  } else {
    s = uint32_t(slab_.size());
    slab_.emplace_back().slot = s;
  }
  Outbound& m = slab_[s];
  m.next_new = m.cum = m.acked = 0;
  m.inflight = m.abandoned = 0;
  m.probe_rounds = 0;
  m.probe_ts = -1;
  m.probe_due = m.in_ready = false;
  m.packets = m.retransmits = 0;
  m.prev = tail_;
  m.next = NONE;
  (tail_ == NONE ? head_ : slab_[tail_].next) = s;
  tail_ = s;
  index_.set(key, s);
  return m;
}

void Outbounds::remove(Outbound& m, uint64_t key) {
  index_.erase(key);
  (m.prev == NONE ? head_ : slab_[m.prev].next) = m.next;
  (m.next == NONE ? tail_ : slab_[m.next].prev) = m.prev;
  m.gen += 1;
  m.buf.reset();  // the tensor's bytes go with the message, as before
  clear_keeping(m.ch, REUSE_CHUNKS);
  if (m.retx.capacity() > REUSE_CHUNKS)
    m.retx.release();
  else
    m.retx.clear();
  if (m.probes.size() > 16) m.probes.clear();  // else reused by the next bounded-loss message's probes
  free_.push_back(m.slot);
}

}  // namespace dlcp::transport
