#include "host/worker_collectives.hpp"

#include <stdexcept>
#include <string>

namespace dlcp {

void Collective::check() const {
  if (mag_ptr.size() != steps.size() + 1 || mag_ptr.front() != 0 || mag_ptr.back() != int64_t(mags.size()))
    throw std::invalid_argument("collective: mag_ptr must be one offset a step and one more, from 0 to len(mags)");
  for (size_t k = 0; k < steps.size(); ++k) {
    const CollectiveStep& s = steps[k];
    const int64_t n = mag_ptr[k + 1] - mag_ptr[k];
    if (n < 0) throw std::invalid_argument("collective: mag_ptr must not decrease");
    if (s.send_dst >= 0 ? (s.send_stop <= s.send_start || n == 0) : n != 0)
      throw std::invalid_argument("collective: step " + std::to_string(k) +
                                  ": a send needs a non-empty byte range and magnitudes, no send none");
    if (s.recv_src >= 0 && s.recv_stop <= s.recv_start)
      throw std::invalid_argument("collective: step " + std::to_string(k) + ": a receive needs a non-empty byte range");
  }
  if (priority < 0 || priority > 7) throw std::invalid_argument("collective: priority must be in 0..7");
}

bool WorkerCollectives::begin(Collective c, int64_t now) {
  if (active_ || ended_) throw std::invalid_argument("rank " + std::to_string(rank) + ": a collective is running");
  c.check();
  active_ = std::move(c);
  _progress(now);
  return ended_.has_value();
}

void WorkerCollectives::on_message(int64_t src, int64_t iteration, int64_t tid, ByteRanges lost, int64_t now) {
  inbox_[{iteration, tid, src}] = std::move(lost);
  _progress(now);
}

ByteRanges WorkerCollectives::take_ended() {
  if (!ended_) throw std::invalid_argument("rank " + std::to_string(rank) + ": no collective has ended");
  ByteRanges lost = std::move(*ended_);
  ended_.reset();
  return lost;
}

// Worker._progress for one collective: Python's takes over where it ends (_finish_collective)
void WorkerCollectives::_progress(int64_t now) {
  (void)now;
  if (!active_) return;
  Collective& c = *active_;
  while (c.k < c.steps.size()) {
    const CollectiveStep& s = c.steps[c.k];
    if (s.send_dst >= 0 && !c.sent) {
      _send_size(c, s);
      c.sent = true;
    }
    if (s.recv_src >= 0) {
      const auto m = inbox_.find({c.iteration, s.tensor_id, s.recv_src});
      if (m == inbox_.end()) return;
      for (const auto& [a, b] : m->second) c.lost.emplace_back(s.recv_start + a, s.recv_start + b);
      inbox_.erase(m);
    }
    c.k += 1;
    c.sent = false;
  }
  ended_ = std::move(c.lost);
  active_.reset();
}

void WorkerCollectives::_send_size(const Collective& c, const CollectiveStep& s) {
  const size_t k = c.k;
  outbox_.push_back({s.send_dst, c.iteration, s.tensor_id, c.priority, s.send_stop - s.send_start, c.tclass,
                     std::vector<double>(c.mags.begin() + c.mag_ptr[k], c.mags.begin() + c.mag_ptr[k + 1])});
}

}  // namespace dlcp
