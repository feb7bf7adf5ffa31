// What this machine charges the emulator's kind of work, measured (dlcp_emu/experiment/
// dilation.py reads it to choose a time dilation): how late a blocked process wakes for a
// datagram, and the CPU one datagram exchange between two processes costs. Loopback UDP
// only, bounded in count and time.
#pragma once

#include <cstdint>
#include <vector>

namespace dlcp::probe {

// Each of `samples` datagrams sent `gap_ns` apart to a thread blocked in ppoll: how long
// after the kernel stamped it (SO_TIMESTAMPNS) the thread had it in hand, in ns.
std::vector<int64_t> wake_lag(int samples, int64_t gap_ns);

struct RoundTrips {
  int64_t count;     // round trips completed
  int64_t cpu_ns;    // the process's CPU time over them (both threads, kernel work included)
  int64_t wall_ns;
};

// `count` datagrams bounced between two threads blocked in recv: each one a send, a wake-up
// and a receive on either side, the emulator's cost of moving a packet one hop.
RoundTrips round_trips(int count);

}  // namespace dlcp::probe
