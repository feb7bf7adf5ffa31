#include "datapath/histogram.hpp"

#include <algorithm>
#include <stdexcept>

namespace dlcp {

Histogram::Histogram(std::vector<double> edges) : edges_(std::move(edges)) {
  if (edges_.size() < 2 || !std::is_sorted(edges_.begin(), edges_.end()) || edges_.front() != 0.0)
    throw std::invalid_argument("histogram edges: at least two, ascending, the first 0");
  now_.counts.assign(edges_.size() - 1, 0);
}

void Histogram::add(int64_t value) {
  const int64_t v = std::max<int64_t>(value, 0);
  ++now_.n;
  now_.total += v;
  now_.max = std::max(now_.max, v);
  if (v > threshold) ++now_.above;
  // As Lateness.add: min(v, last edge - 1) in double, then the bin whose left edge is the
  // last one at or below it.
  const double x = std::min(double(v), edges_.back() - 1);
  const size_t bin = size_t(std::upper_bound(edges_.begin(), edges_.end(), x) - edges_.begin()) - 1;
  ++now_.counts[bin];
}

Histogram::Taken Histogram::take() {
  Taken out = std::move(now_);
  now_ = Taken{};
  now_.counts.assign(edges_.size() - 1, 0);
  return out;
}

}  // namespace dlcp
