#include "net/events.hpp"

#include <cstddef>
#include <cstring>
#include <stdexcept>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <string>

namespace dlcp {

namespace {

// The heap puts the smallest (time, key) on top. No two events share a key, so the order is
// total and any correct heap pops the same sequence as Python's heapq. (time, key) is compared
// as one 128-bit number (the time's sign bit flipped: signed order as unsigned), a subtraction
// with borrow and no branch: a heap's sift-down mispredicted the branch on equal times (many
// events share a time), and the key it then loaded was 7% of the loop's samples.
inline unsigned __int128 order(int64_t time, uint64_t key) {
  return static_cast<unsigned __int128>(static_cast<uint64_t>(time) ^ (uint64_t{1} << 63)) << 64 | key;
}

// Four children a node: half the levels of a binary heap, and a node's children share a
// cache line or two; std::push_heap/pop_heap (binary) were a quarter of the core's time.
constexpr size_t ARITY = 4;

// An event written in two stores, 16 bytes (time, key) and 8 (target, kind and the padding):
// the event just pushed is often the next popped, and pop copies it in loads of 16 and 8
// bytes, which the store buffer forwards only from a store that holds all of the load; built
// field by field, each load waited for the stores to retire (8% of the loop's samples).
inline void store_event(Event& e, int64_t t, uint64_t key, uint32_t target, uint8_t kind) {
  static_assert(offsetof(Event, key) == 8 && offsetof(Event, target) == 16 &&
                offsetof(Event, kind) == 20 && sizeof(Event) == 24, "the layout the stores assume");
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "kind is the fifth byte of the tail");
  char* at = reinterpret_cast<char*>(&e);
#if defined(__SSE2__)
  _mm_storeu_si128(reinterpret_cast<__m128i*>(at), _mm_set_epi64x(static_cast<long long>(key), t));
#else
  std::memcpy(at, &t, 8);
  std::memcpy(at + 8, &key, 8);
#endif
  const uint64_t tail = uint64_t{target} | uint64_t{kind} << 32;
  std::memcpy(at + 16, &tail, 8);
}

}  // namespace

void EventLoop::push(int64_t t, uint64_t key, uint32_t target, uint8_t kind) {
  size_t i = heap_.size();
  heap_.emplace_back();
  while (i > 0) {
    const size_t parent = (i - 1) / ARITY;
    const Event& p = heap_[parent];
    if (order(p.time, p.key) < order(t, key)) break;  // the parent is earlier: keys differ, no tie
    heap_[i] = p;
    i = parent;
  }
  store_event(heap_[i], t, key, target, kind);
}

Event EventLoop::pop() {
  const Event top = heap_.front();
  const Event last = heap_.back();
  heap_.pop_back();
  const size_t n = heap_.size();
  if (n == 0) return top;
  // Sift `last` down from the root: at each level the earliest child moves up.
  const unsigned __int128 last_order = order(last.time, last.key);
  size_t i = 0;
  for (;;) {
    const size_t first = ARITY * i + 1;
    if (first >= n) break;
    const size_t end = first + ARITY < n ? first + ARITY : n;
    // The earliest child by selects, not branches: which child it is, is a coin toss.
    size_t best = first;
    unsigned __int128 best_order = order(heap_[first].time, heap_[first].key);
    for (size_t c = first + 1; c < end; ++c) {
      const unsigned __int128 o = order(heap_[c].time, heap_[c].key);
      const bool less = o < best_order;
      best = less ? c : best;
      best_order = less ? o : best_order;
    }
    if (!(best_order < last_order)) break;
    heap_[i] = heap_[best];
    i = best;
  }
  heap_[i] = last;
  return top;
}

uint64_t EventLoop::outside_key(int64_t major) {
  if (major < 0) major = major_;
  if (major > major_ || major < outside_major_)
    throw std::invalid_argument("an event scheduled from outside names major " + std::to_string(major) +
                                ": it must be between the last one named (" +
                                std::to_string(outside_major_) + ") and the core's (" +
                                std::to_string(major_) + ")");
  if (major != outside_major_) {
    outside_major_ = major;
    minor_ = 0;
  }
  if (++minor_ >= (uint64_t{1} << MINOR_BITS))
    throw std::overflow_error("more than 2^24 events scheduled from outside between two of the core's");
  return (static_cast<uint64_t>(major) << MINOR_BITS) | minor_;
}

}  // namespace dlcp
