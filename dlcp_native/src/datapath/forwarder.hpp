// Mode `forward` compiled (dlcp_emu/emu/datapath/forward.py): no model, each frame straight
// from its port's receive ring to the first port of its route (a broadcast to every flood
// port): the ceiling of this kernel path, against which the benchmark sets the switch.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "datapath/rx_ring.hpp"
#include "datapath/tx_batch.hpp"

namespace dlcp {

struct ForwarderCounters {
  std::vector<int64_t> rx_frames;
  int64_t no_route = 0;
};

class Forwarder {
 public:
  // fds and ring slot sizes (0: recv) by port index; routes: destination MAC -> port index;
  // flood[i]: the ports a broadcast from port i goes to.
  Forwarder(const std::vector<int>& fds, const std::vector<uint32_t>& ring_frame_sizes,
            std::unordered_map<uint64_t, int> routes, std::vector<std::vector<int>> flood, size_t batch,
            int wake_fd, size_t recv_size);
  // Forward until `until` (monotonic ns) or the wake fd is readable (returns true then).
  bool run(int64_t until);
  ForwarderCounters counters;
  const std::vector<int64_t>& tx_frames() const { return tx_.sent; }
  const std::vector<int64_t>& tx_errors() const { return tx_.errors; }
  const RxRing* ring(size_t port) const { return rings_[port].get(); }

 private:
  void forward(size_t port, const uint8_t* frame, size_t n);
  std::vector<int> fds_;
  std::vector<std::unique_ptr<RxRing>> rings_;
  std::unordered_map<uint64_t, int> routes_;
  std::vector<std::vector<int>> flood_;
  size_t batch_;
  int wake_fd_;
  std::vector<uint8_t> buf_;
  TxBatch tx_;  // what one pass over the ports forwards, sent after it (copied: ring slots go back at once)
};

}  // namespace dlcp
