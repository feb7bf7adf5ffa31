// Load balancers (switch_models/load_balancers.py): pick one egress port among the equal-cost
// candidates of a route. `choose(pkt, candidates)` gets a non-empty set and returns one.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "switch/packet.hpp"
#include "switch/registry.hpp"

namespace dlcp {

class EgressPort;

// The equal-cost ports of a route. The switch makes one set per distinct ordered list of two
// or more ports (routes and the default route alike), as Python keys state by that tuple;
// `id` numbers the sets densely. A route of one port never asks the load balancer.
struct PortSet {
  int id;
  std::vector<EgressPort*> ports;
};

class LoadBalancer {
 public:
  virtual ~LoadBalancer() = default;
  virtual EgressPort* choose(const Packet& pkt, const PortSet& candidates) = 0;
};

namespace load_balancers {

// Always the first candidate: one path, as a plain L2 switch would take.
class Single : public LoadBalancer {
 public:
  EgressPort* choose(const Packet& pkt, const PortSet& candidates) override;
};

// Flow hash: every packet of a flow takes one path. The per-switch salt keeps hops from
// making the same choice (hash polarisation).
class Ecmp : public LoadBalancer {
 public:
  explicit Ecmp(int64_t seed);
  EgressPort* choose(const Packet& pkt, const PortSet& candidates) override;

 private:
  uint64_t salt_;
};

// CPython's random.Random (MT19937), exactly: seeded by init_by_array over |seed| in 32-bit
// words, low word first, as random.seed(int) does; randbelow(n) as _randbelow_with_getrandbits
// with getrandbits(k) for k <= 32. Spray draws the same ports as the Python model.
class PythonRandom {
 public:
  explicit PythonRandom(int64_t seed);
  uint32_t randbelow(uint32_t n);  // n >= 1

 private:
  void init_genrand(uint32_t s);
  void init_by_array(const uint32_t* key, size_t length);
  uint32_t genrand_uint32();
  uint32_t mt_[624];
  int index_ = 624;
};

// Per-packet spraying (DLCP, NDP): round robin per candidate set, or uniform random; or
// `flow-round-robin`, round robin per candidate set and flow (each flow takes its paths in
// turn, as a source spraying its own packets: htsim's NDP `-strat perm`).
class Spray : public LoadBalancer {
 public:
  Spray(const std::string& mode, int64_t seed);
  EgressPort* choose(const Packet& pkt, const PortSet& candidates) override;

 private:
  bool random_, per_flow_;
  PythonRandom rng_;
  std::vector<uint32_t> next_;  // by PortSet id
  std::unordered_map<int64_t, std::unordered_map<int64_t, uint32_t>> flow_next_;  // by PortSet id, flow
};

// The candidate with the fewest queued bytes; ties go round robin so none is favoured.
class LeastLoaded : public LoadBalancer {
 public:
  EgressPort* choose(const Packet& pkt, const PortSet& candidates) override;

 private:
  uint64_t turn_ = 0;
};

}  // namespace load_balancers

std::unique_ptr<LoadBalancer> make_load_balancer(const StageSpec& spec);
std::vector<std::string> load_balancer_names();

}  // namespace dlcp
