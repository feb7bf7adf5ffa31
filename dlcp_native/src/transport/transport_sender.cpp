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
  touched();
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

  const bool idle = msgs_.empty();
  Outbound& m = msgs_.add(key(iteration, tensor_id));
  m.iteration = iteration;
  m.tensor_id = tensor_id;
  m.priority = uint8_t(priority);
  m.tclass = tclass;
  m.count = uint32_t(count);
  m.cs = cs;
  m.total = total;
  m.buf = std::move(buf);
  m.ch.assign(size_t(count), Chunk{});
  for (size_t c = 0; c < m.ch.size(); ++c) {
    m.ch[c].mag = plan.mag_class[c];
    m.ch[c].flags = bounded_loss && plan.droppable[c] ? FLAG_DROPPABLE : 0;
  }
  m.ch.back().flags |= FLAG_LAST_CHUNK;
  m.bound = bounded_loss ? plan.bound_bytes : 0;
  if (bounded_loss) {
    try {
      fb::encode_probes(m.probes, total, cs, m.bound, plan.droppable, plan.mag_class, payload_size);
    } catch (...) {
      msgs_.remove(m, key(iteration, tensor_id));  // refused: as if never sent
      throw;
    }
  }
  m.order = order_++;
  m.start_ns = now;
  m.lane_base = int(priority) << 3;
  // A message to an idle sender starts a flow: under pulls its first window goes out unasked.
  if (cc.pulls && idle) credit_ = std::max(credit_, first_window_);
  make_ready(m);
}

void Sender::poll(int64_t now, std::vector<OutPacket>& out) {
  run_timers(now);
  if (tlp_due_) send_tlp(now, out);
  for (const OutRef r : probe_queue_) {
    if (Outbound* m = msgs_.live(r)) {
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
    Outbound* m = msgs_.live(ready_.front().m);  // null: finished
    const auto [c, retx] = m ? next_chunk(*m) : std::pair<int64_t, bool>{-1, false};
    if (c >= 0) {
      emit(*m, uint32_t(c), retx, now, out);
      if (pulls) credit_ -= 1;
      if (gap != 0) next_release_ = std::max(next_release_, now) + int64_t(gap + 0.5);
    }
    if (bounded_loss && m && m->next_new >= m->count && !m->probe_rounds)
      probe_packets(*m, now, out);  // right behind the last new chunk
    if (c < 0) {
      std::pop_heap(ready_.begin(), ready_.end(), ReadyAfter{});
      ready_.pop_back();
      if (m) m->in_ready = false;
    }
  }
}

void Sender::receive(const Header& h, const InPayload& payload, int64_t now, bool /*ce*/) {
  touched();
  if (h.job != job || h.src_rank != dst_rank || h.dst_rank != src_rank) {
    malformed += 1;
    return;
  }
  if (cc.pulls && !(h.flags & FLAG_TRIMMED) && take_pull(h, payload)) return;  // a PULL: nothing else to read
  const uint64_t k = key(h.iteration, h.tensor_id);
  if (last_ == Outbounds::NONE || last_key_ != k) {
    const Outbound* found = msgs_.find(k);
    if (!found) return;  // finished already: a late or duplicate answer
    last_key_ = k;
    last_ = found->slot;
  }
  Outbound& m = msgs_.at(last_);
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

}  // namespace dlcp::transport
