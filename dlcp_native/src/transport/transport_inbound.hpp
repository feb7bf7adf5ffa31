// A message's state at the receiver (receiver.py's `_Inbound`), and the receiver's messages
// by key (receiver.py's `_msgs` and `_done` in one): an open-addressing
// table with linear probing, each slot a key and what it stands for, a message in progress
// (its index in the receiver's pool of states) or a completed one (DONE). A packet's lookup
// is one hash and a probe or two in one array, where node-based maps cost a bucket, a node and
// the state behind it, each a cache miss when a receiver's messages are cold.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <optional>
#include <unordered_set>
#include <vector>

#include "transport/transport_feedback.hpp"

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

class InboundTable {
 public:
  static constexpr uint32_t ABSENT = 0xFFFFFFFF;  // also the empty slot's value
  static constexpr uint32_t DONE = 0xFFFFFFFE;

  // What `k` stands for: an index, DONE, or ABSENT.
  uint32_t find(const InKey& k) const {
    if (slots_.empty()) return ABSENT;
    for (size_t i = home(k);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.val == ABSENT) return ABSENT;
      if (s.key == k) return s.val;
    }
  }
  // Sets what `k` stands for (`v` not ABSENT), adding it if absent.
  void set(const InKey& k, uint32_t v) {
    if ((size_ + 1) * 2 > slots_.size()) grow();
    size_t i = home(k);
    for (; slots_[i].val != ABSENT; i = (i + 1) & mask_)
      if (slots_[i].key == k) {
        slots_[i].val = v;
        return;
      }
    slots_[i] = {k, v};
    ++size_;
  }
  // Removes `k` if present; the slots after it move back, so no probe meets a hole.
  void erase(const InKey& k) {
    if (slots_.empty()) return;
    size_t i = home(k);
    for (;; i = (i + 1) & mask_) {
      if (slots_[i].val == ABSENT) return;
      if (slots_[i].key == k) break;
    }
    for (size_t j = (i + 1) & mask_; slots_[j].val != ABSENT; j = (j + 1) & mask_) {
      const size_t h = home(slots_[j].key);
      // slot j may move to the hole at i unless its home lies cyclically in (i, j]
      if (((j - h) & mask_) >= ((j - i) & mask_)) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i].val = ABSENT;
    --size_;
  }
  size_t size() const { return size_; }

 private:
  struct Slot {
    InKey key;
    uint32_t val;
  };
  // Fibonacci hashing: the product's top bits, which every bit of the key moves.
  size_t home(const InKey& k) const {
    const uint64_t a = uint64_t(k.iteration) << 32 | k.tensor_id;
    const uint64_t b = uint64_t(k.job) << 16 | k.src_rank;
    const uint64_t x = (a ^ (b * 0xC2B2AE3D27D4EB4Full)) * 0x9E3779B97F4A7C15ull;
    return size_t(x >> shift_);
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    const size_t cap = old.empty() ? 16 : old.size() * 2;
    slots_.assign(cap, Slot{InKey{}, ABSENT});
    mask_ = cap - 1;
    shift_ = 64 - __builtin_ctzll(cap);
    size_ = 0;
    for (const Slot& s : old)
      if (s.val != ABSENT) set(s.key, s.val);
  }

  std::vector<Slot> slots_;  // a lookup reads these three, then one slot
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

}  // namespace dlcp::transport
