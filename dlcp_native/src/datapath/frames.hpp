// Frames -> Packet, and the rewrites applied on the way out: the switch process's parser
// (dlcp_emu/emu/datapath/frames.py) and the switch's frame rewrites (dlcp_emu/wire/rewrite.py),
// read at the same fixed offsets (dlcp_emu/wire/layout.py), giving the same Packet.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "switch/packet.hpp"
#include "wire/wire_layout.hpp"

namespace dlcp {

// What parse_frame makes of a frame: a Packet, or a reason the switch refuses it.
enum class Parsed : uint8_t { PACKET = 0, MALFORMED = 1, INVALID_DLCP = 2 };

using wire::DLCP_UDP_PORT;

// The frame as the switch model sees it (frames.py `parse`): size padded to Ethernet's
// minimum, prio/ect/ce from the TOS byte, the DLCP header's fields for DLCP frames, and
// CPython's hash of the same tuple as the flow (so ECMP and PIAS decide as in Python). The
// routing key (the destination MAC) is the frame's first 6 bytes; `pkt.dst` is left alone.
Parsed parse_frame(const uint8_t* frame, size_t n, Packet& pkt, uint16_t dlcp_port = DLCP_UDP_PORT);

// The destination MAC as an integer (the route table's key).
inline uint64_t mac_key(const uint8_t* frame) {
  uint64_t k = 0;
  for (int i = 0; i < 6; ++i) k = k << 8 | frame[i];
  return k;
}

// NDP-style trim (rewrite.py `trim_frame`): the frame cut to its DLCP header, TRIMMED set,
// checksums updated incrementally. False, frame unchanged, if it is not a well-formed DLCP
// frame at fixed offsets (Python raises WireError; the data path counts a rewrite error).
bool trim_frame(std::vector<uint8_t>& frame);
// ECN CE on an ECT IPv4 frame, IP checksum updated (rewrite.py `mark_ce`); true if the frame
// carries CE afterwards.
bool mark_ce(std::vector<uint8_t>& frame);

}  // namespace dlcp
