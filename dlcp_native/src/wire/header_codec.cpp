// See header_codec.hpp.
#include "wire/header_codec.hpp"

namespace dlcp::transport {

using namespace wire;

// The codec reads and writes each field at the width the layout gives it.
static_assert(HDR_MAGIC_SIZE == 2 && HDR_VERSION_SIZE == 1 && HDR_TYPE_SIZE == 1 && HDR_FLAGS_SIZE == 1 &&
              HDR_PRIORITY_SIZE == 1 && HDR_MAG_CLASS_SIZE == 1 && HDR_TCLASS_SIZE == 1 && HDR_JOB_SIZE == 2 &&
              HDR_SRC_RANK_SIZE == 2 && HDR_DST_RANK_SIZE == 2 && HDR_PAYLOAD_LEN_SIZE == 2 &&
              HDR_ITERATION_SIZE == 4 && HDR_TENSOR_ID_SIZE == 4 && HDR_CHUNK_INDEX_SIZE == 4 &&
              HDR_CHUNK_COUNT_SIZE == 4 && HDR_OFFSET_SIZE == 4 && HDR_RESERVED2_SIZE == 4 &&
              HDR_SEND_TS_NS_SIZE == 8 && HDR_SEND_TS_NS + HDR_SEND_TS_NS_SIZE == size_t(HEADER_LEN),
              "the DLCP header's layout changed: update pack_header and unpack_header");

namespace {

constexpr uint8_t N_TYPES = ACK + 1;

uint16_t get16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }
uint32_t get32(const uint8_t* p) { return uint32_t(get16(p)) << 16 | get16(p + 2); }
uint64_t get64(const uint8_t* p) { return uint64_t(get32(p)) << 32 | get32(p + 4); }
void put16(uint8_t* p, uint16_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}
void put32(uint8_t* p, uint32_t v) {
  put16(p, uint16_t(v >> 16));
  put16(p + 2, uint16_t(v));
}
void put64(uint8_t* p, uint64_t v) {
  put32(p, uint32_t(v >> 32));
  put32(p + 4, uint32_t(v));
}

}  // namespace

void pack_header(const Header& h, uint8_t* out) {
  put16(out + HDR_MAGIC, MAGIC);
  out[HDR_VERSION] = VERSION;
  out[HDR_TYPE] = h.type;
  out[HDR_FLAGS] = h.flags;
  out[HDR_PRIORITY] = h.priority;
  out[HDR_MAG_CLASS] = h.mag_class;
  out[HDR_TCLASS] = h.tclass;
  put16(out + HDR_JOB, h.job);
  put16(out + HDR_SRC_RANK, h.src_rank);
  put16(out + HDR_DST_RANK, h.dst_rank);
  put16(out + HDR_PAYLOAD_LEN, h.payload_len);
  put32(out + HDR_ITERATION, h.iteration);
  put32(out + HDR_TENSOR_ID, h.tensor_id);
  put32(out + HDR_CHUNK_INDEX, h.chunk_index);
  put32(out + HDR_CHUNK_COUNT, h.chunk_count);
  put32(out + HDR_OFFSET, h.offset);
  put32(out + HDR_RESERVED2, 0);
  put64(out + HDR_SEND_TS_NS, uint64_t(h.send_ts_ns));
}

// In DlcpHeader.unpack's order, so the first reason is the same.
HeaderError unpack_header(const uint8_t* b, size_t n, Header& h) {
  if (n < size_t(HEADER_LEN)) return HeaderError::TRUNCATED;
  if (get16(b + HDR_MAGIC) != MAGIC) return HeaderError::MAGIC;
  if (b[HDR_VERSION] != VERSION) return HeaderError::VERSION;
  if (b[HDR_TYPE] >= N_TYPES) return HeaderError::TYPE;
  if (b[HDR_FLAGS] & ~FLAG_MASK) return HeaderError::FLAGS;
  if (b[HDR_PRIORITY] > TOP_PRIORITY) return HeaderError::PRIORITY;
  if (b[HDR_MAG_CLASS] > TOP_MAG_CLASS) return HeaderError::MAG_CLASS;
  if (b[HDR_TCLASS] > TOP_TRAFFIC_CLASS) return HeaderError::TCLASS;
  if (get32(b + HDR_RESERVED2)) return HeaderError::RESERVED;
  h.type = b[HDR_TYPE];
  h.flags = b[HDR_FLAGS];
  h.priority = b[HDR_PRIORITY];
  h.mag_class = b[HDR_MAG_CLASS];
  h.tclass = b[HDR_TCLASS];
  h.job = get16(b + HDR_JOB);
  h.src_rank = get16(b + HDR_SRC_RANK);
  h.dst_rank = get16(b + HDR_DST_RANK);
  h.payload_len = get16(b + HDR_PAYLOAD_LEN);
  h.iteration = get32(b + HDR_ITERATION);
  h.tensor_id = get32(b + HDR_TENSOR_ID);
  h.chunk_index = get32(b + HDR_CHUNK_INDEX);
  h.chunk_count = get32(b + HDR_CHUNK_COUNT);
  h.offset = get32(b + HDR_OFFSET);
  h.send_ts_ns = int64_t(get64(b + HDR_SEND_TS_NS));
  return HeaderError::NONE;
}

const char* header_error_name(HeaderError e) {
  switch (e) {
    case HeaderError::NONE: return "none";
    case HeaderError::TRUNCATED: return "truncated";
    case HeaderError::MAGIC: return "magic";
    case HeaderError::VERSION: return "version";
    case HeaderError::TYPE: return "type";
    case HeaderError::FLAGS: return "flags";
    case HeaderError::PRIORITY: return "priority";
    case HeaderError::MAG_CLASS: return "mag_class";
    case HeaderError::TCLASS: return "tclass";
    case HeaderError::RESERVED: return "reserved";
  }
  return "?";
}

}  // namespace dlcp::transport
