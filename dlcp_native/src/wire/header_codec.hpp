// The DLCP header on the wire (dlcp_emu/wire/header.py `DlcpHeader.pack` / `unpack`): 48
// bytes, big-endian, magic and version first, the reserved field zero, at the offsets and with
// the rules of wire_layout.hpp (generated from dlcp_emu/wire/layout.py). What a host's data
// plane reads from and writes into its UDP datagrams. The send time is unsigned on the wire
// and int64 in the core: monotonic ns, far below 2**63.
#pragma once

#include <cstddef>
#include <cstdint>

#include "wire/transport_packet.hpp"

namespace dlcp::transport {

// Why unpack refused a header (Python's WireError messages name the same fields).
enum class HeaderError : uint8_t { NONE = 0, TRUNCATED, MAGIC, VERSION, TYPE, FLAGS, PRIORITY, MAG_CLASS, TCLASS, RESERVED };

// Writes h at out[0, HEADER_LEN).
void pack_header(const Header& h, uint8_t* out);
// Reads the header at buf[0, n); NONE and h filled, or why not (h then undefined).
HeaderError unpack_header(const uint8_t* buf, size_t n, Header& h);
const char* header_error_name(HeaderError e);

}  // namespace dlcp::transport
