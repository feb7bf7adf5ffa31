// A host's NIC and the link it drives (switch_models/nic.py): the frames a host sends leave
// one after another at the link rate and arrive whole at the far end the link's delay later.
//
// The one NIC model of both backends. The simulator sends every host's packets through one;
// the emulator's switch port facing a paced host replays the host's link with one (the host's
// token bucket hands a frame over when its first bit would leave a real NIC, so the frame is
// whole at the switch one serialisation plus the delay later).
//
// Two queues, as a pipeline's `host_queue` says: `fifo` (`transmit`: a frame's departure is
// known when it is handed over), or `priority` (`enqueue`, then `start` whenever the link is
// free): control packets and bare headers (`is_header`) leave ahead of every data packet
// waiting, strict priority without preemption, as NDP's hosts send them.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include "switch/packet.hpp"
#include "switch/port.hpp"
#include "switch/ring.hpp"

namespace dlcp {

// A host's queue: deep enough for every window a transport keeps in flight; the emulated
// host's pacing queue holds the same.
constexpr int64_t HOST_BUFFER_BYTES = 64LL * 1024 * 1024;
constexpr int64_t ETH_MIN = 60;  // the shortest Ethernet frame without FCS; shorter ones are padded on the wire

class HostNic {
 public:
  HostNic(double rate_bps, int64_t delay_ns, int64_t buffer_bytes = HOST_BUFFER_BYTES,
          int64_t overhead_bytes = ETHERNET_OVERHEAD, bool control_first = false);

  // A frame of `size` bytes handed over at `now`: the time it has arrived whole at the far
  // end, or none when the queue ahead of it (what the link has yet to send) leaves no room
  // for it in `buffer_bytes` (counted as a drop, reason BUFFER_FULL).
  std::optional<int64_t> transmit(int64_t size, int64_t now);
  // The `priority` queue takes `pkt` at `now`: false (a drop) when what the link has yet to
  // send, the frame it is sending and those waiting, leaves no room for it, as `transmit` counts.
  bool enqueue(const Packet& pkt, int64_t now);
  // The packet that starts on the link at `now`, control first, its `depart` set; false while
  // the link is busy or nothing waits.
  bool start(int64_t now, Packet& out);
  size_t waiting() const { return control.size() + data.size(); }
  // (packets taken, packets accounted): sent, dropped or still waiting.
  std::pair<int64_t, int64_t> conservation() const {
    return {rx_packets, tx_packets + drops + static_cast<int64_t>(waiting())};
  }

  const double rate_bps;
  const int64_t delay_ns;
  const int64_t buffer_bytes;
  const double ns_per_byte;
  const int64_t overhead;
  int64_t free_at = 0;  // when the link has finished the last frame it started
  int64_t rx_packets = 0, tx_packets = 0, tx_bytes = 0;
  int64_t drops = 0;  // all of them BUFFER_FULL
  int64_t drop_bytes = 0;
  const bool control_first;  // the `priority` host queue
  Ring<Packet> control, data;  // priority: control packets and headers, the rest, waiting
  int64_t queued_bytes = 0;    // priority: wire bytes waiting (frame and overhead each)
};

}  // namespace dlcp
