#include "transport/transport_receiver.hpp"

#include <cstring>
#include <stdexcept>
#include <string>

#include "transport/transport_feedback.hpp"
#include "transport/transport_message.hpp"

namespace dlcp::transport {

namespace fb = feedback;

namespace {

constexpr size_t SPARE_STATES = 8;  // completed messages' state kept for reuse, at most

// Chunk size from any one packet: offset = chunk_index * chunk_size.
int64_t chunk_size_of(const Header& h) {
  if (h.chunk_index == 0) return h.payload_len;
  return int64_t(h.offset) / int64_t(h.chunk_index);
}

}  // namespace

Receiver::Receiver(bool bounded, int64_t rank_, int64_t mtu, int64_t remember_, bool store_, int64_t pull_gap_ns)
    : bounded_loss(bounded),
      store(store_),
      rank(uint16_t(rank_)),
      payload_size(transport_payload_size(mtu)),
      remember(remember_) {
  if (rank_ < 0 || rank_ > 0xFFFF) throw std::invalid_argument("rank must be in 0..65535, got " + std::to_string(rank_));
  if (remember_ < 0) throw std::invalid_argument("remember must be >= 0, got " + std::to_string(remember_));
  if (pull_gap_ns < 0) throw std::invalid_argument("pull_gap_ns must be >= 0, got " + std::to_string(pull_gap_ns));
  if (pull_gap_ns > 0) pacer_ = std::make_unique<PullPacer>(pull_gap_ns);
}

void Receiver::receive(const Header& h, const InPayload& payload, int64_t now, bool ce) {
  if (h.dst_rank != rank)
    malformed += 1;
  else if (h.type == DATA)
    on_data(h, payload, now, ce);
  else if (h.type == PROBE && bounded_loss)
    on_probe(h, payload, now);
}

// ---- data ------------------------------------------------------------------------------------
Inbound* Receiver::state(const Header& h, int64_t now, int64_t cs, bool& found) {
  const InKey key{h.job, h.src_rank, h.iteration, h.tensor_id};
  found = true;
  if (last_.second && last_.first == key) return last_.second;
  const uint32_t at = msgs_.find(key);
  if (at == InboundTable::DONE) return nullptr;
  if (at != InboundTable::ABSENT) return (last_ = {key, pool_[at].get()}).second;
  const int64_t count = h.chunk_count;
  if (cs < 0) cs = chunk_size_of(h);
  if (count <= 0 || cs <= 0 || cs % 4 || cs > MAX_PAYLOAD) {
    malformed += 1;
    found = false;
    return nullptr;
  }
  uint32_t i;
  if (free_.empty()) {
    i = uint32_t(pool_.size());
    pool_.push_back(nullptr);
  } else {
    i = free_.back();
    free_.pop_back();
  }
  std::unique_ptr<Inbound>& st = pool_[i];
  if (st) {  // a completed message's state, as new
    st->reset();
    spares_ -= 1;
  } else {
    st = std::make_unique<Inbound>();
  }
  st->live = true;
  st->key = key;
  st->count = uint32_t(count);
  st->cs = cs;
  if (store) st->buf = ZeroBuffer(size_t(count * cs));
  st->got.assign(size_t(count), 0);
  st->first_ns = now;
  msgs_.set(key, i);
  last_ = {key, st.get()};
  return st.get();
}

void Receiver::on_data(const Header& h, const InPayload& payload, int64_t now, bool ce) {
  bool found;
  Inbound* st = state(h, now, -1, found);
  if (!found) return;
  const uint32_t c = h.chunk_index;
  if (st == nullptr) {  // completed earlier: tell the sender again
    ack(h, now, 0, fb::FB_COMPLETE, nullptr, 0);
    return;
  }
  const int64_t n = h.payload_len, cs = st->cs;
  const int64_t last = int64_t(st->count) - 1;
  if (h.chunk_count != st->count || c > last || int64_t(h.offset) != c * cs ||
      (c < last ? n != cs : !(0 < n && n <= cs))) {
    malformed += 1;
    return;
  }
  st->packets += 1;
  if (pacer_) pacer_->request({h.job, h.src_rank}, now, {h.iteration, h.tensor_id, c, st->count, h.tclass});
  if (h.flags & FLAG_TRIMMED) {
    st->trimmed += 1;
    Inbound::learn(st->classes, st->count, c, h.mag_class);
    if (c == last) st->total = c * cs + n;
    if (!st->got[c]) {
      feedback(h, now, fb::encode_nack(uint64_t(h.send_ts_ns), st->cum, c), BITMAP);
      return;
    }
  } else if (!st->got[c]) {
    if (store && (payload.absent ? 0 : int64_t(payload.size)) != n) {
      malformed += 1;
      return;
    }
    const int64_t off = c * cs;
    if (store && n) std::memcpy(st->buf.data() + off, payload.data, size_t(n));
    st->got[c] = 1;
    st->received += 1;
    st->received_bytes += n;
    if (h.flags & FLAG_DROPPABLE) st->received_droppable += 1;
    if (c == last) st->total = off + n;
    if (c == st->cum) {
      uint32_t cum = c + 1;
      while (cum < st->count && st->got[cum]) ++cum;
      st->cum = cum;
    }
  } else {
    st->dups += 1;
  }
  uint8_t fl = ce ? fb::FB_CE : 0;
  uint32_t extra[fb::ACK_EXTRA];
  const size_t n_extra = st->n_recent;
  bool seen = false;
  for (size_t i = 0; i < n_extra; ++i) {
    extra[i] = st->recent[i];
    seen |= extra[i] == c;
  }
  if (!seen) {  // to the front, the oldest falling off past ACK_EXTRA
    const size_t kept = n_extra < fb::ACK_EXTRA ? n_extra : fb::ACK_EXTRA - 1;
    for (size_t i = kept; i > 0; --i) st->recent[i] = st->recent[i - 1];
    st->recent[0] = c;
    st->n_recent = uint8_t(kept + 1);
  }
  const uint32_t cum = st->cum;
  if (complete_ready(*st)) {
    fl |= fb::FB_COMPLETE;
    complete(*st, now);  // st is gone after this
  }
  ack(h, now, cum, fl, extra, n_extra);
}

bool Receiver::complete_ready(const Inbound& st) const {
  if (st.received == st.count) return true;
  return bounded_loss && st.nseg && int64_t(st.segs.size()) == st.nseg &&
         st.received - st.received_droppable == st.count - st.n_droppable &&
         *st.total - st.received_bytes <= st.bound;
}

void Receiver::complete(Inbound& st, int64_t now) {
  const int64_t total = *st.total, cs = st.cs;
  Delivery d;
  d.job = st.key.job;
  d.src_rank = st.key.src_rank;
  d.dst_rank = rank;
  d.iteration = st.key.iteration;
  d.tensor_id = st.key.tensor_id;
  d.total = total;
  d.first_ns = st.first_ns;
  d.done_ns = now;
  d.lost_bytes = 0;
  auto add = [](std::vector<std::pair<int, int64_t>>& by, int cls, int64_t v) {
    for (auto& [k, sum] : by)
      if (k == cls) {
        sum += v;
        return;
      }
    by.emplace_back(cls, v);
  };
  for (uint32_t c = 0; c < st.count; ++c) {
    if (st.got[c]) continue;
    const int64_t start = c * cs, stop = std::min<int64_t>((c + 1) * cs, total);
    d.lost_chunks.push_back(c);
    d.lost_bytes += stop - start;
    int cls = Inbound::CLASS_UNKNOWN;
    if (!st.drop_class.empty() && st.drop_class[c] != Inbound::CLASS_UNKNOWN)
      cls = st.drop_class[c];
    else if (!st.classes.empty())
      cls = st.classes[c];
    add(d.lost_bytes_by_class, cls, stop - start);
    add(d.lost_chunks_by_class, cls, 1);
    if (!d.lost_ranges.empty() && d.lost_ranges.back().second == start)
      d.lost_ranges.back().second = stop;
    else
      d.lost_ranges.emplace_back(start, stop);
  }
  // The buffer started zeroed and missing chunks were never written: zero-filled.
  d.data = std::move(st.buf);
  d.bound_bytes = bounded_loss ? st.bound : 0;
  d.packets = st.packets;
  d.duplicates = st.dups;
  d.trimmed = st.trimmed;
  delivered_.push_back(std::move(d));
  const InKey key = st.key;
  if (last_.second == &st) last_.second = nullptr;
  const uint32_t i = msgs_.find(key);
  st.live = false;
  if (spares_ < SPARE_STATES)
    spares_ += 1;
  else
    pool_[i].reset();  // st is gone
  free_.push_back(i);
  msgs_.set(key, InboundTable::DONE);
  done_order_.push_back(key);
  if (int64_t(done_order_.size()) > remember) {
    msgs_.erase(done_order_.front());
    done_order_.pop_front();
  }
  if (pacer_) {
    bool under_way = false;
    for (const auto& p : pool_) under_way |= p && p->live && p->key.job == key.job && p->key.src_rank == key.src_rank;
    if (!under_way) pacer_->flush({key.job, key.src_rank});
  }
}

}  // namespace dlcp::transport
