#include "switch/registry.hpp"

#include <set>

namespace dlcp {

void require(bool cond, const std::string& kind, const std::string& field,
             const std::string& allowed) {
  if (!cond) throw SpecError(kind + ": " + field + " must be " + allowed);
}

void Params::expect(const std::string& kind, std::initializer_list<const char*> names) const {
  std::set<std::string> want(names.begin(), names.end());
  for (const auto& [key, value] : values_)
    if (!want.count(key)) throw SpecError("native " + kind + " has no parameter '" + key + "'");
  for (const auto& name : want)
    if (!values_.count(name)) throw SpecError("native " + kind + " needs parameter '" + name + "'");
}

const Params::Value& Params::at(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) throw SpecError("missing parameter '" + key + "'");
  return it->second;
}

int64_t Params::integer(const std::string& key) const {
  if (auto v = std::get_if<int64_t>(&at(key))) return *v;
  throw SpecError("parameter '" + key + "' must be an integer");
}

std::optional<int64_t> Params::optional_integer(const std::string& key) const {
  if (std::holds_alternative<std::monostate>(at(key))) return std::nullopt;
  return integer(key);
}

double Params::number(const std::string& key) const {
  const Value& v = at(key);
  if (auto i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (auto d = std::get_if<double>(&v)) return *d;
  throw SpecError("parameter '" + key + "' must be a number");
}

std::string Params::text(const std::string& key) const {
  if (auto v = std::get_if<std::string>(&at(key))) return *v;
  throw SpecError("parameter '" + key + "' must be a string");
}

std::vector<double> Params::list(const std::string& key) const {
  if (auto v = std::get_if<std::vector<double>>(&at(key))) return *v;
  throw SpecError("parameter '" + key + "' must be a list of numbers");
}

std::optional<std::vector<double>> Params::optional_list(const std::string& key) const {
  if (std::holds_alternative<std::monostate>(at(key))) return std::nullopt;
  return list(key);
}

uint32_t tolerant_mask(const std::string& kind, const std::vector<double>& flags) {
  require(!flags.empty() && flags.size() <= 32, kind, "loss_tolerant", "a flag per traffic class (1..32 of them)");
  uint32_t mask = 0;
  for (size_t c = 0; c < flags.size(); ++c) {
    require(flags[c] == 0 || flags[c] == 1, kind, "loss_tolerant", "flags of 0 or 1");
    if (flags[c] != 0) mask |= 1u << c;
  }
  return mask;
}

}  // namespace dlcp
