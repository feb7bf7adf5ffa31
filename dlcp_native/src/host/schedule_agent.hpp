// A host agent that runs one rank's program of a training schedule, in the core: the twin of
// dlcp_emu/host/schedule_agent.py (ScheduleAgent), method for method (start, next_timer,
// on_timer, on_message, take_sends; _start_iteration, _ready, _arrival, _send, _end,
// _iteration_done), so that a schedule run calls no Python per message. The program comes as
// flat arrays (dlcp_emu/host/schedule_arrays.py); what a message carries is drawn from the
// counter-based hash of dlcp_emu/host/schedule_draws.py, bit for bit.
//
// The agent says what to send (`Outgoing`); its stack (host_stack.hpp `pump`) makes the
// message and hands it to the sender, as stack.py's pump does for the Python agent.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace dlcp {

constexpr int64_t GRADIENT_CLASS = 1;  // workloads.schedule.TrafficClass.GRADIENT: the one droppable class

// schedule_arrays.py RankArrays: per op, then CSR of dependencies, sends and receives.
struct RankProgram {
  int32_t rank = 0;
  std::vector<int64_t> duration_ns;
  std::vector<uint8_t> is_compute, tclass, priority;
  std::vector<int64_t> dep_ptr, dep_idx;
  std::vector<int64_t> send_ptr, send_gid, send_dst, send_nbytes, send_after, send_tid;
  std::vector<int64_t> recv_ptr, recv_gid;
  std::vector<int64_t> key_src, key_tid, key_gid;  // (src, tensor_id) -> gid
  int64_t compute_ns = 0;

  size_t n_ops() const { return duration_ns.size(); }
  void check() const;  // std::invalid_argument naming the array that does not fit
};

struct MessageRecord {  // schedule_agent.py MessageRecord
  int64_t iteration, gid, src, dst, tclass, nbytes, sent_ns, done_ns, lost_bytes;
};
struct IterationRecord {  // agent.py IterationRecord
  int64_t iteration, start_ns, compute_ns, backward_end_ns, comm_end_ns;
};

// agent.py Outgoing, as a schedule sends it: `exact` (not a gradient) is never droppable and
// carries zeros; else the values (payload) or chunk magnitudes (payload-free) are drawn
// from (seed, iteration, gid).
struct Outgoing {
  int64_t dst, iteration, tensor_id, priority, nbytes, gid;
  bool exact;
  uint8_t tclass;  // workloads.schedule.TrafficClass of the op sending it
};

// schedule_draws.py: SplitMix64 of (seed, iteration, gid), then its k-th output.
uint64_t message_key(uint64_t seed, uint64_t iteration, uint64_t gid);
uint64_t draw(uint64_t key, uint64_t k);  // k from 0
std::vector<float> message_values(uint64_t key, int64_t n);
std::vector<double> chunk_draws(uint64_t key, int64_t nbytes, int64_t chunk_bytes);

class ScheduleAgent {
 public:
  ScheduleAgent(RankProgram program, int64_t iterations, bool sizes, uint64_t seed);

  // -- the sans-I/O surface
  void start(int64_t now);
  std::optional<int64_t> next_timer() const;
  void on_timer(int64_t now);
  std::vector<Outgoing> take_sends() { return std::exchange(outbox_, {}); }
  void on_message(int64_t src, int64_t iteration, int64_t tid, int64_t lost_bytes, int64_t now);

  const int32_t rank;
  const bool sizes;      // payload-free
  const uint64_t seed;
  bool done = false;
  int64_t iteration = -1;
  std::vector<IterationRecord> iteration_records;
  std::vector<MessageRecord> sent, received;
  std::vector<int64_t> busy;  // per iteration: ns the rank computed (union of its compute ops)
  // Rows a run records of `per_iteration` a iteration, for reserving (at most 2**20).
  size_t record_rows(size_t per_iteration) const;

 private:
  void _start_iteration(int64_t i, int64_t now);
  bool _ready(int64_t op, int64_t now);
  void _arrival(int64_t d, int64_t now);
  void _send(int64_t op, int64_t s, int64_t now);
  void _end(std::vector<int64_t> ops, int64_t now);
  void _iteration_done(int64_t now);
  bool got(int64_t d) const;  // arrived in this iteration

  struct Timer {
    int64_t end, seq, op;
  };
  static bool later(const Timer& a, const Timer& b) { return a.end != b.end ? a.end > b.end : a.seq > b.seq; }
  const RankProgram p_;
  const int64_t iterations_;
  std::vector<int64_t> succ_ptr_, succ_;                   // CSR: ops waiting for each op
  // The gids this rank receives, each by a dense index d (the order they first appear in the
  // program's receives): the per-message lookups index arrays, not hash maps.
  static constexpr int64_t NO_RECV = -1;  // a gid this rank never receives
  std::vector<int64_t> gid_of_, op_of_;                     // d -> gid, d -> op (op_of_recv)
  std::vector<int64_t> recv_d_, after_d_;                   // per receive entry, per send: d (after: NO_RECV too)
  // src << 32 | tid, sorted, and its d (NO_RECV: in no op's receives): a binary search over
  // a few KB, not a hash node a message
  std::vector<uint64_t> recv_keys_;
  std::vector<int64_t> recv_d_of_key_;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> waiting_sends_;  // d -> (op, send)
  // iteration -> arrived[d] (schedule_agent.py's `arrived`, {gid: lost bytes}, of which only
  // whether a gid came is read)
  std::vector<std::pair<int64_t, std::vector<uint8_t>>> arrived_;
  std::vector<Timer> timers_;  // min-heap on (end, seq)
  std::vector<Outgoing> outbox_;
  std::vector<int64_t> pending_deps_, left_;
  std::vector<uint8_t> started_;
  int64_t n_left_ = 0, busy_until_ = 0, seq_ = 0;
};

}  // namespace dlcp
