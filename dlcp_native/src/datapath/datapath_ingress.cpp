// The loop's way in (dlcp_emu/emu/datapath/sockets.py drains, ingress.py `Ingress`): frames
// read from the ports, each at the time it arrived (a paced host's link replayed first), and
// handed to the switch in the order of those times once they are due.
#include "datapath/datapath.hpp"
#include "wire/wire_layout.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <utility>

namespace dlcp {

namespace {

uint16_t be16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }

// ingress.py `is_control_frame` (host_egress.py's filters): IPv4 UDP with the DLCP magic,
// not DATA, or DATA with no payload.
bool is_control_frame(const std::vector<uint8_t>& f) {
  if (f.size() < wire::OFF_PAYLOAD_LEN + 2 || f[wire::OFF_IP_VER_IHL] != 0x45 || f[wire::OFF_IP_PROTO] != 17)
    return false;
  if (be16(&f[wire::OFF_ETHERTYPE]) != 0x0800 || be16(&f[wire::OFF_MAGIC]) != wire::MAGIC) return false;
  return f[wire::OFF_TYPE] != wire::DATA || be16(&f[wire::OFF_PAYLOAD_LEN]) == 0;
}

}  // namespace

void Datapath::hand(size_t port, int64_t t, std::vector<uint8_t>&& frame) {
  auto& nic = *nics_[port];
  start_by(port, t, true);  // frames whose turn came before t: `frame`, handed later, cannot pass them
  const int64_t size = int64_t(frame.size());
  const bool control = is_control_frame(frame);
  if (!nic.enqueue_item(std::move(frame), size, control, t)) return;  // counted by the NIC
  ++waiting_;
  std::vector<uint8_t> started;
  int64_t arrival;
  if (nic.start_item(t, started, arrival)) {  // the link is free at t: one starts, control first
    --waiting_;
    arriving_.push({arrival, seq_++, int(port), std::move(started)});
  }
}

void Datapath::start_by(size_t port, int64_t t, bool before) {
  if (!nics_[port]) return;  // not a paced host's port
  auto& nic = *nics_[port];
  std::vector<uint8_t> frame;
  int64_t arrival;
  // Every frame waiting was handed over before the link fell free: it starts when it is free.
  while (nic.waiting()) {
    const int64_t at = nic.free_at;
    if (at > t || (before && at == t)) break;
    nic.start_item(at, frame, arrival);
    --waiting_;
    arriving_.push({arrival, seq_++, int(port), std::move(frame)});
  }
}

// sockets.py drain functions: the ring's frames with the kernel's delivery times, or recv's
// with none (the time they were read is all there is).
void Datapath::read_port(size_t port, int64_t clock_offset) {
  DatapathPortCounters& c = counters[port];
  auto keep = [&](const uint8_t* data, size_t n, bool stamped, int64_t t) {
    std::vector<uint8_t> frame;
    if (!spare_.empty()) {
      frame.swap(spare_.back());
      spare_.pop_back();
    }
    frame.assign(data, data + n);
    got_.push_back({t, stamped, int(port), std::move(frame)});
    ++c.rx_frames;
  };
  if (rings_[port]) {
    rings_[port]->drain(batch_, [&](const uint8_t* data, size_t n, int64_t stamp) {
      keep(data, n, true, stamp - clock_offset);
    });
    return;
  }
  std::vector<uint8_t>& buf = recv_buf_;
  buf.resize(ports_[port].recv_size);
  for (size_t k = 0; k < batch_; ++k) {
    const ssize_t n = recv(ports_[port].fd, buf.data(), buf.size(), MSG_DONTWAIT);
    if (n < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) ++c.rx_errors;
      break;
    }
    keep(buf.data(), size_t(n), false, 0);
  }
}

// ingress.py `Ingress.arrivals`: when each frame read arrived (the kernel's time, never
// later than now; a paced host's link replayed first), and those still on a link due by now.
void Datapath::settle(int64_t now, size_t sources) {
  for (Got& g : got_) {
    int64_t t = g.stamped ? g.t : now;
    if (t > now) t = now;
    if (g.stamped) rx_wait.add(now - t);
    if (nics_[g.port] && nics_[g.port]->control_first) {
      hand(size_t(g.port), t, std::move(g.frame));
      continue;
    }
    if (nics_[g.port]) {
      const std::optional<int64_t> end = nics_[g.port]->transmit(int64_t(g.frame.size()), t);
      if (!end) {  // counted by the NIC
        spare_.push_back(std::move(g.frame));
        continue;
      }
      t = *end;
      if (t > now) {
        arriving_.push({t, seq_++, g.port, std::move(g.frame)});
        continue;
      }
    }
    due_.push_back({t > floor_ ? t : floor_, 0, g.port, std::move(g.frame)});
  }
  got_.clear();
  for (size_t i = 0; waiting_ && i < nics_.size(); ++i) start_by(i, now);
  if (!arriving_.empty() && arriving_.top().t <= now) {
    ++sources;
    due_from_links(now);
  }
  if (sources > 1)
    std::stable_sort(due_.begin(), due_.end(), [](const Arrival& a, const Arrival& b) { return a.t < b.t; });
}

void Datapath::due_from_links(int64_t now) {
  while (!arriving_.empty() && arriving_.top().t <= now) {
    // top() is const; the frame is moved out just before the pop discards the entry.
    Arrival& a = const_cast<Arrival&>(arriving_.top());
    due_.push_back({a.t > floor_ ? a.t : floor_, 0, a.port, std::move(a.frame)});
    arriving_.pop();
  }
}

void Datapath::take_due() {
  for (Arrival& a : due_) {
    take(a.t, a.port, a.frame);
    spare_.push_back(std::move(a.frame));  // what the switch no longer holds, for the next read
  }
  due_.clear();
}

}  // namespace dlcp
