#include "switch/load_balancers.hpp"

#include "switch/port.hpp"

namespace dlcp {

namespace load_balancers {

EgressPort* Single::choose(const Packet&, const PortSet& candidates) {
  return candidates.ports[0];
}

// Python masks to 64 bits after each step; unsigned arithmetic wraps the same way.
Ecmp::Ecmp(int64_t seed)
    : salt_(static_cast<uint64_t>(seed) * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL) {}

EgressPort* Ecmp::choose(const Packet& pkt, const PortSet& candidates) {
  const size_t n = candidates.ports.size();
  if (n == 1) return candidates.ports[0];
  const uint64_t h = (static_cast<uint64_t>(pkt.flow) ^ salt_) * 0xBF58476D1CE4E5B9ULL;
  return candidates.ports[(h >> 29) % n];
}

// -- CPython's Mersenne Twister (Modules/_randommodule.c) ---------------------------------
PythonRandom::PythonRandom(int64_t seed) {
  // random.seed(int) keys on the absolute value, in as many 32-bit words as it needs (one
  // for 0). |INT64_MIN| = 2**63 fits an unsigned 64-bit value.
  const uint64_t n = seed < 0 ? 0 - static_cast<uint64_t>(seed) : static_cast<uint64_t>(seed);
  const uint32_t key[2] = {static_cast<uint32_t>(n), static_cast<uint32_t>(n >> 32)};
  init_by_array(key, key[1] ? 2 : 1);
}

void PythonRandom::init_genrand(uint32_t s) {
  mt_[0] = s;
  for (int i = 1; i < 624; ++i)
    mt_[i] = 1812433253U * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + static_cast<uint32_t>(i);
  index_ = 624;
}

void PythonRandom::init_by_array(const uint32_t* key, size_t length) {
  init_genrand(19650218U);
  size_t i = 1, j = 0;
  for (size_t k = 624 > length ? 624 : length; k; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525U)) + key[j] +
             static_cast<uint32_t>(j);
    ++i;
    ++j;
    if (i >= 624) {
      mt_[0] = mt_[623];
      i = 1;
    }
    if (j >= length) j = 0;
  }
  for (size_t k = 623; k; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941U)) -
             static_cast<uint32_t>(i);
    ++i;
    if (i >= 624) {
      mt_[0] = mt_[623];
      i = 1;
    }
  }
  mt_[0] = 0x80000000U;  // MSB is 1, assuring a non-zero initial array
}

uint32_t PythonRandom::genrand_uint32() {
  static const uint32_t mag01[2] = {0x0U, 0x9908b0dfU};
  if (index_ >= 624) {
    int kk = 0;
    for (; kk < 624 - 397; ++kk) {
      const uint32_t y = (mt_[kk] & 0x80000000U) | (mt_[kk + 1] & 0x7fffffffU);
      mt_[kk] = mt_[kk + 397] ^ (y >> 1) ^ mag01[y & 0x1U];
    }
    for (; kk < 623; ++kk) {
      const uint32_t y = (mt_[kk] & 0x80000000U) | (mt_[kk + 1] & 0x7fffffffU);
      mt_[kk] = mt_[kk + (397 - 624)] ^ (y >> 1) ^ mag01[y & 0x1U];
    }
    const uint32_t y = (mt_[623] & 0x80000000U) | (mt_[0] & 0x7fffffffU);
    mt_[623] = mt_[396] ^ (y >> 1) ^ mag01[y & 0x1U];
    index_ = 0;
  }
  uint32_t y = mt_[index_++];
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680U;
  y ^= (y << 15) & 0xefc60000U;
  y ^= (y >> 18);
  return y;
}

uint32_t PythonRandom::randbelow(uint32_t n) {
  int k = 0;  // n.bit_length()
  for (uint32_t v = n; v; v >>= 1) ++k;
  uint32_t r = genrand_uint32() >> (32 - k);  // getrandbits(k)
  while (r >= n) r = genrand_uint32() >> (32 - k);
  return r;
}

// -- Spray, LeastLoaded -------------------------------------------------------------------
Spray::Spray(const std::string& mode, int64_t seed)
    : random_(mode == "random"), per_flow_(mode == "flow-round-robin"), rng_(seed) {
  require(mode == "round-robin" || mode == "flow-round-robin" || mode == "random", "spray", "mode",
          "'round-robin', 'flow-round-robin' or 'random'");
}

EgressPort* Spray::choose(const Packet& pkt, const PortSet& candidates) {
  const size_t n = candidates.ports.size();
  if (n == 1) return candidates.ports[0];
  if (random_) return candidates.ports[rng_.randbelow(static_cast<uint32_t>(n))];
  if (static_cast<size_t>(candidates.id) >= next_.size()) next_.resize(candidates.id + 1, 0);
  uint32_t& i = per_flow_ ? flow_next_[candidates.id][pkt.flow] : next_[candidates.id];
  EgressPort* port = candidates.ports[i];
  i = i + 1 < n ? i + 1 : 0;
  return port;
}

EgressPort* LeastLoaded::choose(const Packet&, const PortSet& candidates) {
  const size_t n = candidates.ports.size();
  if (n == 1) return candidates.ports[0];
  ++turn_;
  EgressPort* best = nullptr;
  for (size_t k = 0; k < n; ++k) {
    EgressPort* port = candidates.ports[(turn_ + k) % n];
    if (best == nullptr || port->bytes < best->bytes) best = port;
  }
  return best;
}

}  // namespace load_balancers

// -- by name ------------------------------------------------------------------------------
std::unique_ptr<LoadBalancer> make_load_balancer(const StageSpec& spec) {
  const Params& p = spec.params;
  if (spec.name == "single") {
    p.expect("load balancer 'single'", {"seed"});
    return std::make_unique<load_balancers::Single>();
  }
  if (spec.name == "ecmp") {
    p.expect("load balancer 'ecmp'", {"seed"});
    return std::make_unique<load_balancers::Ecmp>(p.integer("seed"));
  }
  if (spec.name == "spray") {
    p.expect("load balancer 'spray'", {"mode", "seed"});
    return std::make_unique<load_balancers::Spray>(p.text("mode"), p.integer("seed"));
  }
  if (spec.name == "least-loaded") {
    p.expect("load balancer 'least-loaded'", {"seed"});
    return std::make_unique<load_balancers::LeastLoaded>();
  }
  throw SpecError("load balancer '" + spec.name + "' has no native implementation");
}

std::vector<std::string> load_balancer_names() {
  return {"single", "ecmp", "spray", "least-loaded"};
}

}  // namespace dlcp
