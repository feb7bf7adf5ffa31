// Congestion control shared by the packet transports (dlcp_emu/transport/congestion.py): a
// window in packets, slow start + AIMD, once-per-window reaction to loss and ECN (DCTCP or
// halving), and the RTO from SRTT/RTTVAR (RFC 6298).
//
// The same double operations in the same order as Python (built with -ffp-contract=off, so
// no fused multiply-add rounds differently): a window or an RTO here is the Python one to
// the last bit. Python's ints are int64 here; its None is `has_srtt == false` and friends.
#pragma once

#include <cstdint>
#include <limits>

namespace dlcp::transport {

constexpr int64_t INITIAL_RTO_NS = 10'000'000;
constexpr int64_t MIN_RTO_NS = 1'000'000;
constexpr int64_t GRANULARITY_NS = 1'000'000;
constexpr int64_t MAX_RTO_NS = 1'000'000'000;
constexpr double INITIAL_WINDOW = 10;
constexpr double DCTCP_G = 1.0 / 16;

class RttEstimator {
 public:
  RttEstimator(int64_t initial_rto_ns = INITIAL_RTO_NS, int64_t min_rto_ns = MIN_RTO_NS,
               int64_t max_rto_ns = MAX_RTO_NS, int64_t granularity_ns = GRANULARITY_NS,
               int64_t pto_margin_ns = 0);

  void sample(int64_t rtt_ns);
  void backoff() { rto_ns = clamp_int(rto_ns * 2); }

  int64_t min_rto_ns, max_rto_ns, granularity_ns;
  int64_t pto_margin_ns;  // added to the tail-loss probe's 2 SRTT
  bool has_srtt = false;  // Python: srtt_ns is not None
  double srtt_ns = 0, rttvar_ns = 0;
  bool has_min_rtt = false;
  int64_t min_rtt_ns = 0;
  int64_t rto_ns;

 private:
  int64_t clamp(double rto) const;
  int64_t clamp_int(int64_t rto) const;
};

class CongestionControl {
 public:
  // DCTCP_EVERY_WINDOW: htsim's DCTCP (congestion.py says how it differs).
  enum class Ecn { DCTCP, HALVE, DCTCP_EVERY_WINDOW };

  CongestionControl(double initial_window = INITIAL_WINDOW, double min_window = 1,
                    double max_window = double(1 << 20), Ecn ecn = Ecn::DCTCP, double dctcp_g = DCTCP_G,
                    bool pacing = false, double pacing_gain = 2.0);

  int64_t on_send() { return next_seq++; }
  void on_ack(int64_t seq, bool ce, int64_t newly_acked);
  void on_loss(int64_t seq) {
    if (seq > recover_) reduce(cwnd / 2);
  }
  void on_timeout();
  // srtt: the estimator's SRTT, or 0 when it has none (Python: `not srtt_ns`).
  double pacing_gap_ns(double srtt_ns) const {
    if (!pacing || srtt_ns == 0) return 0.0;
    return srtt_ns / (cwnd * pacing_gain);
  }

  double cwnd;
  double ssthresh = std::numeric_limits<double>::infinity();
  double min_window, max_window;
  Ecn ecn;
  double g;
  double alpha = 1.0;
  bool pacing;
  double pacing_gain;
  bool pulls = false;  // NDP's receiver-paced pulls instead of the window (transport_pulls.hpp)
  int64_t next_seq = 0;
  int64_t reductions = 0, timeouts = 0;
  // The state the Python object keeps private, exposed for the differential tests.
  int64_t recover() const { return recover_; }
  int64_t alpha_end() const { return alpha_end_; }

 private:
  void reduce(double new_cwnd);

  int64_t recover_ = -1;   // last seq sent before the latest reduction
  int64_t alpha_end_ = 0;  // DCTCP observation window ends when this seq is acked
  int64_t acked_ = 0, marked_ = 0;
};

}  // namespace dlcp::transport
