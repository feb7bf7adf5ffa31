#include "datapath/forwarder.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <stdexcept>

#include "datapath/clock.hpp"
#include "datapath/frames.hpp"

namespace dlcp {

Forwarder::Forwarder(const std::vector<int>& fds, const std::vector<uint32_t>& ring_frame_sizes,
                     std::unordered_map<uint64_t, int> routes, std::vector<std::vector<int>> flood, size_t batch,
                     int wake_fd, size_t recv_size)
    : fds_(fds), routes_(std::move(routes)), flood_(std::move(flood)), batch_(batch), wake_fd_(wake_fd),
      buf_(recv_size), tx_(fds, batch) {
  if (ring_frame_sizes.size() != fds_.size() || flood_.size() != fds_.size())
    throw std::invalid_argument("a forwarder needs one ring size and flood list per port");
  for (size_t i = 0; i < fds_.size(); ++i)
    rings_.push_back(ring_frame_sizes[i] ? std::make_unique<RxRing>(fds_[i], ring_frame_sizes[i]) : nullptr);
  counters.rx_frames.assign(fds_.size(), 0);
}

void Forwarder::forward(size_t port, const uint8_t* frame, size_t n) {
  ++counters.rx_frames[port];
  if (frame[0] & 1) {
    for (int q : flood_[port]) tx_.add_copy(q, frame, n);
    return;
  }
  const auto it = routes_.find(mac_key(frame));
  if (it == routes_.end()) {
    ++counters.no_route;
    return;
  }
  tx_.add_copy(it->second, frame, n);
}

bool Forwarder::run(int64_t until) {
  std::vector<pollfd> fds;
  for (int fd : fds_) fds.push_back({fd, POLLIN, 0});
  fds.push_back({wake_fd_, POLLIN, 0});
  while (true) {
    const int64_t now = monotonic_ns();
    if (now >= until) return false;
    bool any = false;
    for (size_t i = 0; i < fds_.size(); ++i)
      if (rings_[i] && rings_[i]->ready()) {
        any = true;
        rings_[i]->drain(batch_, [&](const uint8_t* f, size_t n, int64_t) { forward(i, f, n); });
      }
    tx_.flush();
    if (any) continue;
    const timespec ts = timespec_of(until - now);
    for (pollfd& f : fds) f.revents = 0;
    if (ppoll(fds.data(), fds.size(), &ts, nullptr) <= 0) continue;
    if (fds.back().revents) return true;
    for (size_t i = 0; i < fds_.size(); ++i) {
      if (!fds[i].revents) continue;
      if (rings_[i]) {
        rings_[i]->drain(batch_, [&](const uint8_t* f, size_t n, int64_t) { forward(i, f, n); });
        continue;
      }
      for (size_t k = 0; k < batch_; ++k) {
        const ssize_t n = recv(fds_[i], buf_.data(), buf_.size(), MSG_DONTWAIT);
        if (n < 0) break;
        forward(i, buf_.data(), size_t(n));
      }
    }
    tx_.flush();
  }
}

}  // namespace dlcp
