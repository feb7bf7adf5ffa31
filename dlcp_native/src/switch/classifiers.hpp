// Classifiers (switch_models/classifiers.py): map a packet to a class, 0 = most important.
// `n_classes` tells the port how many queues a priority scheduler needs. One classifier
// instance serves the whole switch, so per-flow state (PIAS) is shared by its ports as a
// switch's would be.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "switch/packet.hpp"
#include "switch/registry.hpp"

namespace dlcp {

class Classifier {
 public:
  virtual ~Classifier() = default;
  virtual int classify(const Packet& pkt) = 0;
  int n_classes = 1;
};

namespace classifiers {

// Every packet in one class (`cls`); NDP uses cls=1 so trimmed headers can jump ahead.
class Single : public Classifier {
 public:
  explicit Single(int64_t cls);
  int classify(const Packet& pkt) override;

 private:
  int cls_;
};

// Trust the IP DSCP field (the data path turns it into `prio`); any switch could do this.
class Dscp : public Classifier {
 public:
  explicit Dscp(int64_t n_classes);
  int classify(const Packet& pkt) override;
};

// PIAS: a flow starts in the top class and is demoted as its bytes sent cross each
// threshold, so short flows finish first without knowing flow sizes.
class Pias : public Classifier {
 public:
  explicit Pias(const std::vector<double>& thresholds);
  int classify(const Packet& pkt) override;

 private:
  std::vector<int64_t> thresholds_;
  std::unordered_map<int64_t, int64_t> sent_;
};

// Flow-level layer priority (ByteScheduler, P3, TicTac): the sender's per-tensor priority
// (front layers first) decides; every packet of a tensor shares it. Non-DLCP traffic goes to
// `other_class`.
class Layer : public Classifier {
 public:
  Layer(int64_t n_classes, std::optional<int64_t> other_class);
  int classify(const Packet& pkt) override;

 private:
  int other_;
};

// DLCP packet-level priority: layer priority and gradient magnitude class together onto
// n classes, by a precomputed table. `layer_weight` 1 means layer only, 0 magnitude only.
class Dlcp : public Classifier {
 public:
  Dlcp(int64_t n_classes, double layer_weight, std::optional<int64_t> other_class,
       const std::vector<double>& loss_tolerant);
  int classify(const Packet& pkt) override;

 private:
  int other_;
  uint32_t lossless_ = 0;  // bit c: traffic class c goes to class 0, above every gradient
  std::array<uint8_t, 64> table_;
};

// Per-job classes, several jobs on one fabric: a packet's class is `classes[job]` (the
// DLCP header's job field); a job past the list, and traffic without a DLCP header, goes to
// `other_class`. With a priority scheduler a job goes first; with DRR's weights the jobs
// share a link by weight.
class Job : public Classifier {
 public:
  Job(const std::vector<double>& classes, int64_t n_classes, std::optional<int64_t> other_class);
  int classify(const Packet& pkt) override;

 private:
  int other_;
  std::vector<uint8_t> classes_;
};

}  // namespace classifiers

std::unique_ptr<Classifier> make_classifier(const StageSpec& spec);
std::vector<std::string> classifier_names();

}  // namespace dlcp
