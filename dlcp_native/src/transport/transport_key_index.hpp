// A sender's messages by (iteration, tensor_id): 64-bit keys to slot numbers in one open-
// addressing table (linear probing, backward-shift erase), which allocates only when it grows,
// where std::unordered_map allocates and frees a node for every message.
#pragma once

#include <cstdint>
#include <vector>

namespace dlcp::transport {

class KeyIndex {
 public:
  static constexpr uint32_t NONE = UINT32_MAX;

  uint32_t find(uint64_t key) const {
    if (cells_.empty()) return NONE;
    for (size_t i = home(key);; i = next(i)) {
      const Cell& c = cells_[i];
      if (c.slot == NONE || c.key == key) return c.slot;
    }
  }
  // `key` must be absent.
  void insert(uint64_t key, uint32_t slot) {
    if (2 * (n_ + 1) > cells_.size()) grow();
    size_t i = home(key);
    while (cells_[i].slot != NONE) i = next(i);
    cells_[i] = {key, slot};
    ++n_;
  }
  // `key` must be present. Later cells of its probe chain move back into the hole, so that
  // every key stays reachable from its home without tombstones.
  void erase(uint64_t key) {
    size_t hole = home(key);
    while (cells_[hole].key != key || cells_[hole].slot == NONE) hole = next(hole);
    for (size_t j = next(hole); cells_[j].slot != NONE; j = next(j)) {
      const size_t h = home(cells_[j].key);
      if (((j - h) & mask()) >= ((j - hole) & mask())) {  // the hole lies on j's probe path
        cells_[hole] = cells_[j];
        hole = j;
      }
    }
    cells_[hole].slot = NONE;
    --n_;
  }
  size_t size() const { return n_; }

 private:
  struct Cell {
    uint64_t key = 0;
    uint32_t slot = NONE;
  };
  size_t mask() const { return cells_.size() - 1; }
  size_t next(size_t i) const { return (i + 1) & mask(); }
  size_t home(uint64_t key) const { return size_t((key * 0x9E3779B97F4A7C15ull) >> shift_); }
  void grow() {
    std::vector<Cell> old;
    old.swap(cells_);
    cells_.resize(old.empty() ? 8 : old.size() * 2);
    shift_ = 64;
    for (size_t s = cells_.size(); s > 1; s >>= 1) --shift_;
    n_ = 0;
    for (const Cell& c : old)
      if (c.slot != NONE) insert(c.key, c.slot);
  }

  std::vector<Cell> cells_;  // a power of two, at most half full
  size_t n_ = 0;
  unsigned shift_ = 64;
};

}  // namespace dlcp::transport
