// The receiver's messages by key (receiver.py's `_msgs` and `_done` in one): an open-addressing
// table with linear probing, each slot a key and what it stands for, a message in progress
// (its index in the receiver's pool of states) or a completed one (DONE). A packet's lookup
// is one hash and a probe or two in one array, where node-based maps cost a bucket, a node and
// the state behind it, each a cache miss when a receiver's messages are cold.
#pragma once

#include <cstdint>
#include <vector>

namespace dlcp::transport {

struct InKey {
  uint16_t job, src_rank;
  uint32_t iteration, tensor_id;
  bool operator==(const InKey& o) const {
    return job == o.job && src_rank == o.src_rank && iteration == o.iteration && tensor_id == o.tensor_id;
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
