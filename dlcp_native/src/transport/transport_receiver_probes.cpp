// What a DLCP receiver does with a PROBE (dlcp_emu/transport/receiver.py `_on_probe` and
// what it calls): learn which chunks may stay missing, complete the tensor if it can, and
// answer with BITMAPs of what arrived (or ask for the probe again when it came trimmed).
#include "transport/transport_receiver.hpp"

#include <utility>

#include "transport/transport_feedback.hpp"

namespace dlcp::transport {

namespace fb = feedback;

// ---- probes (dlcp) ---------------------------------------------------------------------------
void Receiver::on_probe(const Header& h, const InPayload& p, int64_t now) {
  if ((h.flags & FLAG_TRIMMED) || p.size < fb::PROBE_HEAD_SIZE) {
    on_trimmed_probe(h, now);
    return;
  }
  const fb::Probe pr = fb::decode_probe(p.data, p.size);
  const __int128 count = h.chunk_count, cs = pr.chunk_size, total = pr.total;
  if (!(0 < cs && (count - 1) * cs < total && total <= count * cs && pr.seg < pr.nseg && pr.n_droppable <= count)) {
    malformed += 1;
    return;
  }
  bool found;
  Inbound* st = state(h, now, int64_t(pr.chunk_size), found);
  if (!found) return;
  if (st == nullptr) {
    bitmap_complete(h, now);
    return;
  }
  if (int64_t(pr.chunk_size) != st->cs || (st->total && *st->total != int64_t(pr.total))) {
    malformed += 1;
    return;
  }
  st->total = pr.total;
  if (!st->nseg) {
    st->nseg = pr.nseg;
    st->bound = pr.bound_bytes;
    st->n_droppable = pr.n_droppable;
  }
  if (st->segs.insert(pr.seg).second)
    for (size_t i = 0; i < pr.n_entries; ++i) {
      const uint32_t e = pr.entry(i);
      // a chunk past the tensor's is never looked up: not kept
      if (const uint32_t c = e & fb::PROBE_CHUNK_MASK; c < st->count)
        Inbound::learn(st->drop_class, st->count, c, uint8_t(e >> fb::PROBE_ENTRY_SHIFT));
    }
  if (st->probe_ts == h.send_ts_ns) return;  // one answer per probe round, however many packets it has
  st->probe_ts = h.send_ts_ns;
  if (int64_t(st->segs.size()) < st->nseg) {
    bitmaps(h, *st, now, fb::FB_NEED_PROBE);
  } else if (complete_ready(*st)) {
    complete(*st, now);
    bitmap_complete(h, now);
  } else {
    bitmaps(h, *st, now, 0);
  }
}

// The probe's list was cut off: show what arrived and ask for the probe again.
void Receiver::on_trimmed_probe(const Header& h, int64_t now) {
  const uint32_t at = msgs_.find({h.job, h.src_rank, h.iteration, h.tensor_id});
  if (at == InboundTable::DONE) {
    bitmap_complete(h, now);
  } else if (at == InboundTable::ABSENT) {
    feedback(h, now, fb::bitmap_head(uint64_t(h.send_ts_ns), 0, fb::FB_NEED_PROBE, 0, 0), BITMAP, 0);
  } else if (Inbound& st = *pool_[at]; st.probe_ts != h.send_ts_ns) {
    st.probe_ts = h.send_ts_ns;
    bitmaps(h, st, now, fb::FB_NEED_PROBE);
  }
}

void Receiver::bitmaps(const Header& h, const Inbound& st, int64_t now, uint8_t fl) {
  for (auto& [base, p] : fb::encode_bitmaps(st.got, st.cum, uint64_t(h.send_ts_ns), fl, payload_size))
    feedback(h, now, std::move(p), BITMAP, base);
}

void Receiver::bitmap_complete(const Header& h, int64_t now) {
  feedback(h, now, fb::bitmap_head(uint64_t(h.send_ts_ns), 0, fb::FB_COMPLETE, 0, 0), BITMAP, 0);
}

}  // namespace dlcp::transport
