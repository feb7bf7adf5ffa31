#include "switch/classifiers.hpp"

#include <algorithm>
#include <cmath>

namespace dlcp {

namespace classifiers {

namespace {

void check_classes(const std::string& kind, int64_t n) {
  require(1 <= n && n <= 8, kind, "n_classes", "an integer in 1..8");
}

// Sender priority 0..7 onto n classes.
int scale(int prio, int n) { return prio * n >> 3; }

int other_class(const std::string& kind, std::optional<int64_t> other, int n_classes) {
  if (!other) return n_classes - 1;
  require(0 <= *other && *other < n_classes, kind, "other_class",
          "an integer in 0.." + std::to_string(n_classes - 1));
  return static_cast<int>(*other);
}

}  // namespace

Single::Single(int64_t cls) {
  require(0 <= cls && cls <= 7, "single", "cls", "an integer in 0..7");
  cls_ = static_cast<int>(cls);
  n_classes = cls_ + 1;
}

int Single::classify(const Packet&) { return cls_; }

Dscp::Dscp(int64_t n) {
  check_classes("dscp", n);
  n_classes = static_cast<int>(n);
}

int Dscp::classify(const Packet& pkt) { return scale(pkt.prio, n_classes); }

Pias::Pias(const std::vector<double>& thresholds) {
  for (double t : thresholds) thresholds_.push_back(static_cast<int64_t>(t));
  require(1 <= thresholds_.size() && thresholds_.size() <= 7, "pias", "thresholds",
          "1..7 increasing positive byte counts");
  n_classes = static_cast<int>(thresholds_.size()) + 1;
}

int Pias::classify(const Packet& pkt) {
  int64_t& sent = sent_[pkt.flow];  // a new flow starts at 0
  const int64_t before = sent;
  sent = before + pkt.size;
  // bisect_left: demoted once sent exceeds a threshold
  return static_cast<int>(std::lower_bound(thresholds_.begin(), thresholds_.end(), before) -
                          thresholds_.begin());
}

Layer::Layer(int64_t n, std::optional<int64_t> other) {
  check_classes("layer", n);
  n_classes = static_cast<int>(n);
  other_ = other_class("layer", other, n_classes);
}

int Layer::classify(const Packet& pkt) {
  if (pkt.dlcp) return scale(pkt.prio, n_classes);
  return other_;
}

Dlcp::Dlcp(int64_t n, double w, std::optional<int64_t> other, const std::vector<double>& loss_tolerant) {
  check_classes("dlcp", n);
  require(0 <= w && w <= 1, "dlcp", "layer_weight", "a number in [0, 1]");
  n_classes = static_cast<int>(n);
  other_ = other_class("dlcp", other, n_classes);
  // Every class but the tolerant ones and `none` (which says nothing) must arrive whole.
  const uint32_t all = loss_tolerant.size() >= 32 ? ~0u : (1u << loss_tolerant.size()) - 1;
  lossless_ = ~tolerant_mask("dlcp", loss_tolerant) & all & ~(1u << TCLASS_NONE);
  const int top = n_classes > 1 && lossless_ ? 1 : 0;  // class 0 kept for them
  // Urgency in [0, 7]: low layer priority number and high magnitude are both urgent.
  // Python's round() halves to even, as nearbyint does in the default rounding mode.
  for (int prio = 0; prio < 8; ++prio)
    for (int mag = 0; mag < 8; ++mag)
      table_[prio * 8 + mag] = static_cast<uint8_t>(
          top + std::nearbyint((w * prio + (1 - w) * (7 - mag)) * (n_classes - 1 - top) / 7));
}

int Dlcp::classify(const Packet& pkt) {
  if (pkt.dlcp) return lossless_ >> pkt.tclass & 1u ? 0 : table_[(pkt.prio << 3) | pkt.mag];
  return other_;
}

Job::Job(const std::vector<double>& classes, int64_t n, std::optional<int64_t> other) {
  check_classes("job", n);
  n_classes = static_cast<int>(n);
  require(1 <= classes.size() && classes.size() <= 256, "job", "classes",
          "a list of 1..256 classes in 0.." + std::to_string(n_classes - 1) + ", one a job id");
  for (double c : classes) {
    require(c == std::floor(c) && 0 <= c && c < n_classes, "job", "classes",
            "a list of 1..256 classes in 0.." + std::to_string(n_classes - 1) + ", one a job id");
    classes_.push_back(static_cast<uint8_t>(c));
  }
  other_ = other_class("job", other, n_classes);
}

int Job::classify(const Packet& pkt) {
  return pkt.job < classes_.size() ? classes_[pkt.job] : other_;
}

}  // namespace classifiers

std::unique_ptr<Classifier> make_classifier(const StageSpec& spec) {
  const Params& p = spec.params;
  if (spec.name == "single") {
    p.expect("classifier 'single'", {"cls"});
    return std::make_unique<classifiers::Single>(p.integer("cls"));
  }
  if (spec.name == "dscp") {
    p.expect("classifier 'dscp'", {"n_classes"});
    return std::make_unique<classifiers::Dscp>(p.integer("n_classes"));
  }
  if (spec.name == "pias") {
    p.expect("classifier 'pias'", {"thresholds"});
    return std::make_unique<classifiers::Pias>(p.list("thresholds"));
  }
  if (spec.name == "layer") {
    p.expect("classifier 'layer'", {"n_classes", "other_class"});
    return std::make_unique<classifiers::Layer>(p.integer("n_classes"), p.optional_integer("other_class"));
  }
  if (spec.name == "dlcp") {
    p.expect("classifier 'dlcp'", {"n_classes", "layer_weight", "other_class", "loss_tolerant"});
    return std::make_unique<classifiers::Dlcp>(p.integer("n_classes"), p.number("layer_weight"),
                                            p.optional_integer("other_class"), p.list("loss_tolerant"));
  }
  if (spec.name == "job") {
    p.expect("classifier 'job'", {"classes", "n_classes", "other_class"});
    return std::make_unique<classifiers::Job>(p.list("classes"), p.integer("n_classes"),
                                           p.optional_integer("other_class"));
  }
  throw SpecError("classifier '" + spec.name + "' has no native implementation");
}

std::vector<std::string> classifier_names() { return {"single", "dscp", "pias", "layer", "dlcp", "job"}; }

}  // namespace dlcp
