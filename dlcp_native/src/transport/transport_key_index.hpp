// Keys to 32-bit values in one open-addressing table (linear probing, backward-shift erase,
// at most half full), which allocates only when it grows, where std::unordered_map allocates
// and frees a node for every entry and a lookup costs a bucket and a node, each a cache miss
// when the endpoint is cold. The sender finds its messages by (iteration, tensor_id) in one;
// the receiver its messages in progress and completed ones (transport_inbound.hpp).
// `Bits` maps a key to 64 bits that every field of it moves; the table's home for a key is
// the top bits of their product with 2^64 / phi (Fibonacci hashing).
#pragma once

#include <cstdint>
#include <vector>

namespace dlcp::transport {

template <class Key, class Bits>
class KeyIndex {
 public:
  static constexpr uint32_t NONE = UINT32_MAX;  // absent (and an empty cell's value)

  uint32_t find(const Key& key) const {
    if (cells_.empty()) return NONE;
    for (size_t i = home(key);; i = next(i)) {
      const Cell& c = cells_[i];
      if (c.val == NONE || c.key == key) return c.val;
    }
  }
  // What `key` stands for from now on (`val` not NONE), added if absent.
  void set(const Key& key, uint32_t val) {
    if (2 * (n_ + 1) > cells_.size()) grow();
    size_t i = home(key);
    for (; cells_[i].val != NONE; i = next(i))
      if (cells_[i].key == key) {
        cells_[i].val = val;
        return;
      }
    cells_[i] = {key, val};
    ++n_;
  }
  // Removes `key` if present. Later cells of its probe chain move back into the hole, so
  // that every key stays reachable from its home without tombstones.
  void erase(const Key& key) {
    if (cells_.empty()) return;
    size_t hole = home(key);
    for (;; hole = next(hole)) {
      if (cells_[hole].val == NONE) return;
      if (cells_[hole].key == key) break;
    }
    for (size_t j = next(hole); cells_[j].val != NONE; j = next(j)) {
      const size_t h = home(cells_[j].key);
      if (((j - h) & mask()) >= ((j - hole) & mask())) {  // the hole lies on j's probe path
        cells_[hole] = cells_[j];
        hole = j;
      }
    }
    cells_[hole].val = NONE;
    --n_;
  }
  size_t size() const { return n_; }

 private:
  struct Cell {
    Key key{};
    uint32_t val = NONE;
  };
  size_t mask() const { return cells_.size() - 1; }
  size_t next(size_t i) const { return (i + 1) & mask(); }
  size_t home(const Key& key) const { return size_t((Bits{}(key) * 0x9E3779B97F4A7C15ull) >> shift_); }
  void grow() {
    std::vector<Cell> old;
    old.swap(cells_);
    cells_.resize(old.empty() ? 16 : old.size() * 2);
    shift_ = 64 - __builtin_ctzll(cells_.size());
    n_ = 0;
    for (const Cell& c : old)
      if (c.val != NONE) set(c.key, c.val);
  }

  std::vector<Cell> cells_;  // a power of two
  size_t n_ = 0;
  unsigned shift_ = 64;
};

}  // namespace dlcp::transport
