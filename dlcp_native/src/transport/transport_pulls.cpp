#include "transport/transport_pulls.hpp"

#include <algorithm>

namespace dlcp::transport {

void PullPacer::request(PullSource src, int64_t now, PullHeader h) {
  header_[src] = h;
  if (turn_.empty() && (!any_ || now - last_ >= gap_ns)) {
    any_ = true;
    last_ = now;
    released_[src] = uint16_t(released(src) + 1);
    return;
  }
  int64_t& w = waiting_[src];
  if (w == 0) turn_.push_back(src);
  w += 1;
}

void PullPacer::flush(PullSource src) {
  const auto it = waiting_.find(src);
  if (it == waiting_.end()) return;
  const bool queued = it->second != 0;
  waiting_.erase(it);
  if (queued) turn_.erase(std::find(turn_.begin(), turn_.end(), src));
}

std::optional<PullSource> PullPacer::release(int64_t now) {
  if (turn_.empty() || now < last_ + gap_ns) return std::nullopt;
  const PullSource src = turn_.front();
  turn_.pop_front();
  auto it = waiting_.find(src);
  if (--it->second)
    turn_.push_back(src);
  else
    waiting_.erase(it);
  last_ = now;
  released_[src] = uint16_t(released(src) + 1);
  return src;
}

}  // namespace dlcp::transport
