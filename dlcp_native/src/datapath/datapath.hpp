// The switch process's forwarding loop compiled (dlcp_emu/emu/datapath/python_loop.py
// `run_model`, ingress.py, sendahead.py): frames from the ports' receive rings, through the
// sans-I/O Switch, out of the ports' sockets on the model's schedule, with no Python per frame.
// The Python process keeps everything around it (set-up, signals, stats, queue samples'
// files) and calls `run` until its next housekeeping; what the loop measured (lateness, ring
// waits, queue samples) waits in vectors the caller takes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <queue>
#include <unordered_map>
#include <utility>
#include <vector>

#include "datapath/histogram.hpp"
#include "switch/nic.hpp"
#include "datapath/rx_ring.hpp"
#include "switch/switch.hpp"
#include "datapath/tx_batch.hpp"

namespace dlcp {

struct DatapathPort {
  int fd = -1;
  uint32_t ring_frame_size = 0;  // 0: no ring, recv (datagram sockets in tests)
  size_t recv_size = 1519;       // the largest frame recv takes without a ring
  bool paced = false;            // the peer is a paced host: replay its link (ingress.py)
  bool control_first = false;    // ... under a `priority` host queue (ingress.py `hand`)
  double rate_bps = 0;
  int64_t delay_ns = 0;
};

struct DatapathPortCounters {
  int64_t rx_frames = 0, rx_errors = 0;
  int64_t flood_frames = 0, flood_copies = 0, not_flooded = 0;
};

class Datapath {
 public:
  // routes: destination MAC (mac_key) -> route index of the switch; port_route[i]: the route
  // index that sends a flood copy out of port i alone; flood[i]: the ports a broadcast that
  // came in on port i is copied to. wake_fd: readable when the caller has something to do.
  // edges: the lateness and ring-wait histograms' (Lateness.edges); thresholds: what each
  // counts as late (`above`), lateness's then the ring waits'.
  Datapath(Switch& sw, const std::vector<DatapathPort>& ports, std::unordered_map<uint64_t, int32_t> routes,
           std::vector<int32_t> port_route, std::vector<std::vector<int>> flood, size_t batch, int wake_fd,
           int64_t sample_ns, int64_t pending_limit, const std::vector<double>& edges,
           std::pair<int64_t, int64_t> thresholds);

  enum Return { UNTIL = 0, WAKE = 1, FULL = 2 };
  // The loop until `until` (monotonic ns), the wake fd being readable, or the queue samples
  // holding pending_limit entries. clock_offset: CLOCK_REALTIME - CLOCK_MONOTONIC,
  // to read the kernel's delivery times.
  Return run(int64_t until, int64_t clock_offset);
  // After a stop: read nothing more, let what the model holds and the frames still on a
  // host's link go on schedule until `deadline`; those still on a link then are handed to
  // the model at once, so that each is counted (python_loop.py `drain_model`).
  void drain(int64_t deadline);

  // What the loop measured since the caller last took it.
  Histogram lateness;             // ns each frame left after its scheduled departure
  Histogram rx_wait;              // ns each frame waited in its ring
  std::vector<int64_t> samples;   // rows of (t ns, queued bytes of each port)
  int64_t send_ahead = 0;         // ns before a departure the loop wakes (sendahead.py)
  // The loop acts at most once a period (wall ns; 0: at every event). Frames that arrive
  // meanwhile wait in their ring, their arrival times being the kernel's stamps, so the
  // model sees them exact; departures due meanwhile go out together, late by at most the
  // period. Each wake-up costs a context switch and a timer on a VM: acting per frame cost
  // ~27 us a frame at byte scale 0.1, and the switches most of the machine's two cores.
  int64_t wake_period_ns = 0;
  int64_t loops = 0;

  std::vector<DatapathPortCounters> counters;
  const std::vector<int64_t>& tx_errors() const { return tx_.errors; }  // sends the kernel refused, by port
  int64_t malformed = 0, invalid_dlcp = 0, rewrite_errors = 0;
  size_t on_link() const { return arriving_.size() + waiting_; }
  const RxRing* ring(size_t port) const { return rings_[port].get(); }
  const NicLink* nic(size_t port) const { return nics_[port] ? &*nics_[port] : nullptr; }

 private:
  struct Arrival {
    int64_t t;
    uint64_t seq;
    int port;
    std::vector<uint8_t> frame;
  };
  struct Later {
    bool operator()(const Arrival& a, const Arrival& b) const { return a.t != b.t ? a.t > b.t : a.seq > b.seq; }
  };
  struct Got {  // a frame just read, and when the kernel delivered it (if known)
    int64_t t;
    bool stamped;
    int port;
    std::vector<uint8_t> frame;
  };
  std::optional<int64_t> next_wake(int64_t ahead) const;
  void read_port(size_t port, int64_t clock_offset);
  void settle(int64_t now, size_t sources);
  void due_from_links(int64_t now);
  // ingress.py `hand`: a paced host hands `frame` to its priority link at t.
  void hand(size_t port, int64_t t, std::vector<uint8_t>&& frame);
  // ingress.py `start_by`: the waiting frames of `port` that start by t (before t if
  // `before`) go on its link.
  void start_by(size_t port, int64_t t, bool before = false);
  // Hand the due frames to the model in order of arrival; a broadcast becomes a copy per
  // flood port (python_loop.py `take`).
  void take_due();
  void take(int64_t t, int port, std::vector<uint8_t>& frame);
  void receive(Packet pkt, int port, int64_t t, std::vector<uint8_t>& frame, bool last);
  void send_due(int64_t until);  // sendahead.py `send_due`

  Switch& sw_;
  std::vector<DatapathPort> ports_;
  std::vector<std::unique_ptr<RxRing>> rings_;
  // By port: a paced host's link (ingress.py `links`), the simulator's NIC model on frames.
  std::vector<std::optional<HostNicOf<std::vector<uint8_t>>>> nics_;
  size_t waiting_ = 0;  // frames waiting on the control_first links
  std::unordered_map<uint64_t, int32_t> routes_;
  std::vector<int32_t> port_route_;
  std::vector<std::vector<int>> flood_;
  size_t batch_;
  int wake_fd_;
  int64_t sample_ns_, next_sample_ = 0, pending_limit_;
  int64_t floor_ = 0;  // the model's clock so far: an arrival is never given an earlier time
  int64_t acted_ = INT64_MIN / 2;  // when the loop last acted (wake_period_ns)
  int64_t uid_ = 0;
  uint64_t seq_ = 0;
  std::priority_queue<Arrival, std::vector<Arrival>, Later> arriving_;  // still on a host's link
  std::vector<Got> got_;
  std::vector<Arrival> due_;
  std::vector<uint8_t> recv_buf_;
  std::vector<std::vector<uint8_t>> spare_;  // frame buffers to reuse
  std::vector<std::vector<uint8_t>> held_;   // the frame of each packet the switch holds, by slot
  std::vector<Departure> departures_;
  TxBatch tx_;  // one poll's departures, one sendmmsg a port
};

}  // namespace dlcp
