// One emulated host's data plane compiled: its transport endpoints (a HostStack, the packet
// half of dlcp_emu/host/stack.py or host/background.py) over its UDP socket, as
// dlcp_emu/emu/udp_driver.py `UdpDriver` drives the Python ones: the DLCP header and payload
// are the datagram (the kernel adds IP and UDP), data and probes leave ECT(0), a CE mark on
// arrival (IP_RECVTOS) reaches the endpoint, the kernel's arrival stamp gives the host's
// receive lag. Batched: recvmmsg in, sendmmsg out.
//
// The agent stays in Python and is called per message: `run` returns AGENT when the
// receiver has completed a tensor the agent reads, the agent's timer is due, or a sender
// knows a tensor complete (the Python loop then runs the agent, takes the completions and
// sets `stack().agent_timer`), and handles every packet and every transport timer itself.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "host/host_stack.hpp"

namespace dlcp {

struct UdpHostCounters {
  int64_t sent = 0, received = 0, malformed = 0, unroutable = 0;
  int64_t send_errors = 0;   // the kernel refused a datagram (an ICMP error): lost, as on a network
  int64_t socket_errors = 0; // an ICMP error read on the socket instead of a datagram
};

class UdpHost {
 public:
  // fd: a bound UDP socket (made non-blocking here); peers[rank]: where that rank listens
  // (sin_family 0: unknown until a datagram from it arrives); ecn: ECT(0) on data and probes,
  // CE read on arrival; measure_lag: read the kernel's arrival stamps (SO_TIMESTAMPNS);
  // wake_fd: readable when the caller has something to do (-1: none); control_first: the
  // `priority` host queue: control packets the socket has yet to take go ahead of data
  // (udp_driver.py; the kernel's queue does the same, emu/host_egress.py).
  UdpHost(int fd, std::unique_ptr<HostStack> stack, std::vector<sockaddr_in> peers, bool ecn, bool measure_lag,
          size_t batch, int wake_fd, size_t lag_limit, bool control_first = false);

  enum Return { UNTIL = 0, AGENT = 1, WAKE = 2 };
  // Until `until` (monotonic ns), the agent having to run, or the wake fd being readable.
  Return run(int64_t until);

  HostStack& stack() { return *stack_; }
  size_t backlog() const { return tx_ctl_.size() + tx_.size(); }
  UdpHostCounters counters;
  // ns from each datagram's arrival in the kernel to its handling: the latest lag_limit.
  std::vector<int64_t> take_rx_lag();

 private:
  struct Outgoing {
    transport::OutPacket out;
    std::array<uint8_t, transport::HEADER_LEN> header;
    sockaddr_in addr;
    bool ect;
  };
  bool agent_has_work(int64_t now) const;
  bool deliver();          // datagrams read or waiting, to the stack; true: the agent must run
  bool read_batch();       // one recvmmsg; false: nothing waiting
  void give(size_t i, int64_t now);  // datagram i of the batch to the stack, read at `now`
  void flush(int64_t now); // the endpoints' packets to the socket
  void send_waiting();

  int fd_, wake_fd_;
  std::unique_ptr<HostStack> stack_;
  std::vector<sockaddr_in> peers_;
  bool ecn_, measure_lag_, control_first_;
  size_t batch_, lag_limit_;
  // The receive batch: buffers, their addresses and control messages, what recvmmsg filled.
  std::vector<std::vector<uint8_t>> rx_buf_;
  std::vector<sockaddr_in> rx_addr_;
  template <size_t N>
  struct alignas(cmsghdr) Control {
    uint8_t bytes[N];
  };
  std::vector<Control<64>> rx_control_;  // IP_TOS and SO_TIMESTAMPNS
  std::vector<iovec> rx_iov_;
  std::vector<mmsghdr> rx_msgs_;
  size_t rx_count_ = 0, rx_next_ = 0;
  std::vector<int64_t> lag_;  // a ring of the latest lag_limit
  size_t lag_at_ = 0;
  std::vector<transport::OutPacket> out_;
  // To send, in order; the front ones the socket refused (EAGAIN). tx_ctl_: the control
  // packets of a `priority` host queue, sent before any of tx_.
  std::deque<Outgoing> tx_ctl_, tx_;
  std::vector<mmsghdr> tx_msgs_;
  std::vector<std::array<iovec, 2>> tx_iov_;
  std::vector<Control<CMSG_SPACE(sizeof(int))>> tx_control_;  // IP_TOS ECT(0)
};

}  // namespace dlcp
