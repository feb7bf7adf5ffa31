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

bool HostStack::begin_collective(Collective c, int64_t now) {
  if (!collectives) throw std::invalid_argument("the stack has no collectives in the core");
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
  Sender* sender = nullptr;
  for (auto& [rank, s] : senders_)
    if (rank == m.dst) sender = s;
  if (sender == nullptr)
    throw std::invalid_argument("rank " + std::to_string(collectives->rank) + ": no sender to rank " +
                                std::to_string(m.dst) + " (the worker's stack makes it before the collective)");
  const int64_t cs = sender->payload_size;
  if (int64_t(m.magnitudes.size()) != (m.nbytes + cs - 1) / cs)
    throw std::invalid_argument("a collective's message of " + std::to_string(m.nbytes) + " bytes needs one magnitude per " +
                                std::to_string(cs) + "-byte chunk, got " + std::to_string(m.magnitudes.size()));
  auto buf = std::make_shared<Buffer>();
  buf->size = static_cast<size_t>(m.nbytes);
  sender->send(uint32_t(m.iteration), uint32_t(m.tensor_id), m.priority, std::move(buf),
               plan_message(m.magnitudes, m.nbytes, cs, chunk_policy_), now, m.tclass);
}

}  // namespace dlcp
