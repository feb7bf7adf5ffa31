// lateness.py `Lateness.add`, a value at a time inside the switch's loop: how late frames
// left (and how long they waited in the rings) binned as they are measured, so that the loop
// never stops to hand Python raw values. Folding 65,536 of them in numpy took ~4 ms, twice
// (lateness and ring waits), and every frame that arrived meanwhile waited: at 100k frames/s
// that was the switch's p99 latency (2-4 ms; 40-360 us without it).
#pragma once

#include <cstdint>
#include <vector>

namespace dlcp {

class Histogram {
 public:
  // Bin i holds [edges[i], edges[i + 1]) as numpy.histogram bins them (Lateness.edges).
  explicit Histogram(std::vector<double> edges);
  void add(int64_t value);  // below 0 counts as 0; at or above the last edge, in the last bin
  // What was added since the last take: counts by bin, how many, their sum and largest, and
  // how many were above `threshold`; then starts afresh.
  struct Taken {
    std::vector<int64_t> counts;
    int64_t n = 0, total = 0, max = 0, above = 0;
  };
  Taken take();
  int64_t threshold = 0;

 private:
  std::vector<double> edges_;
  Taken now_;
};

}  // namespace dlcp
