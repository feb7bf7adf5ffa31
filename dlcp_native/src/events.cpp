#include "events.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace dlcp {

namespace {

// The heap puts the smallest (time, key) on top. A type, not a function: the heap's
// algorithms then inline the comparison (through a pointer they called it, ~3% of a run).
struct Later {
  bool operator()(const Event& a, const Event& b) const {
    return a.time != b.time ? a.time > b.time : a.key > b.key;
  }
};

}  // namespace

void EventLoop::push(const Event& e) {
  heap_.push_back(e);
  std::push_heap(heap_.begin(), heap_.end(), Later{});
}

Event EventLoop::pop() {
  std::pop_heap(heap_.begin(), heap_.end(), Later{});
  const Event e = heap_.back();
  heap_.pop_back();
  return e;
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
