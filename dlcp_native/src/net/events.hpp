// A discrete-event loop in virtual time (integer ns), as dlcp_emu/sim/events.py: a heap of
// events ordered by (time, key), so that events at one time run in the order they were
// scheduled, as Python's (time, seq) tuples order them.
//
// What an event does is the network's business (network.hpp): here it is a kind and a target.
//
// Keys: Python's loop numbers every event it schedules from one counter. Here two sides
// schedule: the core, as it runs, and Python (the hosts' endpoints), which answers a batch of
// deliveries after the core has run on to collect them. So a key is (major << 24 | minor):
// the core takes a new major for every event it schedules, and Python schedules under the
// major the core had reached when it produced the event Python is answering, with a minor of
// its own. Keys then follow the order in which a single Python loop would have scheduled the
// same events, and ties resolve identically.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dlcp {

struct Event {
  int64_t time;
  uint64_t key;
  uint32_t target;
  uint8_t kind;
};

constexpr int MINOR_BITS = 24;

class EventLoop {
 public:
  int64_t now = 0;
  uint64_t events = 0;  // events run so far

  // Schedule at time t >= now (the caller guarantees it), after every event scheduled so far.
  void schedule(int64_t t, uint8_t kind, uint32_t target) {
    push(t, static_cast<uint64_t>(++major_) << MINOR_BITS, target, kind);
  }
  // Schedule from outside, as of the moment the core had reached `major` (see above); a
  // major below 0 means now.
  void schedule_outside(int64_t t, uint8_t kind, uint32_t target, int64_t major) {
    push(t, outside_key(major), target, kind);
  }
  int64_t major() const { return major_; }

  bool empty() const { return heap_.empty(); }
  const Event& top() const { return heap_.front(); }
  Event pop();
  size_t pending() const { return heap_.size(); }
  // The heap's i-th entry (0: the top; 1..4: the top's children, among which the event after
  // it is): for looking ahead only, never for ordering.
  const Event& at(size_t i) const { return heap_[i]; }

 private:
  uint64_t outside_key(int64_t major);
  // The fields by value, not an Event built by the caller: an Event just written to the
  // caller's stack field by field and read back whole (a 16-byte load over two 8-byte stores)
  // cannot be forwarded from the stores and waits for them, which was most of push's time.
  void push(int64_t t, uint64_t key, uint32_t target, uint8_t kind);

  std::vector<Event> heap_;
  int64_t major_ = 0;
  int64_t outside_major_ = -1;
  uint64_t minor_ = 0;
};

}  // namespace dlcp
