#include "transport/transport_congestion.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace dlcp::transport {

namespace {

// Python's max(a, b) and min(a, b) return `a` unless `b` is strictly beyond it; for numbers
// of one type the value is all that matters, so std::max / std::min would do too, but these
// spell the Python operand order out where the comparison mixes int and float.
inline double py_max(double a, double b) { return b > a ? b : a; }
inline double py_min(double a, double b) { return b < a ? b : a; }

}  // namespace

RttEstimator::RttEstimator(int64_t initial_rto_ns, int64_t min_rto_ns_, int64_t max_rto_ns_,
                           int64_t granularity_ns_, int64_t pto_margin_ns_)
    : min_rto_ns(min_rto_ns_), max_rto_ns(max_rto_ns_), granularity_ns(granularity_ns_),
      pto_margin_ns(pto_margin_ns_) {
  if (!(0 < min_rto_ns && min_rto_ns <= max_rto_ns))
    throw std::invalid_argument("need 0 < min_rto_ns <= max_rto_ns, got " + std::to_string(min_rto_ns) + ", " +
                                std::to_string(max_rto_ns));
  if (pto_margin_ns < 0)
    throw std::invalid_argument("need pto_margin_ns >= 0, got " + std::to_string(pto_margin_ns));
  rto_ns = clamp_int(initial_rto_ns);
}

int64_t RttEstimator::clamp(double rto) const {
  // int(min(max(rto, min_rto_ns), max_rto_ns)): truncation toward zero, as Python's int().
  return static_cast<int64_t>(py_min(py_max(rto, static_cast<double>(min_rto_ns)), static_cast<double>(max_rto_ns)));
}

int64_t RttEstimator::clamp_int(int64_t rto) const {
  return std::min(std::max(rto, min_rto_ns), max_rto_ns);
}

void RttEstimator::sample(int64_t rtt_ns) {
  if (rtt_ns < 0) return;
  const double rtt = static_cast<double>(rtt_ns);
  if (!has_srtt) {
    has_srtt = true;
    srtt_ns = rtt;
    rttvar_ns = rtt / 2;
  } else {
    rttvar_ns = 0.75 * rttvar_ns + 0.25 * std::fabs(srtt_ns - rtt);
    srtt_ns = 0.875 * srtt_ns + 0.125 * rtt;
  }
  if (!has_min_rtt || rtt_ns < min_rtt_ns) {
    has_min_rtt = true;
    min_rtt_ns = rtt_ns;
  }
  rto_ns = clamp(srtt_ns + py_max(static_cast<double>(granularity_ns), 4 * rttvar_ns));
}

CongestionControl::CongestionControl(double initial_window, double min_window_, double max_window_, Ecn ecn_,
                                     double dctcp_g, bool pacing_, double pacing_gain_)
    : cwnd(initial_window),
      min_window(min_window_),
      max_window(max_window_),
      ecn(ecn_),
      g(dctcp_g),
      pacing(pacing_),
      pacing_gain(pacing_gain_) {
  if (!(1 <= min_window && min_window <= initial_window && initial_window <= max_window))
    throw std::invalid_argument("need 1 <= min_window <= initial_window <= max_window");
}

void CongestionControl::on_ack(int64_t seq, bool ce, int64_t newly_acked) {
  const bool every_window = ecn == Ecn::DCTCP_EVERY_WINDOW;
  acked_ += 1;
  if (ce) {
    marked_ += 1;
    if (every_window && cwnd < ssthresh) ssthresh = py_max(cwnd, 2.0);  // a mark ends slow start
  }
  if (seq >= alpha_end_) {
    alpha += g * (static_cast<double>(marked_) / static_cast<double>(acked_) - alpha);
    acked_ = marked_ = 0;
    alpha_end_ = next_seq;
    if (every_window && alpha > 0) {
      reductions += 1;
      cwnd = py_max(cwnd * (1 - alpha / 2), min_window);
      ssthresh = py_max(cwnd, 2.0);
    }
  }
  if (ce && !every_window) {
    if (seq > recover_) {
      const double factor = ecn == Ecn::HALVE ? 0.5 : 1 - alpha / 2;
      reduce(cwnd * factor);
    }
  } else if (newly_acked && seq > recover_) {
    if (cwnd < ssthresh)
      cwnd = py_min(cwnd + static_cast<double>(newly_acked), py_max(ssthresh, cwnd));
    else
      cwnd += static_cast<double>(newly_acked) / cwnd;
    if (cwnd > max_window) cwnd = max_window;
  }
}

void CongestionControl::on_timeout() {
  timeouts += 1;
  ssthresh = py_max(cwnd / 2, 2.0);
  cwnd = min_window;
  recover_ = next_seq - 1;
}

void CongestionControl::reduce(double new_cwnd) {
  reductions += 1;
  cwnd = py_max(new_cwnd, min_window);
  ssthresh = py_max(cwnd, 2.0);
  recover_ = next_seq - 1;
}

}  // namespace dlcp::transport
