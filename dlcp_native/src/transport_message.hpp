// What the transports carry (dlcp_emu/transport/message.py): one tensor of float32 values
// cut into fixed-size chunks, each with a magnitude class and a droppable flag.
//
// Which chunks are droppable, and their classes, is decided per message by the Python
// MagnitudePolicy (numpy quantiles, a stable argsort and, for drop_order "random", numpy's
// generator) and handed in as a ChunkPlan: that is per message, not per packet, and keeps
// the draws identical to the Python endpoints' by construction.
#pragma once

#include <cstdint>
#include <vector>

namespace dlcp::transport {

constexpr int64_t DEFAULT_MTU = 1500;
constexpr int64_t MAX_CHUNKS = int64_t{1} << 29;  // probes pack (class << 29 | chunk) into 32 bits
constexpr int64_t MIN_TRANSPORT_PAYLOAD = 64;     // room for a bitmap's 24 and a probe's 20 bytes

// Gradient bytes per packet for an IP MTU: MTU - IPv4 - UDP - DLCP header, rounded down to
// whole float32 values (1500 -> 1424). Throws std::invalid_argument as Python's ValueError.
int64_t chunk_payload_size(int64_t mtu);
// chunk_payload_size, refusing MTUs too small for the endpoints' control packets.
int64_t transport_payload_size(int64_t mtu);

// Per-chunk header fields of one message and the bytes it may lose.
struct ChunkPlan {
  std::vector<uint8_t> mag_class;  // one class 0..7 per chunk
  std::vector<uint8_t> droppable;  // 1 where the chunk may be lost
  int64_t bound_bytes = 0;         // bytes the receiver may zero-fill
};

}  // namespace dlcp::transport
