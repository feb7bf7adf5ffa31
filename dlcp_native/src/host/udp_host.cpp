// See udp_host.hpp. The steps are udp_driver.py's (`read`, `flush`) in hostd.py's loop order:
// read, then flush at one `now`, then wait for the socket or the next timeout.
#include "host/udp_host.hpp"

#include <fcntl.h>
#include <netinet/ip.h>
#include <poll.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "datapath/clock.hpp"
#include "wire/header_codec.hpp"

namespace dlcp {

namespace {

using namespace transport;

constexpr size_t RECV_BUFFER = 1 << 16;
constexpr int SOCKET_BUFFER = 4 << 20;
constexpr uint8_t ECN_MASK = 3, ECT0 = 2, CE = 3;

bool ecn_capable(uint8_t type) { return type == DATA || type == PROBE; }  // transport/ecn.py
// What a `priority` host queue sends ahead of data (emu/host_egress.py `is_control`).
bool is_control(const Header& h) { return h.type != DATA || h.payload_len == 0; }

int64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// A payload-free DATA packet (sizes only) still fills its datagram: zeros.
const uint8_t* zeros() {
  static const std::vector<uint8_t> z(MAX_PAYLOAD, 0);
  return z.data();
}

}  // namespace

UdpHost::UdpHost(int fd, std::unique_ptr<HostStack> stack, std::vector<sockaddr_in> peers, bool ecn,
                 bool measure_lag, size_t batch, int wake_fd, size_t lag_limit, bool control_first)
    : fd_(fd), wake_fd_(wake_fd), stack_(std::move(stack)), peers_(std::move(peers)), ecn_(ecn),
      measure_lag_(measure_lag), control_first_(control_first), batch_(std::max<size_t>(batch, 1)),
      lag_limit_(lag_limit) {
  if (fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) | O_NONBLOCK) < 0) throw std::runtime_error("UdpHost: fcntl failed");
  for (int opt : {SO_RCVBUF, SO_SNDBUF})
    setsockopt(fd_, SOL_SOCKET, opt, &SOCKET_BUFFER, sizeof SOCKET_BUFFER);  // capped by the kernel: fine
  const int on = 1;
  if (ecn_ && setsockopt(fd_, IPPROTO_IP, IP_RECVTOS, &on, sizeof on) < 0)
    throw std::runtime_error("UdpHost: IP_RECVTOS refused");
  if (measure_lag_ && setsockopt(fd_, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) < 0)
    throw std::runtime_error("UdpHost: SO_TIMESTAMPNS refused");
  // Timed waits end when asked, not up to 50 us later (the default slack): the transport's
  // pacing and timers are the schedule.
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
  rx_buf_.assign(batch_, std::vector<uint8_t>(RECV_BUFFER));
  rx_addr_.resize(batch_);
  rx_control_.resize(batch_);
  rx_iov_.resize(batch_);
  rx_msgs_.resize(batch_);
  tx_iov_.resize(batch_);
  tx_control_.resize(batch_);
  lag_.reserve(lag_limit_);
}

std::vector<int64_t> UdpHost::take_rx_lag() {
  std::vector<int64_t> out;
  out.reserve(lag_.size());
  out.insert(out.end(), lag_.begin() + lag_at_, lag_.end());  // oldest first
  out.insert(out.end(), lag_.begin(), lag_.begin() + lag_at_);
  lag_.clear();
  lag_at_ = 0;
  return out;
}

bool UdpHost::read_batch() {
  for (size_t i = 0; i < batch_; ++i) {
    rx_iov_[i] = {rx_buf_[i].data(), rx_buf_[i].size()};
    msghdr& m = rx_msgs_[i].msg_hdr;
    m = {};
    m.msg_name = &rx_addr_[i];
    m.msg_namelen = sizeof(sockaddr_in);
    m.msg_iov = &rx_iov_[i];
    m.msg_iovlen = 1;
    if (ecn_ || measure_lag_) {
      m.msg_control = rx_control_[i].bytes;
      m.msg_controllen = sizeof rx_control_[i].bytes;
    }
  }
  while (true) {
    const int n = recvmmsg(fd_, rx_msgs_.data(), unsigned(batch_), MSG_DONTWAIT, nullptr);
    if (n > 0) {
      rx_count_ = size_t(n);
      rx_next_ = 0;
      return true;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {  // an ICMP error reported here
      ++counters.socket_errors;
      continue;
    }
    return false;
  }
}

void UdpHost::give(size_t i, int64_t now) {
  const mmsghdr& mm = rx_msgs_[i];
  const uint8_t* buf = rx_buf_[i].data();
  const size_t n = mm.msg_len;
  bool ce = false;
  for (cmsghdr* c = CMSG_FIRSTHDR(&mm.msg_hdr); c; c = CMSG_NXTHDR(const_cast<msghdr*>(&mm.msg_hdr), c)) {
    if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
      ce = (*CMSG_DATA(c) & ECN_MASK) == CE;
    } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_TIMESTAMPNS) {
      timespec ts;
      std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
      const int64_t lag = realtime_ns() - (int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec);
      if (lag_.size() < lag_limit_) {
        lag_.push_back(lag);
      } else if (lag_limit_) {
        lag_[lag_at_] = lag;
        lag_at_ = (lag_at_ + 1) % lag_limit_;
      }
    }
  }
  Header h;
  if (unpack_header(buf, n, h) != HeaderError::NONE) {
    ++counters.malformed;
    return;
  }
  ++counters.received;
  if (h.src_rank >= peers_.size()) peers_.resize(size_t(h.src_rank) + 1, sockaddr_in{});
  if (peers_[h.src_rank].sin_family == 0) peers_[h.src_rank] = rx_addr_[i];  // learnt, as setdefault
  const InPayload payload{buf + HEADER_LEN, n - HEADER_LEN, false};
  stack_->receive(h, payload, now, ce);
}

bool UdpHost::agent_has_work(int64_t now) const {
  return stack_->needs_agent(now) || !stack_->completions.empty();
}

bool UdpHost::deliver() {
  while (true) {
    while (rx_next_ < rx_count_) {
      const int64_t now = monotonic_ns();  // each datagram its own time, as udp_driver.py
      give(rx_next_++, now);
      if (agent_has_work(now)) return true;
    }
    if (!read_batch()) return false;
  }
}

void UdpHost::flush(int64_t now) {
  out_.clear();
  stack_->poll(now, out_);
  for (OutPacket& p : out_) {
    const uint16_t dst = p.h.dst_rank;
    if (dst >= peers_.size() || peers_[dst].sin_family == 0) {
      ++counters.unroutable;
      continue;
    }
    const bool ect = ecn_ && ecn_capable(p.h.type);
    std::deque<Outgoing>& q = control_first_ && is_control(p.h) ? tx_ctl_ : tx_;
    Outgoing& o = q.emplace_back(Outgoing{std::move(p), {}, peers_[dst], ect});
    pack_header(o.out.h, o.header.data());
  }
  send_waiting();
}

void UdpHost::send_waiting() {
  static const int ect0 = ECT0;
  std::vector<mmsghdr>& msgs = tx_msgs_;
  while (!tx_ctl_.empty() || !tx_.empty()) {
    // A batch: control packets first, then data (tx_ctl_ is empty for a `fifo` queue).
    const size_t nc = std::min(tx_ctl_.size(), batch_);
    const size_t n = std::min(nc + tx_.size(), batch_);
    msgs.assign(n, mmsghdr{});
    for (size_t i = 0; i < n; ++i) {
      Outgoing& o = i < nc ? tx_ctl_[i] : tx_[i - nc];
      const InPayload in = o.out.in_payload();
      std::array<iovec, 2>& iov = tx_iov_[i];
      iov[0] = {o.header.data(), o.header.size()};
      iov[1] = {const_cast<uint8_t*>(in.absent ? zeros() : in.data), in.size};
      msghdr& m = msgs[i].msg_hdr;
      m.msg_name = &o.addr;
      m.msg_namelen = sizeof o.addr;
      m.msg_iov = iov.data();
      m.msg_iovlen = in.size ? 2 : 1;
      if (o.ect) {
        m.msg_control = tx_control_[i].bytes;
        m.msg_controllen = sizeof tx_control_[i].bytes;
        cmsghdr* c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = IPPROTO_IP;
        c->cmsg_type = IP_TOS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(c), &ect0, sizeof ect0);
      }
    }
    const int sent = sendmmsg(fd_, msgs.data(), unsigned(n), MSG_DONTWAIT);
    if (sent < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;  // the socket is full: wait for POLLOUT
      if (errno == EINTR) continue;
      ++counters.send_errors;  // e.g. ECONNREFUSED from an ICMP error: this one is lost
      (nc ? tx_ctl_ : tx_).pop_front();
      continue;
    }
    counters.sent += sent;
    for (size_t i = 0; i < size_t(sent); ++i) (i < nc ? tx_ctl_ : tx_).pop_front();
  }
}

UdpHost::Return UdpHost::run(int64_t until) {
  pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  while (true) {
    // Read before polling: an ACK waiting in the socket must not lose a race with a timer.
    if (deliver()) return AGENT;
    const int64_t now = monotonic_ns();
    if (agent_has_work(now)) return AGENT;  // its timer is due
    flush(now);
    if (!stack_->completions.empty()) return AGENT;  // polling completed a tensor
    if (now >= until) return UNTIL;
    const int64_t t = stack_->next_due();  // NO_DUE (none) is past any `until`
    const int64_t wake = t < until ? t : until;
    fds[0].events = short(POLLIN | (backlog() ? POLLOUT : 0));
    fds[0].revents = fds[1].revents = 0;
    const timespec ts = timespec_of(std::max<int64_t>(wake - now, 0));
    if (ppoll(fds, wake_fd_ >= 0 ? 2 : 1, &ts, nullptr) < 0) {
      if (errno == EINTR) return WAKE;  // a signal: Python's handler runs when we return
      throw std::runtime_error(std::string("UdpHost: ppoll: ") + std::strerror(errno));
    }
    if (wake_fd_ >= 0 && fds[1].revents) return WAKE;
    if (fds[0].revents & POLLOUT) send_waiting();
  }
}

}  // namespace dlcp
