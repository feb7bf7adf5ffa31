// One sender and one receiver over two lossy links, in virtual time, all in the core: the
// loop `dlcp-emu bench transport` times (dlcp_emu/tools/bench_transport.py has the same loop
// in Python, step for step, and the same channel: a run's packet count and end time agree).
//
// The channel draws loss from Python's own generator (MT19937 seeded as random.Random(seed),
// random() as CPython computes it), so the native loop loses the very packets the Python
// loop loses.
#pragma once

#include <cstdint>

#include "transport/transport_receiver.hpp"
#include "transport/transport_sender.hpp"

namespace dlcp::transport {

// random.Random(seed).random(), for seeds 0 .. 2**64 - 1.
class PyRandom {
 public:
  explicit PyRandom(uint64_t seed);
  double random();

 private:
  uint32_t next();
  uint32_t mt_[624];
  int index_ = 624;
};

// One direction: each packet is lost with probability `loss`, else arrives `delay_ns` after it
// has serialised at `rate_bps` (0: no serialisation) behind the packets before it.
class PairChannel {
 public:
  PairChannel(uint64_t seed, double loss, int64_t delay_ns, double rate_bps)
      : rng_(seed), loss_(loss), delay_ns_(delay_ns), rate_bps_(rate_bps) {}
  // The arrival time, or -1 when lost.
  int64_t transmit(int64_t payload_len, int64_t now);

  int64_t sent = 0, lost = 0;

 private:
  PyRandom rng_;
  double loss_;
  int64_t delay_ns_;
  double rate_bps_;
  double busy_until_ = 0;
};

struct PairStats {
  int64_t events = 0, end_ns = 0, packets = 0;
  bool stuck = false;  // no event left, or max_events passed, before the sender finished
};

PairStats run_pair(Sender& sender, Receiver& receiver, PairChannel& forward, PairChannel& backward,
                   int64_t max_events);

}  // namespace dlcp::transport
