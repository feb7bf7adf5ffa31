// A message's state at the receiver (receiver.py's `_Inbound`), and the receiver's messages
// by key (receiver.py's `_msgs` and `_done` in one): a KeyIndex (transport_key_index.hpp),
// each key standing for a message in progress (its index in the receiver's pool of states) or
// a completed one (DONE).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <optional>
#include <unordered_set>
#include <vector>

#include "transport/transport_feedback.hpp"
#include "transport/transport_key_index.hpp"

namespace dlcp::transport {

struct InKey {
  uint16_t job, src_rank;
  uint32_t iteration, tensor_id;
  bool operator==(const InKey& o) const {
    return job == o.job && src_rank == o.src_rank && iteration == o.iteration && tensor_id == o.tensor_id;
  }
};

// A zeroed byte buffer from calloc: fresh pages come zero from the kernel, so a large
// tensor's buffer is written once (by the chunks that arrive), not zeroed first. Python's
// bytearray(n) is calloc'd the same way.
class ZeroBuffer {
 public:
  explicit ZeroBuffer(size_t n = 0) {
    if (n) {
      p_.reset(static_cast<uint8_t*>(std::calloc(n, 1)));
      if (!p_) throw std::bad_alloc();
    }
  }
  uint8_t* data() { return p_.get(); }
  bool empty() const { return !p_; }
  uint8_t* release() { return p_.release(); }  // the caller frees it with std::free

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> p_;
};

struct Inbound {
  InKey key;
  uint32_t count;
  int64_t cs;
  ZeroBuffer buf;  // zero: what a missing chunk delivers (empty when payload-free)
  std::vector<uint8_t> got;
  int64_t received = 0, received_bytes = 0, received_droppable = 0;
  uint32_t cum = 0;
  uint32_t recent[feedback::ACK_EXTRA];  // the last chunks to arrive, newest first: n_recent of them
  uint8_t n_recent = 0;
  int64_t first_ns;
  int64_t packets = 0, dups = 0, trimmed = 0;
  // by chunk, CLASS_UNKNOWN where none is known; empty until the first is learnt
  std::vector<int16_t> classes;  // from trimmed headers
  std::optional<int64_t> total;                   // from the last chunk or a probe
  int64_t bound = 0, n_droppable = 0;
  int64_t nseg = 0;  // 0: no probe yet
  std::unordered_set<uint32_t> segs;
  std::vector<int16_t> drop_class;  // droppable chunks', from probes
  std::optional<int64_t> probe_ts;                   // send time of the last probe answered

  bool live = false;  // a message in progress; else a completed one's state, kept for reuse

  static constexpr int16_t CLASS_UNKNOWN = -1;
  static void learn(std::vector<int16_t>& by_chunk, uint32_t count, uint32_t c, uint8_t cls) {
    if (by_chunk.empty()) by_chunk.assign(count, CLASS_UNKNOWN);
    by_chunk[c] = cls;
  }

  // As new, keeping the blocks of its vectors: a receiver reuses its completed messages' state.
  void reset() {
    std::vector<uint8_t> g = std::move(got);
    std::vector<int16_t> c = std::move(classes), d = std::move(drop_class);
    g.clear();
    c.clear();
    d.clear();
    *this = Inbound();
    got = std::move(g);
    classes = std::move(c);
    drop_class = std::move(d);
  }
};

// The bits of a key for the table: every field moves them.
struct InKeyBits {
  uint64_t operator()(const InKey& k) const {
    const uint64_t a = uint64_t(k.iteration) << 32 | k.tensor_id;
    const uint64_t b = uint64_t(k.job) << 16 | k.src_rank;
    return a ^ (b * 0xC2B2AE3D27D4EB4Full);
  }
};

// A key stands for a message in progress (an index into the receiver's pool of states),
// DONE (a completed one), or nothing (NONE).
struct InboundTable : KeyIndex<InKey, InKeyBits> {
  static constexpr uint32_t ABSENT = NONE;
  static constexpr uint32_t DONE = NONE - 1;
};

}  // namespace dlcp::transport
