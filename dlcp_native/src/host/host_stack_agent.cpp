// A schedule agent inside a host stack (HostStack's methods): stack.py's `pump` and
// `agent_turn` for an agent in the core, so that a schedule's messages are made, sent and
// taken in without a driver. Message making is in one place, `send`.
#include <cmath>
#include <stdexcept>
#include <string>

#include "host/host_stack.hpp"
#include "transport/transport_message.hpp"

namespace dlcp {

namespace {

using namespace transport;

constexpr uint8_t TOP_CLASS = 7;  // stack.py: an exact message carries the largest-magnitude class

}  // namespace

void HostStack::adopt_agent(std::unique_ptr<ScheduleAgent> a, SenderSpec spec) {
  if (!agent_reads_) throw std::invalid_argument("an agent needs a stack whose agent reads the receiver's tensors");
  if (agent || !senders_.empty()) throw std::invalid_argument("the stack has an agent or senders already");
  agent = std::move(a);
  spec_ = std::move(spec);
  deliveries.reserve(agent->received.capacity());  // a delivery a message received
}

void HostStack::run_agent(int64_t now, bool starting) {
  if (starting) agent->start(now);
  pump(now);
  const std::optional<int64_t> t = agent->next_timer();
  if (t && *t <= now) {  // agent_turn: how late compute ended against the plan
    timer_lateness_sum += now - *t;
    agent->on_timer(now);
    pump(now);
  }
  agent_timer = agent->next_timer();
}

// stack.py `pump`: the tensors the receiver delivered to the agent, and its sends to the senders.
void HostStack::pump(int64_t now) {
  for (Delivery& d : receiver_->take_delivered()) {
    int64_t lost = 0;
    for (const auto& [a, b] : d.lost_ranges) lost += b - a;
    record(d);
    agent->on_message(d.src_rank, d.iteration, d.tensor_id, lost, now);
  }
  for (const Outgoing& m : agent->take_sends()) send(m, now);
}

void HostStack::record(Delivery& d) {
  deliveries.push_back({d.src_rank, d.iteration, d.tensor_id, d.total, d.lost_bytes, d.first_ns, d.done_ns,
                        std::move(d.lost_bytes_by_class)});
}

ChunkPlan plan_message(const std::vector<double>& mags, int64_t nbytes, int64_t cs, const ChunkPolicy& p) {
  ChunkPlan plan = plan_chunks(mags, nbytes, cs, p.droppable_fraction, p.loss_bound, p.bounded_loss, std::nullopt);
  if (!p.bounded_loss) plan.droppable.assign(plan.droppable.size(), 0);
  // prepare: the bound is the policy's whenever the transport has bounded loss
  plan.bound_bytes = p.bounded_loss ? static_cast<int64_t>(std::floor(p.loss_bound * double(nbytes))) : 0;
  return plan;
}

// A message as stack.py makes it of an Outgoing and as `prepare` plans it: an exact one
// (not a gradient) is never droppable and has the top class; a gradient's chunks are
// classed and chosen droppable by the MagnitudePolicy from their magnitudes (the mean |value|
// of each chunk, or payload-free the drawn ones).
void HostStack::send(const Outgoing& m, int64_t now) {
  const SenderSpec& spec = *spec_;
  Sender* sender = nullptr;
  for (auto& [rank, s] : senders_)
    if (rank == m.dst) sender = s;
  if (sender == nullptr) {
    auto made = std::make_unique<Sender>(spec.bounded_loss, agent->rank, m.dst, job, spec.mtu, spec.cc, spec.rtt,
                                         spec.reorder_fraction);
    sender = made.get();
    own_senders_.push_back(std::move(made));
    add_sender(sender);
  }
  const int64_t cs = sender->payload_size;
  const int64_t count = (m.nbytes + cs - 1) / cs;
  auto buf = std::make_shared<Buffer>();
  buf->size = static_cast<size_t>(m.nbytes);
  const uint64_t key = message_key(agent->seed, uint64_t(m.iteration), uint64_t(m.gid));
  ChunkPlan plan;
  if (m.exact) {
    if (!agent->sizes) {  // zeros
      auto zeros = std::make_shared<std::vector<uint8_t>>(buf->size, 0);
      buf->data = zeros->data();
      buf->owner = zeros;
    }
    plan.mag_class.assign(size_t(count), TOP_CLASS);
    plan.droppable.assign(size_t(count), 0);
  } else {
    std::vector<double> mags;
    if (agent->sizes) {
      mags = chunk_draws(key, m.nbytes, cs);
    } else {
      auto values = std::make_shared<std::vector<float>>(message_values(key, m.nbytes / 4));
      mags = chunk_magnitudes(values->data(), int64_t(values->size()), cs);
      buf->data = reinterpret_cast<const uint8_t*>(values->data());
      buf->owner = values;
    }
    plan = plan_message(mags, m.nbytes, cs, {spec.bounded_loss, spec.droppable_fraction, spec.loss_bound});
  }
  if (m.exact)  // prepare: the bound is the policy's whenever the transport has bounded loss
    plan.bound_bytes = spec.bounded_loss ? static_cast<int64_t>(std::floor(spec.loss_bound * double(m.nbytes))) : 0;
  sender->send(uint32_t(m.iteration), uint32_t(m.tensor_id), m.priority, std::move(buf), plan, now, m.tclass);
}

}  // namespace dlcp
