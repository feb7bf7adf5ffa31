#include "datapath/machine_probe.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>

#include "datapath/clock.hpp"

namespace dlcp::probe {
namespace {

constexpr int64_t kTimeoutMs = 2000;   // a datagram that never comes ends the probe

int64_t clock_ns(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

[[noreturn]] void fail(const char* what) {
  throw std::runtime_error(std::string("machine probe: ") + what + ": " + std::strerror(errno));
}

// A UDP socket bound to an ephemeral loopback port, and that address.
struct Endpoint {
  int fd = -1;
  sockaddr_in addr{};
  Endpoint() {
    fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) fail("socket");
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) < 0) fail("bind");
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) < 0) fail("getsockname");
  }
  ~Endpoint() { close(fd); }
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;
  void send_to(const Endpoint& peer) const {
    char byte = 0;
    if (sendto(fd, &byte, 1, 0, reinterpret_cast<const sockaddr*>(&peer.addr), sizeof peer.addr) < 0)
      fail("sendto");
  }
  // Block until a datagram is here (false after the timeout).
  bool wait() const {
    pollfd p{fd, POLLIN, 0};
    const int n = poll(&p, 1, kTimeoutMs);
    if (n < 0) fail("poll");
    return n > 0;
  }
};

// A thread whose failure is rethrown where it is joined (a throw inside std::thread would
// end the process).
class Helper {
 public:
  template <typename F>
  explicit Helper(F body) : thread_([this, body] {
    try {
      body();
    } catch (...) {
      error_ = std::current_exception();
    }
  }) {}
  ~Helper() {   // left by a throw on the caller's side: the body ends by its own bounds
    if (thread_.joinable()) thread_.join();
  }
  Helper(const Helper&) = delete;
  Helper& operator=(const Helper&) = delete;
  void join() {
    thread_.join();
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace

std::vector<int64_t> wake_lag(int samples, int64_t gap_ns) {
  Endpoint rx, tx;
  const int one = 1;
  if (setsockopt(rx.fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one) < 0) fail("SO_TIMESTAMPNS");
  Helper sender([&] {
    int64_t at = monotonic_ns();
    for (int i = 0; i < samples; ++i) {
      at += gap_ns;
      const timespec ts = timespec_of(at);
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
      tx.send_to(rx);
    }
  });
  std::vector<int64_t> lags;
  lags.reserve(samples);
  char byte;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
  while (int(lags.size()) < samples && rx.wait()) {
    iovec io{&byte, 1};
    msghdr m{};
    m.msg_iov = &io;
    m.msg_iovlen = 1;
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    if (recvmsg(rx.fd, &m, 0) < 0) fail("recvmsg");
    const int64_t now = clock_ns(CLOCK_REALTIME);   // the stamps' clock
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
        timespec ts;
        std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
        lags.push_back(now - (int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec));
      }
    }
  }
  sender.join();
  return lags;
}

RoundTrips round_trips(int count) {
  Endpoint a, b;
  char byte;
  Helper echo([&] {
    for (int i = 0; i < count && b.wait(); ++i) {
      if (recv(b.fd, &byte, 1, 0) < 0) fail("recv");
      b.send_to(a);
    }
  });
  const int64_t cpu0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID), wall0 = monotonic_ns();
  int64_t done = 0;
  for (; done < count; ++done) {
    a.send_to(b);
    if (!a.wait()) break;
    if (recv(a.fd, &byte, 1, 0) < 0) fail("recv");
  }
  const RoundTrips out{done, clock_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0, monotonic_ns() - wall0};
  echo.join();
  return out;
}

}  // namespace dlcp::probe
