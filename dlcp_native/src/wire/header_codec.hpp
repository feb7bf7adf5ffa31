// The DLCP header on the wire (dlcp_emu/wire/header.py `DlcpHeader.pack` / `unpack`, layout
// in dlcp_emu/wire/layout.py): 48 bytes, big-endian, magic and version first, reserved fields
// zero. What a host's data plane reads from and writes into its UDP datagrams. The send time
// is unsigned on the wire and int64 in the core: monotonic ns, far below 2**63.
#pragma once

#include <cstddef>
#include <cstdint>

#include "wire/transport_packet.hpp"

namespace dlcp::transport {

// Byte offsets inside the header (layout.py HDR_*).
constexpr size_t HDR_MAGIC = 0, HDR_VERSION = 2, HDR_TYPE = 3, HDR_FLAGS = 4, HDR_PRIORITY = 5,
                 HDR_MAG_CLASS = 6, HDR_RESERVED = 7, HDR_JOB = 8, HDR_SRC_RANK = 10, HDR_DST_RANK = 12,
                 HDR_PAYLOAD_LEN = 14, HDR_ITERATION = 16, HDR_TENSOR_ID = 20, HDR_CHUNK_INDEX = 24,
                 HDR_CHUNK_COUNT = 28, HDR_OFFSET = 32, HDR_RESERVED2 = 36, HDR_SEND_TS_NS = 40;
constexpr uint16_t HEADER_MAGIC = 0xD1C9;
constexpr uint8_t HEADER_VERSION = 1;
constexpr uint8_t FLAG_MASK = 0x0F;  // the four flags above; other bits are refused

// Why unpack refused a header (Python's WireError messages name the same fields).
enum class HeaderError : uint8_t { NONE = 0, TRUNCATED, MAGIC, VERSION, TYPE, FLAGS, PRIORITY, MAG_CLASS, RESERVED };

// Writes h at out[0, HEADER_LEN).
void pack_header(const Header& h, uint8_t* out);
// Reads the header at buf[0, n); NONE and h filled, or why not (h then undefined).
HeaderError unpack_header(const uint8_t* buf, size_t n, Header& h);
const char* header_error_name(HeaderError e);

}  // namespace dlcp::transport
