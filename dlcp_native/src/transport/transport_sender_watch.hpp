// Which of a host stack's senders can have work (host/host_stack.hpp): those given input since
// the stack last polled them (a message in `Sender::send`, from the agent, the collectives or
// the driver in Python; an answer in `Sender::receive`), which the sender tells the watch
// itself, and those whose timeout has come. Any other sender's poll would put out nothing and
// change nothing (its last poll sent what its window, pulls and pacing let it, and no timer
// of it is due), so the stack visits no other: most of a host's senders are idle at any
// moment, and the first touch of each one's fields, per packet the host took in, was a cache
// miss a sender.
//
// The fields a packet's flush reads when no sender has work (`touched`, `next_due`) lie at the
// front: one cache line a stack instead of a few a sender.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

namespace dlcp::transport {

class SenderWatch {
 public:
  static constexpr int64_t NO_DUE = std::numeric_limits<int64_t>::max();  // no timeout

  // A sender joins as number `i` (the next), with work to look at.
  uint32_t add() {
    const uint32_t i = static_cast<uint32_t>(due_.size());
    due_.push_back(NO_DUE);
    is_touched_.push_back(0);
    touch(i);
    return i;
  }
  // Sender i was given input.
  void touch(uint32_t i) {
    if (!is_touched_[i]) {
      is_touched_[i] = 1;
      touched_.push_back(i);
    }
  }
  bool any_touched() const { return !touched_.empty(); }
  const std::vector<uint32_t>& touched() const { return touched_; }
  // The earliest timeout of any sender (NO_DUE: none), exact.
  int64_t next_due() const { return next_due_; }

  // The senders to poll at `now`, in the order they joined, into `out` (left empty before):
  // the touched ones and those whose timeout has come. Each counts as untouched and without
  // a timeout until `set_due` says its new one.
  void take_due(int64_t now, std::vector<uint32_t>& out) {
    while (!dues_.empty() && dues_.front().first <= now) {
      const auto [t, i] = dues_.front();
      std::pop_heap(dues_.begin(), dues_.end(), std::greater<>{});
      dues_.pop_back();
      if (due_[i] == t) {
        due_[i] = NO_DUE;
        touch(i);
      }
    }
    out.swap(touched_);  // the watch starts a new list with `out`'s (empty) one
    if (out.size() > 1) std::sort(out.begin(), out.end());
    for (const uint32_t i : out) is_touched_[i] = 0;
    refresh();
  }
  // Sender i's next timeout is now t. `refresh` afterwards brings `next_due` up to date.
  void set_due(uint32_t i, std::optional<int64_t> t) {
    const int64_t d = t ? *t : NO_DUE;
    if (due_[i] == d) return;  // its entry stands
    due_[i] = d;
    if (!t) return;
    if (dues_.size() >= 4 * due_.size() + 64) {  // mostly stale (an RTO moves on every ACK): rebuilt
      dues_.clear();
      for (uint32_t j = 0; j < due_.size(); ++j)
        if (due_[j] != NO_DUE) dues_.emplace_back(due_[j], j);
      std::make_heap(dues_.begin(), dues_.end(), std::greater<>{});
      return;
    }
    dues_.emplace_back(d, i);
    std::push_heap(dues_.begin(), dues_.end(), std::greater<>{});
  }
  void refresh() {
    while (!dues_.empty() && due_[dues_.front().second] != dues_.front().first) {
      std::pop_heap(dues_.begin(), dues_.end(), std::greater<>{});
      dues_.pop_back();
    }
    next_due_ = dues_.empty() ? NO_DUE : dues_.front().first;
  }

 private:
  std::vector<uint32_t> touched_;  // sender indices, each once
  int64_t next_due_ = NO_DUE;
  // due_[i]: sender i's next timeout as it last said (NO_DUE: none); dues_: a min-heap of
  // (due, i), an entry stale once due_[i] differs; every due_[i] but NO_DUE has an entry.
  std::vector<int64_t> due_;
  std::vector<std::pair<int64_t, uint32_t>> dues_;
  std::vector<uint8_t> is_touched_;
};

}  // namespace dlcp::transport
