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

NicLink::NicLink(double rate_bps_, int64_t delay_ns_, int64_t buffer_bytes_, int64_t overhead_bytes,
                 bool control_first_)
    : rate_bps(checked_rate(rate_bps_, delay_ns_)),
      delay_ns(delay_ns_),
      buffer_bytes(buffer_bytes_),
      ns_per_byte(8e9 / rate_bps_),
      overhead(overhead_bytes),
      control_first(control_first_) {}

std::optional<int64_t> NicLink::transmit(int64_t size, int64_t now) {
  rx_packets += 1;
  const int64_t n = wire_size(size);
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
  return send(size, start);
}

bool NicLink::admit(int64_t size, int64_t now) {
  rx_packets += 1;
  const int64_t n = wire_size(size);
  // As Python: an int, plus a float when the link is busy; the sum compared as a float.
  double ahead = static_cast<double>(queued_bytes);
  if (free_at > now) ahead = ahead + static_cast<double>(free_at - now) / ns_per_byte;
  if (ahead + static_cast<double>(n) > static_cast<double>(buffer_bytes)) {
    drops += 1;
    drop_bytes += size;
    return false;
  }
  return true;
}

int64_t NicLink::send(int64_t size, int64_t now) {
  const int64_t end =
      now + static_cast<int64_t>(static_cast<double>(wire_size(size) + overhead) * ns_per_byte + 0.5);
  free_at = end;
  tx_packets += 1;
  tx_bytes += size;
  return end + delay_ns;
}

}  // namespace dlcp
