// A data-parallel worker's collectives in the core: the twin of the communication half of
// dlcp_emu/host/agent.py's Worker for payload-free runs (`on_message`, `_progress`,
// `_send_size`, method for method), so that a ring's steps run without Python per message.
// Python's Worker keeps the rest (compute, the bucket queue, every record) and hands a
// collective over as it begins it (`begin`: the steps Pattern.steps gave it, and its sends'
// chunk magnitudes, drawn in send order from the collective's generator as `_send_size`
// would draw them); it hears back once, when the last step is done (`take_ended`), and
// finishes the collective itself (dlcp_emu/sim/core_ring.py).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

namespace dlcp {

using ByteRanges = std::vector<std::pair<int64_t, int64_t>>;

// One of agent.py _Collective.steps: (phase, step id, send Transfer | None, recv Transfer | None),
// with the message's tensor_id(bucket, phase, step).
struct CollectiveStep {
  int64_t phase, tensor_id;
  int64_t send_dst, send_start, send_stop;  // send_dst < 0: no send
  int64_t recv_src, recv_start, recv_stop;  // recv_src < 0: nothing to receive
};

// agent.py _Collective, payload-free: what its steps need.
struct Collective {
  int64_t iteration = 0, priority = 0;
  uint8_t tclass = 1;  // wire/layout.py TCLASS_GRADIENT
  std::vector<CollectiveStep> steps;
  std::vector<int64_t> mag_ptr;  // step k's send carries mags[mag_ptr[k] .. mag_ptr[k + 1])
  std::vector<double> mags;
  size_t k = 0;
  bool sent = false;
  ByteRanges lost;  // byte ranges of the bucket the transport zero-filled
  void check() const;  // std::invalid_argument naming what does not fit
};

// agent.py Outgoing, payload-free: its size and its chunks' magnitudes.
struct SizedMessage {
  int64_t dst, iteration, tensor_id, priority, nbytes;
  uint8_t tclass;
  std::vector<double> magnitudes;
};

class WorkerCollectives {
 public:
  explicit WorkerCollectives(int32_t rank_) : rank(rank_) {}

  // Worker._progress on a collective it has just begun: its steps from here on. True if
  // it ended at once (its messages were all in already); then `take_ended` has it.
  bool begin(Collective c, int64_t now);
  // Worker.on_message: a whole message, with the (start, stop) byte ranges of it zero-filled.
  void on_message(int64_t src, int64_t iteration, int64_t tid, ByteRanges lost, int64_t now);
  std::vector<SizedMessage> take_sends() { return std::exchange(outbox_, {}); }
  // The collective whose last step is done, for Python's _finish_collective: its lost ranges.
  bool ended() const { return ended_.has_value(); }
  ByteRanges take_ended();
  bool active() const { return active_.has_value(); }

  const int32_t rank;

 private:
  void _progress(int64_t now);
  void _send_size(const Collective& c, const CollectiveStep& s);

  std::optional<Collective> active_;
  std::optional<ByteRanges> ended_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, ByteRanges> inbox_;  // (iteration, tid, src)
  std::vector<SizedMessage> outbox_;
};

}  // namespace dlcp
