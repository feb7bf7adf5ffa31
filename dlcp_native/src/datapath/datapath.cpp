// See datapath.hpp. Each step names the Python it mirrors; the way in is datapath_ingress.cpp.
#include "datapath/datapath.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>
#include <tuple>

#include "datapath/clock.hpp"
#include "datapath/frames.hpp"

namespace dlcp {

namespace {
constexpr int64_t MAX_SEND_AHEAD_NS = 200000;  // sendahead.py
constexpr int64_t SEND_AHEAD_STEP_NS = 1000;
}  // namespace

static std::vector<int> fds_of(const std::vector<DatapathPort>& ports) {
  std::vector<int> fds;
  for (const DatapathPort& p : ports) fds.push_back(p.fd);
  return fds;
}

Datapath::Datapath(Switch& sw, const std::vector<DatapathPort>& ports, std::unordered_map<uint64_t, int32_t> routes,
                   std::vector<int32_t> port_route, std::vector<std::vector<int>> flood, size_t batch, int wake_fd,
                   int64_t sample_ns, int64_t pending_limit, const std::vector<double>& edges,
                   std::pair<int64_t, int64_t> thresholds)
    : lateness(edges), rx_wait(edges), sw_(sw), ports_(ports), routes_(std::move(routes)), port_route_(std::move(port_route)),
      flood_(std::move(flood)), batch_(batch), wake_fd_(wake_fd), sample_ns_(sample_ns),
      pending_limit_(pending_limit), tx_(fds_of(ports), batch) {
  if (ports_.size() != sw_.ports.size() || port_route_.size() != ports_.size() || flood_.size() != ports_.size())
    throw std::invalid_argument("a datapath needs one port, port route and flood list per switch port");
  std::tie(lateness.threshold, rx_wait.threshold) = thresholds;
  counters.resize(ports_.size());
  for (const DatapathPort& p : ports_) {
    rings_.push_back(p.ring_frame_size ? std::make_unique<RxRing>(p.fd, p.ring_frame_size) : nullptr);
    nics_.emplace_back();
    if (p.paced) nics_.back().emplace(p.rate_bps, p.delay_ns, HOST_BUFFER_BYTES, ETHERNET_OVERHEAD, p.control_first);
  }
}

// When the loop next has to act: a departure (less the send-ahead) or a frame's arrival at
// the end of a host's link, whichever is first; none if idle.
std::optional<int64_t> Datapath::next_wake(int64_t ahead) const {
  std::optional<int64_t> t = sw_.next_event_time();
  if (t) *t -= ahead;
  if (!arriving_.empty() && (!t || arriving_.top().t < *t)) t = arriving_.top().t;
  if (waiting_)  // a waiting frame starts when its link is free
    for (size_t i = 0; i < nics_.size(); ++i)
      if (nics_[i] && nics_[i]->waiting()) {
        const int64_t free_at = nics_[i]->free_at;
        if (!t || free_at < *t) t = free_at;
      }
  return t;
}

// python_loop.py `run_model`, one round per iteration.
Datapath::Return Datapath::run(int64_t until, int64_t clock_offset) {
  std::vector<pollfd> fds;
  for (const DatapathPort& p : ports_) fds.push_back({p.fd, POLLIN, 0});
  fds.push_back({wake_fd_, POLLIN, 0});
  std::vector<size_t> ready;
  while (true) {
    const std::optional<int64_t> t = next_wake(send_ahead);
    int64_t now = monotonic_ns();
    if (now >= until) return UNTIL;
    if (int64_t(samples.size()) >= pending_limit_) return FULL;
    if (wake_period_ns > 0 && now < acted_ + wake_period_ns) {
      const timespec ts = timespec_of(std::min(acted_ + wake_period_ns, until));
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
      continue;
    }
    ++loops;
    // With rings, frames already waiting are seen without a syscall; poll (and a sleep, and
    // the sender's wake-up of us) only when every ring is empty.
    ready.clear();
    for (size_t i = 0; i < ports_.size(); ++i)
      if (rings_[i] && rings_[i]->ready()) ready.push_back(i);
    if (ready.empty()) {
      int64_t timeout = until - now;
      if (t) timeout = std::min(timeout, std::max<int64_t>(*t - now, 0));
      const timespec ts = timespec_of(timeout);
      for (pollfd& f : fds) f.revents = 0;
      if (ppoll(fds.data(), fds.size(), &ts, nullptr) > 0) {
        if (fds.back().revents) return WAKE;
        for (size_t i = 0; i < ports_.size(); ++i)
          if (fds[i].revents) ready.push_back(i);
      }
    }
    const size_t sources = ready.size();
    acted_ = monotonic_ns();
    for (size_t port : ready) read_port(port, clock_offset);
    now = monotonic_ns();
    settle(now, sources);
    if (!due_.empty()) take_due();
    now = monotonic_ns();
    if (sample_ns_ > 0 && now >= next_sample_) {
      samples.push_back(now);
      for (const auto& p : sw_.ports) samples.push_back(p->bytes);
      next_sample_ = now + sample_ns_;
    }
    floor_ = now + send_ahead;
    send_due(floor_);
  }
}

// python_loop.py `take`. The frame read is copied once, from the ring; the packet the switch
// holds keeps that buffer (its last flood copy too), the others get copies.
void Datapath::take(int64_t t, int port, std::vector<uint8_t>& frame) {
  Packet pkt;
  switch (parse_frame(frame.data(), frame.size(), pkt)) {
    case Parsed::MALFORMED: ++malformed; return;
    case Parsed::INVALID_DLCP: ++invalid_dlcp; return;
    case Parsed::PACKET: break;
  }
  if (frame[0] & 1) {  // group bit of the destination MAC
    const std::vector<int>& outs = flood_[port];
    DatapathPortCounters& c = counters[port];
    if (outs.empty()) {
      ++c.not_flooded;
      return;
    }
    ++c.flood_frames;
    c.flood_copies += int64_t(outs.size());
    for (size_t k = 0; k < outs.size(); ++k) {
      pkt.dst = port_route_[outs[k]];
      receive(pkt, port, t, frame, k + 1 == outs.size());
    }
    return;
  }
  const auto it = routes_.find(mac_key(frame.data()));
  pkt.dst = it == routes_.end() ? -1 : it->second;
  receive(pkt, port, t, frame, true);
}

// last: the frame's buffer is not needed after this packet, so the switch's slot takes it
// (and `frame` gets the slot's old buffer to reuse).
void Datapath::receive(Packet pkt, int port, int64_t t, std::vector<uint8_t>& frame, bool last) {
  pkt.uid = uid_++;
  Slot slot = NO_SLOT;
  sw_.receive(pkt, port, t, &slot);
  if (slot == NO_SLOT) return;
  if (slot >= held_.size()) held_.resize(slot + 1);
  if (last)
    held_[slot].swap(frame);
  else
    held_[slot].assign(frame.begin(), frame.end());
}

// sendahead.py `send_due`; the frames leave together after the poll (tx_batch.hpp), each
// one's lateness taken as it is added, as the Python loop takes it before its send. The batch
// borrows the held frames: the model gives no slot a new packet until the next receive.
void Datapath::send_due(int64_t until) {
  departures_.clear();
  sw_.poll(until, departures_);
  int64_t ahead = send_ahead;
  for (const Departure& d : departures_) {
    std::vector<uint8_t>& frame = held_[d.slot];
    if (d.pkt.rewrite) {
      if ((d.pkt.rewrite & REWRITE_TRIM) && !trim_frame(frame))
        ++rewrite_errors;  // goes out unchanged, as in Python
      else if (d.pkt.rewrite & REWRITE_CE)
        mark_ce(frame);
    }
    const int64_t late = monotonic_ns() - d.pkt.depart;
    lateness.add(late);
    if (late > 0) {
      if (ahead < MAX_SEND_AHEAD_NS) ahead += SEND_AHEAD_STEP_NS;
    } else if (ahead > 0) {
      ahead -= SEND_AHEAD_STEP_NS;
    }
    tx_.add(d.port, frame.data(), frame.size());
  }
  tx_.flush();
  send_ahead = ahead;
}

// python_loop.py `drain_model`.
void Datapath::drain(int64_t deadline) {
  while (true) {
    const std::optional<int64_t> t = next_wake(0);
    int64_t now = monotonic_ns();
    if (!t || now > deadline) break;
    if (*t > now) {
      const timespec ts = timespec_of(std::min(*t, deadline));
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
    }
    now = monotonic_ns();
    for (size_t i = 0; waiting_ && i < nics_.size(); ++i) start_by(i, now);
    due_from_links(now);
    if (!due_.empty()) take_due();
    floor_ = now;
    send_due(now);
  }
  // Still on a link at the deadline: handed over at once, so that each is counted.
  for (size_t i = 0; waiting_ && i < nics_.size(); ++i) start_by(i, INT64_MAX);
  due_from_links(INT64_MAX);
  if (!due_.empty()) take_due();
}

}  // namespace dlcp
