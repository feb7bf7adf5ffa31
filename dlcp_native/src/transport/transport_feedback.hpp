// Payload layouts of the control packets (dlcp_emu/transport/feedback.py, which documents
// them; all big-endian): the feedback prefix of ACK and BITMAP, the BITMAP's segment and
// bits, and the PROBE's droppable list.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace dlcp::transport::feedback {

constexpr uint8_t FB_CE = 0x01;
constexpr uint8_t FB_COMPLETE = 0x02;
constexpr uint8_t FB_NACK = 0x04;
constexpr uint8_t FB_NEED_PROBE = 0x08;
constexpr uint8_t FB_PULL = 0x10;  // a PULL: nothing but a pull number

constexpr size_t FEEDBACK_SIZE = 16;    // >QIBBH: the last two bytes, the pull number
constexpr size_t ACK_EXTRA = 3;
constexpr size_t BITMAP_HEAD_SIZE = 24;  // >QIBB2xII
constexpr size_t PROBE_HEAD_SIZE = 20;   // >IIIIHH
constexpr int PROBE_ENTRY_SHIFT = 29;
constexpr uint32_t PROBE_CHUNK_MASK = (uint32_t{1} << PROBE_ENTRY_SHIFT) - 1;

using Bytes = std::vector<uint8_t>;

Bytes encode_ack(uint64_t echo_ts, uint32_t cum, uint8_t fb_flags, const uint32_t* extra, size_t n_extra,
                 uint16_t pull = 0);
// The same ACK written into `out` (room for ACK_MAX_SIZE bytes), its size returned: the
// receiver's one ACK a data packet without a heap block.
constexpr size_t ACK_MAX_SIZE = FEEDBACK_SIZE + 4 * ACK_EXTRA;
size_t encode_ack_into(uint8_t* out, uint64_t echo_ts, uint32_t cum, uint8_t fb_flags, const uint32_t* extra,
                       size_t n_extra, uint16_t pull = 0);
inline uint16_t pull_number(const uint8_t* p) { return uint16_t(p[14] << 8 | p[15]); }  // len >= FEEDBACK_SIZE

struct Ack {
  uint64_t echo;
  uint32_t cum;
  uint8_t flags;
  size_t n_extra;
  uint32_t extra[ACK_EXTRA];
};
Ack decode_ack(const uint8_t* p, size_t len);  // len >= FEEDBACK_SIZE

inline int64_t bitmap_bits_per_packet(int64_t payload_size) {
  return (payload_size - static_cast<int64_t>(BITMAP_HEAD_SIZE)) * 8;
}
// (base, payload) per packet covering chunks [cum, got.size()); at least one packet.
std::vector<std::pair<uint32_t, Bytes>> encode_bitmaps(const std::vector<uint8_t>& got, uint32_t cum,
                                                       uint64_t echo_ts, uint8_t fb_flags, int64_t payload_size);
Bytes bitmap_head(uint64_t echo_ts, uint32_t cum, uint8_t fb_flags, uint32_t base, uint32_t nbits);
Bytes encode_nack(uint64_t echo_ts, uint32_t cum, uint32_t chunk, uint8_t fb_flags = 0, uint16_t pull = 0);

struct Bitmap {
  uint64_t echo;
  uint32_t cum;
  uint8_t flags;
  uint32_t base;
  uint32_t nbits;        // bits present: min(announced, what the payload holds)
  const uint8_t* bits;   // LSB first: bit i is chunk base + i
  bool bit(uint32_t i) const { return (bits[i >> 3] >> (i & 7)) & 1; }
};
Bitmap decode_bitmap(const uint8_t* p, size_t len);  // len >= BITMAP_HEAD_SIZE

// The payloads of one probe round, into `out` (its vectors' blocks reused); throws
// std::invalid_argument past 65535 packets, `out` untouched.
void encode_probes(std::vector<Bytes>& out, int64_t total, int64_t chunk_size, int64_t bound_bytes,
                   const std::vector<uint8_t>& droppable, const std::vector<uint8_t>& mag_class,
                   int64_t payload_size);

struct Probe {
  uint32_t total, chunk_size, bound_bytes, n_droppable;
  uint16_t seg, nseg;
  size_t n_entries;
  const uint8_t* entries;  // big-endian u32 (class << 29 | chunk)
  uint32_t entry(size_t i) const;
};
Probe decode_probe(const uint8_t* p, size_t len);  // len >= PROBE_HEAD_SIZE

}  // namespace dlcp::transport::feedback
