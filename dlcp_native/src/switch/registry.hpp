// Named, parameterised pipeline stages, as in switch_models/registry.py: a stage is made from
// its name and its parameters.
//
// The Python spec (switch_models.pipeline) validates names and values and the wrapper fills in
// every default from the Python signatures, so the native core keeps no default of its own: a
// parameter it does not know, or one it lacks, means the two engines have drifted apart, and
// is an error rather than a silent difference.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace dlcp {

// A switch spec names something that does not exist or gives a bad value.
class SpecError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// Throw SpecError naming the stage, the field and what is allowed unless cond holds.
void require(bool cond, const std::string& kind, const std::string& field,
             const std::string& allowed);

class Params {
 public:
  using Value = std::variant<std::monostate, int64_t, double, std::string, std::vector<double>>;

  void set(const std::string& key, Value value) { values_[key] = std::move(value); }
  // The keys must be exactly `names`: one more or one fewer is a drift from the Python stage.
  void expect(const std::string& kind, std::initializer_list<const char*> names) const;

  int64_t integer(const std::string& key) const;
  std::optional<int64_t> optional_integer(const std::string& key) const;
  double number(const std::string& key) const;  // an integer or a float
  std::string text(const std::string& key) const;
  std::vector<double> list(const std::string& key) const;
  std::optional<std::vector<double>> optional_list(const std::string& key) const;

 private:
  const Value& at(const std::string& key) const;
  std::map<std::string, Value> values_;
};

// A stage's `loss_tolerant`, which the wrapper turns from names into one flag (0 or 1) per
// traffic class code (switch_models/traffic.py), as a bit per class code.
uint32_t tolerant_mask(const std::string& kind, const std::vector<double>& flags);

struct StageSpec {
  std::string name;
  Params params;
};

// One stage per step, as switch_models.pipeline.PipelineSpec holds them.
struct PipelineSpec {
  StageSpec load_balancer, classifier, queue_manager, scheduler;
};

}  // namespace dlcp
