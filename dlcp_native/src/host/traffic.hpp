// The benchmarks' traffic generator compiled (dlcp_emu/emu/trafficgen.py `send`): frames from
// a list of templates, in turn, at a rate, stamped with their sequence number and send time,
// in bursts of at most `burst` (one sendmmsg) when behind, so that no figure is bound by
// the generator's Python.
#pragma once

#include <cstdint>
#include <vector>

namespace dlcp {

struct SendPlan {
  double rate_pps = 0;
  int64_t duration_ns = 0;
  int64_t limit = INT64_MAX;  // frames at most
  int64_t burst = 32;
  bool stamp = false;         // write chunk_index and send_ts_ns (DLCP frames of >= 90 bytes)
  int64_t sample_every = 0;   // every k-th frame from `samples` instead (its job field 1)
};

struct SendResult {
  int64_t sent = 0, errors = 0, elapsed_ns = 0;
  std::vector<int64_t> per_class;
};

// frames[i] goes out as the i-th (mod n) frame; cls_of[i] is its class (counted per class).
SendResult send_frames(int fd, std::vector<std::vector<uint8_t>>& frames, std::vector<std::vector<uint8_t>>& samples,
                       const std::vector<int>& cls_of, int classes, const SendPlan& plan);

}  // namespace dlcp
