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
// waiting, strict priority without preemption, as NDP's hosts send them. `enqueue_item` /
// `start_item` take any item with its size and class (HostNicOf<Item>): the simulator's
// packets (HostNic) or the frames the emulated switch replays on a priority host's link
// (datapath_ingress.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include "switch/packet.hpp"
#include "switch/port.hpp"
#include "base/ring.hpp"

namespace dlcp {

// A host's queue: deep enough for every window a transport keeps in flight; the emulated
// host's pacing queue holds the same.
constexpr int64_t HOST_BUFFER_BYTES = 64LL * 1024 * 1024;
constexpr int64_t ETH_MIN = 60;  // the shortest Ethernet frame without FCS; shorter ones are padded on the wire

// The link and its counters, whatever the queue holds.
class NicLink {
 public:
  NicLink(double rate_bps, int64_t delay_ns, int64_t buffer_bytes = HOST_BUFFER_BYTES,
          int64_t overhead_bytes = ETHERNET_OVERHEAD, bool control_first = false);

  // A frame of `size` bytes handed over at `now`: the time it has arrived whole at the far
  // end, or none when the queue ahead of it (what the link has yet to send) leaves no room
  // for it in `buffer_bytes` (counted as a drop, reason BUFFER_FULL).
  std::optional<int64_t> transmit(int64_t size, int64_t now);

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
  int64_t queued_bytes = 0;  // priority: wire bytes waiting (frame and overhead each)

 protected:
  static int64_t wire_size(int64_t size) { return size > ETH_MIN ? size : ETH_MIN; }
  // nic.py `enqueue_item`'s admission: counts the item taken; false (a drop) when what the
  // link has yet to send, the frame it is sending and those waiting, leaves no room for it.
  bool admit(int64_t size, int64_t now);
  // A frame of `size` starts on the free link at `now`: when it is whole at the far end.
  int64_t send(int64_t size, int64_t now);
};

template <class Item>
class HostNicOf : public NicLink {
 public:
  using NicLink::NicLink;
  struct Queued {
    Item item;
    int64_t size = 0;
  };

  // The `priority` queue takes `item`, a frame of `size` bytes, at `now`, behind the other
  // control items if `is_control`, else behind the data; false (a drop) as `admit` says.
  bool enqueue_item(Item item, int64_t size, bool is_control, int64_t now) {
    if (!admit(size, now)) return false;
    (is_control ? control : data).push_back(Queued{std::move(item), size});
    queued_bytes += wire_size(size) + overhead;
    return true;
  }
  // The item that starts on the link at `now`, control first, and when it is whole at the
  // far end (`arrival`); false while the link is busy or nothing waits.
  bool start_item(int64_t now, Item& out, int64_t& arrival) {
    if (free_at > now) return false;
    Ring<Queued>& q = control.empty() ? data : control;
    if (q.empty()) return false;
    Queued got = q.pop_front();
    queued_bytes -= wire_size(got.size) + overhead;
    out = std::move(got.item);
    arrival = send(got.size, now);  // after: `arrival` may be a field of `out` (HostNic::start)
    return true;
  }
  size_t waiting() const { return control.size() + data.size(); }
  // (packets taken, packets accounted): sent, dropped or still waiting.
  std::pair<int64_t, int64_t> conservation() const {
    return {rx_packets, tx_packets + drops + static_cast<int64_t>(waiting())};
  }

  Ring<Queued> control, data;  // priority: control packets and headers, the rest, waiting
};

// The simulator's NIC: packets, a control packet being a bare header.
class HostNic : public HostNicOf<Packet> {
 public:
  using HostNicOf<Packet>::HostNicOf;
  bool enqueue(const Packet& pkt, int64_t now) { return enqueue_item(pkt, pkt.size, is_header(pkt), now); }
  // The packet that starts on the link at `now`, control first, its `depart` set.
  bool start(int64_t now, Packet& out) { return start_item(now, out, out.depart); }
};

}  // namespace dlcp
