#include "transport/transport_sender.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include "transport/transport_feedback.hpp"

namespace dlcp::transport {

namespace fb = feedback;

namespace {

uint16_t checked_u16(int64_t v, const char* name) {
  if (v < 0 || v > 0xFFFF)
    throw std::invalid_argument(std::string(name) + " must be in 0..65535, got " + std::to_string(v));
  return uint16_t(v);
}

// A u64 echoed time as the int64 clock: our endpoints echo what they sent (never past int64).
int64_t as_time(uint64_t echo) {
  return echo > uint64_t(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max()
                                                                : int64_t(echo);
}

}  // namespace

Sender::Sender(bool bounded, int64_t src, int64_t dst, int64_t job_, int64_t mtu, CongestionControl cc_,
               RttEstimator rtt_, double reorder_fraction_)
    : bounded_loss(bounded),
      src_rank(checked_u16(src, "src_rank")),
      dst_rank(checked_u16(dst, "dst_rank")),
      job(checked_u16(job_, "job")),
      payload_size(transport_payload_size(mtu)),
      reorder_fraction(reorder_fraction_),
      cc(cc_),
      rtt(rtt_),
      lanes_(64) {
  for (int i = 0; i < 64; ++i) lanes_[size_t(i)].idx = i;
}

// ---- sans-I/O interface -------------------------------------------------------------------
void Sender::send(uint32_t iteration, uint32_t tensor_id, int64_t priority, std::shared_ptr<const Buffer> buf,
                  const ChunkPlan& plan, int64_t now) {
  if (priority < 0 || priority > 7)
    throw std::invalid_argument("priority must be in 0..7, got " + std::to_string(priority));
  if (sending(iteration, tensor_id))
    throw std::invalid_argument("tensor (" + std::to_string(iteration) + ", " + std::to_string(tensor_id) +
                                ") (iteration, tensor_id) is already being sent");
  const int64_t total = int64_t(buf->size), cs = payload_size;
  const int64_t count = chunks(total);
  if (!(0 < total && total < (int64_t{1} << 32)) || count >= MAX_CHUNKS)
    throw std::invalid_argument("tensor must hold 1 byte to 4 GiB, got " + std::to_string(total) + " bytes");
  if (int64_t(plan.mag_class.size()) != count || int64_t(plan.droppable.size()) != count)
    throw std::invalid_argument("the plan needs one class and one droppable flag per chunk (" +
                                std::to_string(count) + ")");
  for (uint8_t c : plan.mag_class)
    if (c > 7) throw std::invalid_argument("mag_class values must be in 0..7");

  auto m = std::make_shared<Outbound>();
  m->iteration = iteration;
  m->tensor_id = tensor_id;
  m->priority = uint8_t(priority);
  m->count = uint32_t(count);
  m->cs = cs;
  m->total = total;
  m->buf = std::move(buf);
  m->mag = plan.mag_class;
  std::vector<uint8_t> drop(size_t(count), 0);
  if (bounded_loss)
    for (size_t c = 0; c < drop.size(); ++c) drop[c] = plan.droppable[c] ? 1 : 0;
  m->flags = drop;  // FLAG_DROPPABLE is 1
  m->flags.back() |= FLAG_LAST_CHUNK;
  m->state.assign(size_t(count), UNSENT);
  m->xmit_ts.assign(size_t(count), 0);
  m->tx_seq.assign(size_t(count), -1);
  m->bound = bounded_loss ? plan.bound_bytes : 0;
  if (bounded_loss) m->probes = fb::encode_probes(total, cs, m->bound, drop, m->mag, payload_size);
  m->order = order_++;
  m->start_ns = now;
  m->lane_base = int(priority) << 3;
  msgs_.emplace(m->order, m);
  by_key_.emplace(key(iteration, tensor_id), m);
  make_ready(m);
}

void Sender::poll(int64_t now, std::vector<OutPacket>& out) {
  run_timers(now);
  if (tlp_due_) send_tlp(now, out);
  for (const OutboundPtr& m : probe_queue_) {
    if (!m->done) {
      m->probe_due = false;
      probe_packets(*m, now, out);
    }
  }
  probe_queue_.clear();
  const int64_t cwnd = std::max<int64_t>(1, int64_t(cc.cwnd));
  const double gap = cc.pacing_gap_ns(rtt.has_srtt ? rtt.srtt_ns : 0.0);
  while (!ready_.empty() && inflight_ < cwnd) {
    if (gap != 0 && now < next_release_) break;
    OutboundPtr m = ready_.front().m;
    const auto [c, retx] = !m->done ? next_chunk(*m) : std::pair<int64_t, bool>{-1, false};
    if (c >= 0) {
      emit(m, uint32_t(c), retx, now, out);
      if (gap != 0) next_release_ = std::max(next_release_, now) + int64_t(gap + 0.5);
    }
    if (bounded_loss && m->next_new >= m->count && !m->probe_rounds && !m->done)
      probe_packets(*m, now, out);  // right behind the last new chunk
    if (c < 0) {
      std::pop_heap(ready_.begin(), ready_.end(), ReadyAfter{});
      ready_.pop_back();
      m->in_ready = false;
    }
  }
}

void Sender::receive(const Header& h, const InPayload& payload, int64_t now, bool /*ce*/) {
  if (h.job != job || h.src_rank != dst_rank || h.dst_rank != src_rank) {
    malformed += 1;
    return;
  }
  const auto it = by_key_.find(key(h.iteration, h.tensor_id));
  if (it == by_key_.end()) return;  // finished already: a late or duplicate answer
  const OutboundPtr m = it->second;
  if (h.type == ACK)
    on_ack(m, h, payload, now);
  else if (h.type == BITMAP)
    on_bitmap(m, h, payload, now);
}

std::optional<int64_t> Sender::next_timeout() {
  std::optional<int64_t> t = rto_deadline_;
  while (!timers_.empty() && lanes_[size_t(timers_.front().second)].deadline != timers_.front().first) {
    std::pop_heap(timers_.begin(), timers_.end(), std::greater<Timer>{});
    timers_.pop_back();
  }
  if (!timers_.empty() && (!t || timers_.front().first < *t)) t = timers_.front().first;
  if (pto_deadline_ && (!t || *pto_deadline_ < *t)) t = pto_deadline_;
  if (cc.pacing && !ready_.empty() && inflight_ < std::max<int64_t>(1, int64_t(cc.cwnd)) &&
      (!t || next_release_ < *t))
    t = next_release_;
  return t;
}

// ---- sending -------------------------------------------------------------------------------
void Sender::make_ready(const OutboundPtr& m) {
  if (!m->in_ready && !m->done) {
    m->in_ready = true;
    ready_.push_back({m->priority, m->order, m});
    std::push_heap(ready_.begin(), ready_.end(), ReadyAfter{});
  }
}

std::pair<int64_t, bool> Sender::next_chunk(Outbound& m) {
  while (!m.retx.empty()) {
    const uint32_t c = m.retx.front();
    m.retx.pop_front();
    if (m.state[c] == LOST) return {c, true};
  }
  uint32_t c = m.next_new;
  while (c < m.count && m.state[c] != UNSENT) ++c;  // acknowledged before sent: a stale duplicate
  if (c < m.count) {
    m.next_new = c + 1;
    return {c, false};
  }
  m.next_new = c;
  return {-1, false};
}

void Sender::emit(const OutboundPtr& mp, uint32_t c, bool retx, int64_t now, std::vector<OutPacket>& out) {
  Outbound& m = *mp;
  const int64_t seq = cc.on_send();
  m.state[c] = IN_FLIGHT;
  m.inflight += 1;
  inflight_ += 1;
  m.xmit_ts[c] = now;
  m.tx_seq[c] = seq;
  const uint8_t mag = m.mag[c];
  lanes_[size_t(m.lane_base | mag)].q.push_back({seq, now, mp, c});
  if (!rto_deadline_) rto_deadline_ = now + rtt.rto_ns;
  arm_pto(now);
  const int64_t off = int64_t(c) * m.cs;
  uint8_t fl = m.flags[c];
  m.packets += 1;
  if (retx) {
    fl |= FLAG_RETRANSMISSION;
    m.retransmits += 1;
  }
  OutPacket& p = out.emplace_back();
  p.h = {DATA, fl, m.priority, mag, job, src_rank, dst_rank, uint16_t(m.size(c)), m.iteration, m.tensor_id,
         c, m.count, uint32_t(off), now};
  p.buf = m.buf;
  p.off = uint32_t(off);
}

void Sender::probe_packets(Outbound& m, int64_t now, std::vector<OutPacket>& out) {
  // The probe trails the tensor's data: its priority, the lowest magnitude class, so a
  // priority switch serves it after the chunks sent before it.
  const uint8_t fl = m.probe_rounds ? FLAG_RETRANSMISSION : 0;
  m.probe_rounds += 1;
  m.probe_ts = now;
  for (size_t seg = 0; seg < m.probes.size(); ++seg) {
    OutPacket& p = out.emplace_back();
    p.h = {PROBE, fl, m.priority, 0, job, src_rank, dst_rank, uint16_t(m.probes[seg].size()), m.iteration,
           m.tensor_id, uint32_t(seg), m.count, 0, now};
    p.control = m.probes[seg];
  }
}

void Sender::queue_probe(const OutboundPtr& m) {
  if (!m->probe_due) {
    m->probe_due = true;
    probe_queue_.push_back(m);
  }
}

// ---- feedback ------------------------------------------------------------------------------
void Sender::on_ack(const OutboundPtr& mp, const Header& h, const InPayload& p, int64_t now) {
  Outbound& m = *mp;
  const uint32_t c = h.chunk_index;
  if (c >= m.count) {
    malformed += 1;
    return;
  }
  if ((h.flags & FLAG_TRIMMED) || p.size < fb::FEEDBACK_SIZE) {
    const int64_t newly = deliver(m, c);  // a trimmed ACK still names the chunk that arrived
    progress(mp, newly, -1, false, now);
    return;
  }
  const fb::Ack a = fb::decode_ack(p.data, p.size);
  const int64_t echo = as_time(a.echo);
  if (echo <= now) rtt.sample(now - echo);
  const bool probed = tlp_ && tlp_->m == mp && tlp_->c == c;
  if (probed && m.tx_seq[c] == tlp_->seq && echo == m.xmit_ts[c] && m.state[c] == IN_FLIGHT) {
    // The tail-loss probe arrived and the packet it repeated had not: that was a loss.
    losses += 1;
    cc.on_loss(tlp_->probed_seq);
  }
  if (a.flags & fb::FB_COMPLETE) {
    finish(mp, now);
    return;
  }
  int64_t seq;
  if (m.xmit_ts[c] == echo) {
    seq = m.tx_seq[c];
  } else {
    seq = -1;
    if (echo < m.xmit_ts[c] && m.state[c] != ACKED && !probed)
      on_spurious();  // an earlier copy arrived after all: widen the reordering window
  }
  int64_t newly = deliver(m, c);
  for (size_t i = 0; i < a.n_extra; ++i)
    if (a.extra[i] < m.count) newly += deliver(m, a.extra[i]);
  if (a.cum > m.cum) newly += advance_cum(m, std::min(a.cum, m.count));
  Lane& lane = lanes_[size_t(m.lane_base | m.mag[c])];
  if (echo > lane.rack_ts || seq > lane.rack_seq) {
    lane.rack_ts = std::max(lane.rack_ts, echo);
    lane.rack_seq = std::max(lane.rack_seq, seq);
    lane.rack_rtt = now - echo;
  }
  progress(mp, newly, seq, a.flags & fb::FB_CE, now);
  detect(lane, now);
}

void Sender::on_bitmap(const OutboundPtr& mp, const Header& h, const InPayload& p, int64_t now) {
  Outbound& m = *mp;
  if ((h.flags & FLAG_TRIMMED) || p.size < fb::BITMAP_HEAD_SIZE) return;
  const fb::Bitmap b = fb::decode_bitmap(p.data, p.size);
  const int64_t echo = as_time(b.echo);
  if (echo <= now) rtt.sample(now - echo);
  if (b.flags & fb::FB_COMPLETE) {
    finish(mp, now);
    return;
  }
  const uint64_t count = m.count;
  int64_t newly = b.cum > m.cum ? advance_cum(m, std::min(b.cum, m.count)) : 0;
  if (b.flags & fb::FB_NACK) {
    // The transmission sent at echo was trimmed: lost for certain, no need to wait.
    const uint32_t c = b.base;
    if (c < count && m.state[c] == IN_FLIGHT && m.xmit_ts[c] == echo) lost(mp, c, m.tx_seq[c]);
  } else {
    for (uint32_t i = 0; i < b.nbits; ++i) {
      const uint64_t c = uint64_t(b.base) + i;
      if (b.bit(i) && c < count) newly += deliver(m, uint32_t(c));
    }
    // Missing at the probe's arrival although sent a reordering window before it.
    const int64_t latest = echo - reorder_window();
    for (uint32_t i = 0; i < b.nbits; ++i) {
      const uint64_t c = uint64_t(b.base) + i;
      if (!b.bit(i) && c < count && m.state[c] == IN_FLIGHT && m.xmit_ts[c] <= latest)
        lost(mp, uint32_t(c), m.tx_seq[c]);
    }
  }
  if ((b.flags & fb::FB_NEED_PROBE) && echo == m.probe_ts)
    queue_probe(mp);  // once per probe round, not once per packet of its answer
  progress(mp, newly, -1, false, now);
}

void Sender::progress(const OutboundPtr& m, int64_t newly, int64_t seq, bool ce, int64_t now) {
  cc.on_ack(seq, ce, newly);
  if (m->acked == m->count)
    finish(m, now);
  else if (newly) {
    rto_deadline_ = now + rtt.rto_ns;
    after_rto_ = false;
    arm_pto(now);
  }
}

int64_t Sender::advance_cum(Outbound& m, uint32_t cum) {
  int64_t newly = 0;
  for (uint32_t c = m.cum; c < cum; ++c) newly += deliver(m, c);
  m.cum = cum;
  return newly;
}

int64_t Sender::deliver(Outbound& m, uint32_t c) {
  const uint8_t s = m.state[c];
  if (s == ACKED) return 0;
  if (s == IN_FLIGHT) {
    m.inflight -= 1;
    inflight_ -= 1;
  } else if (s == ABANDONED) {
    m.abandoned -= m.size(c);
  }
  m.state[c] = ACKED;
  m.acked += 1;
  return 1;
}

void Sender::lost(const OutboundPtr& mp, uint32_t c, int64_t seq) {
  Outbound& m = *mp;
  m.inflight -= 1;
  inflight_ -= 1;
  losses += 1;
  if (reo_mult_ > 1) {
    reo_decay_ -= 1;
    if (!reo_decay_) {
      reo_mult_ = 1;
      reo_decay_ = 16;
    }
  }
  cc.on_loss(seq);
  if (m.flags[c] & FLAG_DROPPABLE) {
    const int64_t size = m.size(c);
    if (m.abandoned + size <= m.bound) {  // within the loss bound: let it go
      m.state[c] = ABANDONED;
      m.abandoned += size;
      return;
    }
  }
  m.state[c] = LOST;
  m.retx.push_back(c);
  make_ready(mp);
}

void Sender::finish(const OutboundPtr& mp, int64_t now) {
  const OutboundPtr keep = mp;  // the maps below may hold the last other reference
  Outbound& m = *keep;
  m.done = true;
  inflight_ -= m.inflight;
  m.inflight = 0;
  msgs_.erase(m.order);
  by_key_.erase(key(m.iteration, m.tensor_id));
  completed_.push_back({m.iteration, m.tensor_id, m.total, m.count, m.start_ns, now, m.packets, m.retransmits,
                        m.probe_rounds});
  rto_deadline_ = msgs_.empty() ? std::nullopt : std::optional<int64_t>(now + rtt.rto_ns);
  after_rto_ = false;  // a completion is progress
  arm_pto(now);
}

}  // namespace dlcp::transport
