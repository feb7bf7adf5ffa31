#include "transport/transport_message.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "wire/transport_packet.hpp"

namespace dlcp::transport {

int64_t chunk_payload_size(int64_t mtu) {
  if (mtu <= 0 || mtu > 0xFFFF)
    throw std::invalid_argument("mtu must be an integer in 1..65535, got " + std::to_string(mtu));
  const int64_t size = std::min(mtu - IPV4_LEN - UDP_LEN - HEADER_LEN, MAX_PAYLOAD) & ~int64_t{3};
  if (size < 4)
    throw std::invalid_argument("mtu " + std::to_string(mtu) + " leaves no room for one float32 after the " +
                                std::to_string(IPV4_LEN + UDP_LEN + HEADER_LEN) + " header bytes");
  return size;
}

int64_t transport_payload_size(int64_t mtu) {
  const int64_t size = chunk_payload_size(mtu);
  if (size < MIN_TRANSPORT_PAYLOAD)
    throw std::invalid_argument("mtu " + std::to_string(mtu) + " is too small for the transports: need at least " +
                                std::to_string(MIN_TRANSPORT_PAYLOAD + IPV4_LEN + UDP_LEN + HEADER_LEN));
  return size;
}

namespace {

// numpy's float32 pairwise summation (`add.reduce` over contiguous values: eight accumulators
// up to 128 values, halves above), step for step, of |a[i]|.
float pairwise_abs_sum(const float* a, int64_t n) {
  if (n < 8) {
    float res = -0.0f;
    for (int64_t i = 0; i < n; ++i) res += std::fabs(a[i]);
    return res;
  }
  if (n <= 128) {
    float r[8];
    for (int k = 0; k < 8; ++k) r[k] = std::fabs(a[k]);
    int64_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (int k = 0; k < 8; ++k) r[k] += std::fabs(a[i + k]);
    float res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += std::fabs(a[i]);
    return res;
  }
  int64_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_abs_sum(a, n2) + pairwise_abs_sum(a + n2, n - n2);
}

}  // namespace

std::vector<double> chunk_magnitudes(const float* data, int64_t n, int64_t chunk_size) {
  const int64_t per = chunk_size / 4;
  if (per <= 0) throw std::invalid_argument("chunk_size must hold one float32 at least, got " + std::to_string(chunk_size));
  std::vector<double> out;
  out.reserve(size_t((n + per - 1) / per));
  for (int64_t start = 0; start < n; start += per) {
    const int64_t count = std::min(per, n - start);
    out.push_back(double(pairwise_abs_sum(data + start, count) / float(count)));
  }
  return out;
}

std::vector<double> octiles(const std::vector<double>& m) {
  const int64_t n = int64_t(m.size());
  std::vector<double> s(m);
  std::sort(s.begin(), s.end());
  std::vector<double> out(7);
  for (int i = 0; i < 7; ++i) {
    const double virtual_index = double(n - 1) * (double(i + 1) / 8);  // (n - 1) * np.arange(1, 8) / 8
    const int64_t prev = std::min(int64_t(std::floor(virtual_index)), n - 1);
    const int64_t next = std::min(prev + 1, n - 1);
    const double gamma = virtual_index - double(prev);
    const double a = s[size_t(prev)], b = s[size_t(next)], diff = b - a;
    out[size_t(i)] = gamma >= 0.5 ? b - diff * (1 - gamma) : a + diff * gamma;  // numpy's _lerp
  }
  return out;
}

ChunkPlan plan_chunks(const std::vector<double>& m, int64_t total, int64_t chunk_size, double droppable_fraction,
                      double loss_bound, bool droppable_allowed, const std::optional<std::vector<double>>& edges) {
  const int64_t n = (total + chunk_size - 1) / chunk_size;
  if (int64_t(m.size()) != n)
    throw std::invalid_argument("need one magnitude per chunk (" + std::to_string(n) + " chunks of " +
                                std::to_string(chunk_size) + " bytes), got shape (" + std::to_string(m.size()) + ",)");
  ChunkPlan plan;
  plan.droppable.assign(size_t(n), 0);
  plan.bound_bytes = int64_t(std::floor(loss_bound * double(total)));
  const int64_t k = int64_t(std::floor(droppable_fraction * double(n)));
  if (droppable_allowed && k && plan.bound_bytes) {
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return m[size_t(x)] < m[size_t(y)]; });
    int64_t sum = 0;
    for (int64_t i = 0; i < k; ++i) {  // searchsorted(cumsum(sizes), bound, side="right")
      const int64_t c = order[size_t(i)];
      sum += c == n - 1 ? total - (n - 1) * chunk_size : chunk_size;
      if (sum > plan.bound_bytes) break;
      plan.droppable[size_t(c)] = 1;
    }
  }
  const std::vector<double> e = edges ? *edges : octiles(m);
  plan.mag_class.resize(size_t(n));
  for (int64_t i = 0; i < n; ++i)  // searchsorted(edges, m, side="left"): edges below m
    plan.mag_class[size_t(i)] = uint8_t(std::lower_bound(e.begin(), e.end(), m[size_t(i)]) - e.begin());
  return plan;
}

}  // namespace dlcp::transport
