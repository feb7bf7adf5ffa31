#include "switch/nic.hpp"

#include <stdexcept>

namespace dlcp {

namespace {

double checked_rate(double rate_bps, int64_t delay_ns) {
  if (!(rate_bps > 0)) throw std::invalid_argument("nic: rate_bps must be a positive number");
  if (delay_ns < 0) throw std::invalid_argument("nic: delay_ns must be an integer >= 0");
  return rate_bps;
}

}  // namespace

HostNic::HostNic(double rate_bps_, int64_t delay_ns_, int64_t buffer_bytes_, int64_t overhead_bytes,
                 bool control_first_)
    : rate_bps(checked_rate(rate_bps_, delay_ns_)),
      delay_ns(delay_ns_),
      buffer_bytes(buffer_bytes_),
      ns_per_byte(8e9 / rate_bps_),
      overhead(overhead_bytes),
      control_first(control_first_) {}

std::optional<int64_t> HostNic::transmit(int64_t size, int64_t now) {
  rx_packets += 1;
  const int64_t n = size > ETH_MIN ? size : ETH_MIN;
  int64_t start = free_at;
  if (start > now) {
    // As Python: an int over a float is a float; the sum is compared as a float.
    if (static_cast<double>(start - now) / ns_per_byte + static_cast<double>(n) >
        static_cast<double>(buffer_bytes)) {
      drops += 1;
      drop_bytes += size;
      return std::nullopt;
    }
  } else {
    start = now;
  }
  const int64_t end = start + static_cast<int64_t>(static_cast<double>(n + overhead) * ns_per_byte + 0.5);
  free_at = end;
  tx_packets += 1;
  tx_bytes += size;
  return end + delay_ns;
}

bool HostNic::enqueue(const Packet& pkt, int64_t now) {
  rx_packets += 1;
  const int64_t n = pkt.size > ETH_MIN ? pkt.size : ETH_MIN;
  // As Python: an int, plus a float when the link is busy; the sum compared as a float.
  double ahead = static_cast<double>(queued_bytes);
  if (free_at > now) ahead = ahead + static_cast<double>(free_at - now) / ns_per_byte;
  if (ahead + static_cast<double>(n) > static_cast<double>(buffer_bytes)) {
    drops += 1;
    drop_bytes += pkt.size;
    return false;
  }
  (is_header(pkt) ? control : data).push_back(pkt);
  queued_bytes += n + overhead;
  return true;
}

bool HostNic::start(int64_t now, Packet& out) {
  if (free_at > now) return false;
  Ring<Packet>& q = control.empty() ? data : control;
  if (q.empty()) return false;
  out = q.pop_front();
  const int64_t n = out.size > ETH_MIN ? out.size : ETH_MIN;
  queued_bytes -= n + overhead;
  const int64_t end = now + static_cast<int64_t>(static_cast<double>(n + overhead) * ns_per_byte + 0.5);
  free_at = end;
  tx_packets += 1;
  tx_bytes += out.size;
  out.depart = end + delay_ns;
  return true;
}

}  // namespace dlcp
