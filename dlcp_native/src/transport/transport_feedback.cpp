#include "transport/transport_feedback.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dlcp::transport::feedback {

namespace {

void put16(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}
void put32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (24 - 8 * i));
}
void put64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (56 - 8 * i));
}
uint16_t get16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }
uint32_t get32(const uint8_t* p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | uint32_t(p[3]);
}
uint64_t get64(const uint8_t* p) { return uint64_t(get32(p)) << 32 | get32(p + 4); }

void put_prefix(uint8_t* p, uint64_t echo, uint32_t cum, uint8_t flags, uint8_t n_extra, uint16_t pull = 0) {
  put64(p, echo);
  put32(p + 8, cum);
  p[12] = flags;
  p[13] = n_extra;
  put16(p + 14, pull);
}

}  // namespace

Bytes encode_ack(uint64_t echo_ts, uint32_t cum, uint8_t fb_flags, const uint32_t* extra, size_t n_extra,
                 uint16_t pull) {
  Bytes out(FEEDBACK_SIZE + 4 * n_extra);
  encode_ack_into(out.data(), echo_ts, cum, fb_flags, extra, n_extra, pull);
  return out;
}

size_t encode_ack_into(uint8_t* out, uint64_t echo_ts, uint32_t cum, uint8_t fb_flags, const uint32_t* extra,
                       size_t n_extra, uint16_t pull) {
  put_prefix(out, echo_ts, cum, fb_flags, uint8_t(n_extra), pull);
  for (size_t i = 0; i < n_extra; ++i) put32(out + FEEDBACK_SIZE + 4 * i, extra[i]);
  return FEEDBACK_SIZE + 4 * n_extra;
}

Ack decode_ack(const uint8_t* p, size_t len) {
  Ack a;
  a.echo = get64(p);
  a.cum = get32(p + 8);
  a.flags = p[12];
  a.n_extra = std::min<size_t>({p[13], ACK_EXTRA, (len - FEEDBACK_SIZE) / 4});
  for (size_t i = 0; i < a.n_extra; ++i) a.extra[i] = get32(p + FEEDBACK_SIZE + 4 * i);
  return a;
}

Bytes bitmap_head(uint64_t echo_ts, uint32_t cum, uint8_t fb_flags, uint32_t base, uint32_t nbits) {
  Bytes out(BITMAP_HEAD_SIZE);
  put_prefix(out.data(), echo_ts, cum, fb_flags, 0);
  put32(out.data() + 16, base);
  put32(out.data() + 20, nbits);
  return out;
}

std::vector<std::pair<uint32_t, Bytes>> encode_bitmaps(const std::vector<uint8_t>& got, uint32_t cum,
                                                       uint64_t echo_ts, uint8_t fb_flags, int64_t payload_size) {
  const int64_t n = static_cast<int64_t>(got.size());
  const int64_t per = bitmap_bits_per_packet(payload_size);
  std::vector<std::pair<uint32_t, Bytes>> out;
  int64_t base = cum;
  while (true) {
    const int64_t nbits = std::max<int64_t>(0, std::min(per, n - base));
    Bytes p = bitmap_head(echo_ts, cum, fb_flags, uint32_t(base), uint32_t(nbits));
    const size_t head = p.size();
    p.resize(head + size_t((nbits + 7) / 8), 0);
    for (int64_t i = 0; i < nbits; ++i)  // np.packbits(bitorder="little"): nonzero is a 1
      if (got[size_t(base + i)]) p[head + size_t(i >> 3)] |= uint8_t(1u << (i & 7));
    out.emplace_back(uint32_t(base), std::move(p));
    base += nbits;
    if (base >= n) return out;
  }
}

Bytes encode_nack(uint64_t echo_ts, uint32_t cum, uint32_t chunk, uint8_t fb_flags, uint16_t pull) {
  Bytes out = bitmap_head(echo_ts, cum, uint8_t(fb_flags | FB_NACK), chunk, 1);
  put16(out.data() + 14, pull);
  out.push_back(0);
  return out;
}

Bitmap decode_bitmap(const uint8_t* p, size_t len) {
  Bitmap b;
  b.echo = get64(p);
  b.cum = get32(p + 8);
  b.flags = p[12];
  b.base = get32(p + 16);
  const uint64_t room = uint64_t(len - BITMAP_HEAD_SIZE) * 8;
  b.nbits = uint32_t(std::min<uint64_t>(get32(p + 20), room));
  b.bits = p + BITMAP_HEAD_SIZE;
  return b;
}

void encode_probes(std::vector<Bytes>& out, int64_t total, int64_t chunk_size, int64_t bound_bytes,
                   const std::vector<uint8_t>& droppable, const std::vector<uint8_t>& mag_class,
                   int64_t payload_size) {
  const int64_t n = std::count_if(droppable.begin(), droppable.end(), [](uint8_t d) { return d != 0; });
  const int64_t per = (payload_size - int64_t(PROBE_HEAD_SIZE)) / 4;
  const int64_t nseg = std::max<int64_t>(1, (n + per - 1) / per);
  if (nseg > 0xFFFF)
    throw std::invalid_argument(std::to_string(n) + " droppable chunks need more than 65535 probe packets");
  out.resize(size_t(nseg));
  size_t c = 0;  // the next droppable chunk is at c or after
  for (int64_t seg = 0; seg < nseg; ++seg) {
    const int64_t lo = std::min(n, seg * per), hi = std::min(n, (seg + 1) * per);
    Bytes& p = out[size_t(seg)];
    p.resize(PROBE_HEAD_SIZE + size_t(4 * (hi - lo)));
    put32(p.data(), uint32_t(total));
    put32(p.data() + 4, uint32_t(chunk_size));
    put32(p.data() + 8, uint32_t(bound_bytes));
    put32(p.data() + 12, uint32_t(n));
    put16(p.data() + 16, uint32_t(seg));
    put16(p.data() + 18, uint32_t(nseg));
    for (int64_t i = lo; i < hi; ++i, ++c) {
      while (!droppable[c]) ++c;
      put32(p.data() + PROBE_HEAD_SIZE + 4 * (i - lo), uint32_t(mag_class[c]) << PROBE_ENTRY_SHIFT | uint32_t(c));
    }
  }
}

uint32_t Probe::entry(size_t i) const { return get32(entries + 4 * i); }

Probe decode_probe(const uint8_t* p, size_t len) {
  Probe r;
  r.total = get32(p);
  r.chunk_size = get32(p + 4);
  r.bound_bytes = get32(p + 8);
  r.n_droppable = get32(p + 12);
  r.seg = get16(p + 16);
  r.nseg = get16(p + 18);
  r.n_entries = (len - PROBE_HEAD_SIZE) / 4;
  r.entries = p + PROBE_HEAD_SIZE;
  return r;
}

}  // namespace dlcp::transport::feedback
