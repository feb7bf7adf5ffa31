// What a sender keeps of each message it sends (dlcp_emu/transport/outbound.py): the state
// of every chunk, and what it reports when the message is complete.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "wire/transport_packet.hpp"

namespace dlcp::transport {

enum ChunkState : uint8_t { UNSENT = 0, IN_FLIGHT = 1, ACKED = 2, LOST = 3, ABANDONED = 4 };

struct SendResult {
  uint32_t iteration, tensor_id;
  int64_t nbytes, chunks;
  int64_t start_ns, done_ns;
  int64_t packets, retransmissions, probe_rounds;
};

struct Outbound {
  uint32_t iteration = 0, tensor_id = 0;
  uint8_t priority = 7;
  uint8_t tclass = wire::TCLASS_GRADIENT;
  uint32_t count = 0;
  int64_t cs = 0, total = 0;
  std::shared_ptr<const Buffer> buf;
  std::vector<uint8_t> mag, flags, state;
  std::vector<int64_t> xmit_ts, tx_seq;
  uint32_t next_new = 0, cum = 0, acked = 0;
  int64_t inflight = 0, abandoned = 0, bound = 0;
  std::deque<uint32_t> retx;
  std::vector<std::vector<uint8_t>> probes;
  int64_t probe_rounds = 0;
  int64_t probe_ts = -1;
  bool probe_due = false, done = false, in_ready = false;
  int64_t order = 0, start_ns = 0, packets = 0, retransmits = 0;
  int lane_base = 0;

  int64_t size(uint32_t c) const { return c + 1 < count ? cs : total - int64_t(c) * cs; }
};

using OutboundPtr = std::shared_ptr<Outbound>;

}  // namespace dlcp::transport
