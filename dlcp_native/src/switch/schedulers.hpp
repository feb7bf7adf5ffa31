// Schedulers (switch_models/schedulers.py): which queue of a port sends next.
// `queues_for(n_classes)` says how many queues the port needs; `pick(port, eligible)` returns
// a queue index among `eligible`, a non-empty bit mask of the queues whose head packet may go
// now (live and already arrived), so strict priority is one bit trick rather than a scan.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "switch/registry.hpp"

namespace dlcp {

class EgressPort;

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual int queues_for(int n_classes) = 0;
  virtual int pick(EgressPort& port, uint32_t eligible) = 0;
  bool stateless = true;  // picks depend on nothing but the queues (a lone packet needs no pick)
};

namespace schedulers {

// One queue in arrival order; classes still drive the queue manager's decisions.
class Fifo : public Scheduler {
 public:
  int queues_for(int n_classes) override;
  int pick(EgressPort& port, uint32_t eligible) override;
};

// Strict priority: the lowest-numbered queue with a live packet always goes first.
class Strict : public Scheduler {
 public:
  int queues_for(int n_classes) override;
  int pick(EgressPort& port, uint32_t eligible) override;
};

// Deficit round robin (Shreedhar & Varghese): each backlogged queue may send up to its
// quantum of bytes a round, so classes share the link in proportion to their weights.
class Drr : public Scheduler {
 public:
  Drr(int64_t quantum, std::optional<std::vector<double>> weights);
  int queues_for(int n_classes) override;
  int pick(EgressPort& port, uint32_t eligible) override;

 private:
  void advance(int n);
  int64_t quantum_;
  std::optional<std::vector<double>> weights_;
  std::vector<int64_t> quanta_;
  std::vector<int64_t> deficit_;
  int turn_ = 0;
  bool credited_ = false;
};

}  // namespace schedulers

std::unique_ptr<Scheduler> make_scheduler(const StageSpec& spec);
std::vector<std::string> scheduler_names();

}  // namespace dlcp
