// A worker's collectives inside a host stack (HostStack's methods): stack.py's `pump` for
// the steps WorkerCollectives runs, so that a collective's messages are taken in and sent
// without the driver. The worker's Python stack makes the senders (its first message to a
// rank, as its pump would) before it hands a collective over.
#include <stdexcept>
#include <string>

#include "host/host_stack.hpp"

namespace dlcp {

using namespace transport;

void HostStack::adopt_collectives(int32_t rank, ChunkPolicy policy) {
  if (!agent_reads_) throw std::invalid_argument("collectives need a stack whose agent reads the receiver's tensors");
  if (agent || collectives) throw std::invalid_argument("the stack has an agent or collectives already");
  collectives = std::make_unique<WorkerCollectives>(rank);
  chunk_policy_ = policy;
}

// Checked whole before anything is sent: a refused collective leaves nothing behind.
bool HostStack::begin_collective(Collective c, int64_t now) {
  if (!collectives) throw std::invalid_argument("the stack has no collectives in the core");
  if (collectives->active() || collectives->ended())
    throw std::invalid_argument("rank " + std::to_string(collectives->rank) + ": a collective is running");
  c.check();
  for (size_t k = 0; k < c.steps.size(); ++k) {
    const CollectiveStep& s = c.steps[k];
    if (s.send_dst < 0) continue;
    const Sender* sender = sender_to(s.send_dst);
    if (sender == nullptr)
      throw std::invalid_argument("rank " + std::to_string(collectives->rank) + ": no sender to rank " +
                                  std::to_string(s.send_dst) + " (the worker's stack makes it before the collective)");
    const int64_t n = s.send_stop - s.send_start, cs = sender->payload_size;
    if (c.mag_ptr[k + 1] - c.mag_ptr[k] != (n + cs - 1) / cs)
      throw std::invalid_argument("collective: step " + std::to_string(k) + "'s message of " + std::to_string(n) +
                                  " bytes needs one magnitude per " + std::to_string(cs) + "-byte chunk, got " +
                                  std::to_string(c.mag_ptr[k + 1] - c.mag_ptr[k]));
  }
  const bool ended = collectives->begin(std::move(c), now);
  for (const SizedMessage& m : collectives->take_sends()) send_sized(m, now);
  return ended;
}

void HostStack::pump_collectives(int64_t now) {
  for (Delivery& d : receiver_->take_delivered()) {
    record(d);
    collectives->on_message(d.src_rank, d.iteration, d.tensor_id, std::move(d.lost_ranges), now);
  }
  for (const SizedMessage& m : collectives->take_sends()) send_sized(m, now);
}

// stack.py pump for a payload-free message: its chunks planned from the magnitudes it came with.
void HostStack::send_sized(const SizedMessage& m, int64_t now) {
  Sender* sender = sender_to(m.dst);  // there: begin_collective checked
  const int64_t cs = sender->payload_size;
  auto buf = std::make_shared<Buffer>();
  buf->size = static_cast<size_t>(m.nbytes);
  sender->send(uint32_t(m.iteration), uint32_t(m.tensor_id), m.priority, std::move(buf),
               plan_message(m.magnitudes, m.nbytes, cs, chunk_policy_), now, m.tclass);
}

Sender* HostStack::sender_to(int64_t dst) const {
  for (const auto& [rank, s] : senders_)
    if (rank == dst) return s;
  return nullptr;
}

}  // namespace dlcp
