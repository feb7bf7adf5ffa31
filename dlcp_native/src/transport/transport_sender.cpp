#include "transport/transport_sender.hpp"

#include <algorithm>
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
  credit_ = first_window_ = std::max<int64_t>(1, int64_t(cc.cwnd));
}

// ---- sans-I/O interface -------------------------------------------------------------------
void Sender::send(uint32_t iteration, uint32_t tensor_id, int64_t priority, std::shared_ptr<const Buffer> buf,
                  const ChunkPlan& plan, int64_t now, uint8_t tclass) {
  if (priority < 0 || priority > 7)
    throw std::invalid_argument("priority must be in 0..7, got " + std::to_string(priority));
  if (tclass > wire::TOP_TRAFFIC_CLASS)
    throw std::invalid_argument("tclass must be a traffic class code in 0.." +
                                std::to_string(int(wire::TOP_TRAFFIC_CLASS)) + ", got " + std::to_string(int(tclass)));
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
  m->tclass = tclass;
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
  // A message to an idle sender starts a flow: under pulls its first window goes out unasked.
  if (cc.pulls && msgs_.empty()) credit_ = std::max(credit_, first_window_);
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
  const bool pulls = cc.pulls;
  while (!ready_.empty() && (pulls ? credit_ > 0 : inflight_ < cwnd)) {
    if (gap != 0 && now < next_release_) break;
    OutboundPtr m = ready_.front().m;
    const auto [c, retx] = !m->done ? next_chunk(*m) : std::pair<int64_t, bool>{-1, false};
    if (c >= 0) {
      emit(m, uint32_t(c), retx, now, out);
      if (pulls) credit_ -= 1;
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
  if (cc.pulls && !(h.flags & FLAG_TRIMMED) && take_pull(h, payload)) return;  // a PULL: nothing else to read
  const uint64_t k = key(h.iteration, h.tensor_id);
  if (!last_ || last_key_ != k) {
    const auto it = by_key_.find(k);
    if (it == by_key_.end()) return;  // finished already: a late or duplicate answer
    last_key_ = k, last_ = it->second;
  }
  const OutboundPtr m = last_;
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
  const bool may_send = cc.pulls ? credit_ > 0 : inflight_ < std::max<int64_t>(1, int64_t(cc.cwnd));
  if (cc.pacing && !ready_.empty() && may_send &&
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
         c, m.count, uint32_t(off), now, m.tclass};
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
           m.tensor_id, uint32_t(seg), m.count, 0, now, m.tclass};
    p.control = m.probes[seg];
  }
}

void Sender::queue_probe(const OutboundPtr& m) {
  if (!m->probe_due) {
    m->probe_due = true;
    probe_queue_.push_back(m);
  }
}

}  // namespace dlcp::transport
