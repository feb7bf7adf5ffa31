#include "transport/transport_pair.hpp"

#include <algorithm>
#include <functional>
#include <vector>

namespace dlcp::transport {

// CPython's random_seed for an int: its 32-bit words, least significant first, into the
// reference init_by_array of MT19937.
PyRandom::PyRandom(uint64_t seed) {
  uint32_t key[2] = {uint32_t(seed), uint32_t(seed >> 32)};
  const int keyused = seed >> 32 ? 2 : 1;
  mt_[0] = 19650218u;
  for (int i = 1; i < 624; ++i) mt_[i] = 1812433253u * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + uint32_t(i);
  int i = 1, j = 0;
  for (int k = std::max(624, keyused); k; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525u)) + key[j] + uint32_t(j);
    ++i;
    ++j;
    if (i >= 624) {
      mt_[0] = mt_[623];
      i = 1;
    }
    if (j >= keyused) j = 0;
  }
  for (int k = 623; k; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941u)) - uint32_t(i);
    ++i;
    if (i >= 624) {
      mt_[0] = mt_[623];
      i = 1;
    }
  }
  mt_[0] = 0x80000000u;
}

uint32_t PyRandom::next() {
  if (index_ >= 624) {
    for (int k = 0; k < 624; ++k) {
      const uint32_t y = (mt_[k] & 0x80000000u) | (mt_[(k + 1) % 624] & 0x7fffffffu);
      mt_[k] = mt_[(k + 397) % 624] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    index_ = 0;
  }
  uint32_t y = mt_[index_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

double PyRandom::random() {
  const uint32_t a = next() >> 5, b = next() >> 6;
  return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

int64_t PairChannel::transmit(int64_t payload_len, int64_t now) {
  sent += 1;
  if (loss_ != 0 && rng_.random() < loss_) {
    lost += 1;
    return -1;
  }
  double start = double(now);
  if (rate_bps_ != 0) {
    const double tx = double(payload_len + FRAME_OVERHEAD) * 8e9 / rate_bps_;
    start = (busy_until_ > double(now) ? busy_until_ : double(now)) + tx;
    busy_until_ = start;
  }
  return int64_t(start + double(delay_ns_));
}

namespace {

struct Arrival {
  int64_t t;
  uint64_t seq;
  bool to_receiver;
  OutPacket pkt;
};
struct Later {  // min-heap on (t, seq), as Python's heap of (t, seq, ...)
  bool operator()(const Arrival& a, const Arrival& b) const { return a.t != b.t ? a.t > b.t : a.seq > b.seq; }
};

}  // namespace

PairStats run_pair(Sender& sender, Receiver& receiver, PairChannel& forward, PairChannel& backward,
                   int64_t max_events) {
  std::vector<Arrival> heap;
  std::vector<OutPacket> out;
  uint64_t seq = 0;
  int64_t now = 0;
  PairStats st;
  auto flush = [&](bool from_sender) {
    out.clear();
    if (from_sender)
      sender.poll(now, out);
    else
      receiver.poll(now, out);
    PairChannel& ch = from_sender ? forward : backward;
    for (OutPacket& p : out) {
      st.packets += 1;
      const int64_t t = ch.transmit(p.h.payload_len, now);
      if (t < 0) continue;
      heap.push_back({t, seq++, from_sender, std::move(p)});
      std::push_heap(heap.begin(), heap.end(), Later{});
    }
  };
  while (true) {
    flush(true);
    flush(false);
    if (sender.pending() == 0) break;
    st.events += 1;
    if (st.events > max_events) {
      st.stuck = true;
      break;
    }
    std::optional<int64_t> t = sender.next_timeout();
    if (!heap.empty() && (!t || heap.front().t < *t)) t = heap.front().t;
    if (!t) {
      st.stuck = true;
      break;
    }
    now = std::max(now, *t);
    while (!heap.empty() && heap.front().t <= now) {
      std::pop_heap(heap.begin(), heap.end(), Later{});
      Arrival a = std::move(heap.back());
      heap.pop_back();
      if (a.to_receiver)
        receiver.receive(a.pkt.h, a.pkt.in_payload(), now, false);
      else
        sender.receive(a.pkt.h, a.pkt.in_payload(), now, false);
    }
  }
  st.end_ns = now;
  return st;
}

}  // namespace dlcp::transport
