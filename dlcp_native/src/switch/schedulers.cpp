#include "switch/schedulers.hpp"

#include "switch/port.hpp"

namespace dlcp {

namespace schedulers {

int Fifo::queues_for(int) { return 1; }

int Fifo::pick(EgressPort&, uint32_t) { return 0; }

int Strict::queues_for(int n_classes) { return n_classes; }

int Strict::pick(EgressPort&, uint32_t eligible) { return __builtin_ctz(eligible); }

Drr::Drr(int64_t quantum, std::optional<std::vector<double>> weights)
    : quantum_(quantum), weights_(std::move(weights)) {
  stateless = false;  // deficits and the round-robin turn change with every pick
  require(quantum >= 64, "drr", "quantum", "an integer >= 64 bytes");
  if (weights_) {
    bool positive = true;
    for (double w : *weights_) positive = positive && w > 0;
    require(positive, "drr", "weights", "positive numbers, one per class");
  }
}

int Drr::queues_for(int n_classes) {
  if (weights_)
    require(static_cast<int>(weights_->size()) == n_classes, "drr", "weights",
            "a list of " + std::to_string(n_classes) + " numbers (one per class)");
  std::vector<double> weights = weights_ ? *weights_ : std::vector<double>(n_classes, 1.0);
  quanta_.clear();
  for (double w : weights) {
    const int64_t q = static_cast<int64_t>(static_cast<double>(quantum_) * w);
    quanta_.push_back(q > 64 ? q : 64);
  }
  deficit_.assign(n_classes, 0);
  return n_classes;
}

int Drr::pick(EgressPort& port, uint32_t eligible) {
  const int n = static_cast<int>(deficit_.size());
  while (true) {
    const int q = turn_;
    if (eligible >> q & 1) {
      if (!credited_) {
        deficit_[q] += quanta_[q];
        credited_ = true;
      }
      const int64_t size = port.pool[port.head(q)].size;
      if (deficit_[q] >= size) {
        deficit_[q] -= size;
        if (port.qpkts[q] == 1) {
          deficit_[q] = 0;  // an emptied queue keeps no credit (DRR rule)
          advance(n);
        }
        return q;
      }
    } else {
      deficit_[q] = 0;
    }
    advance(n);
  }
}

void Drr::advance(int n) {
  turn_ = turn_ + 1 < n ? turn_ + 1 : 0;
  credited_ = false;
}

}  // namespace schedulers

std::unique_ptr<Scheduler> make_scheduler(const StageSpec& spec) {
  const Params& p = spec.params;
  if (spec.name == "fifo") {
    p.expect("scheduler 'fifo'", {});
    return std::make_unique<schedulers::Fifo>();
  }
  if (spec.name == "strict") {
    p.expect("scheduler 'strict'", {});
    return std::make_unique<schedulers::Strict>();
  }
  if (spec.name == "drr") {
    p.expect("scheduler 'drr'", {"quantum", "weights"});
    return std::make_unique<schedulers::Drr>(p.integer("quantum"), p.optional_list("weights"));
  }
  throw SpecError("scheduler '" + spec.name + "' has no native implementation");
}

std::vector<std::string> scheduler_names() { return {"fifo", "strict", "drr"}; }

}  // namespace dlcp
