// What the transports carry (dlcp_emu/transport/message.py): one tensor of float32 values
// cut into fixed-size chunks, each with a magnitude class and a droppable flag.
//
// Which chunks are droppable, and their classes, is decided per message by MagnitudePolicy:
// `plan_chunks` below is its `plan` for drop_order "magnitude" (numpy's octiles, stable
// argsort and searchsorted, step for step: tests/test_native_plan.py holds it to the Python
// one); drop_order "random" stays Python (numpy's generator). It is per message, not per
// packet, and handed to the sender as a ChunkPlan.
#pragma once

#include <cstdint>
#include <optional>
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

// message.py `chunk_magnitudes`: the mean |g| of each chunk_size-byte chunk of n float32
// values (the last chunk may be shorter), to the bit: numpy's float32 pairwise summation of
// the chunk, divided in float32 by its count (what `mean` does), widened to double.
std::vector<double> chunk_magnitudes(const float* data, int64_t n, int64_t chunk_size);

// np.quantile(m, [1/8 .. 7/8]) ("linear", as numpy computes it) of values without NaN.
std::vector<double> octiles(const std::vector<double>& m);

// message.py MagnitudePolicy.plan with drop_order "magnitude": classes against `edges` (7
// increasing thresholds; none: the message's octiles), droppable chunks the smallest
// `droppable_fraction` of them taken while their bytes stay within floor(loss_bound * total).
ChunkPlan plan_chunks(const std::vector<double>& m, int64_t total, int64_t chunk_size, double droppable_fraction,
                      double loss_bound, bool droppable_allowed, const std::optional<std::vector<double>>& edges);

}  // namespace dlcp::transport
