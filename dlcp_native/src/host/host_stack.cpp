#include "host/host_stack.hpp"

#include <stdexcept>
#include <string>

#include "switch/nic.hpp"  // ETH_MIN

namespace dlcp {

namespace {

using namespace transport;

constexpr int64_t TCP = 6, UDP = wire::IPPROTO_UDP, TCP_PORT = wire::BACKGROUND_TCP_PORT;

bool is_feedback(uint8_t type) { return type == ACK || type == BITMAP; }
bool ecn_capable(uint8_t type) { return type == DATA || type == PROBE; }  // transport/ecn.py

}  // namespace

PacketRow packet_row(const Header& h, int64_t payload_len) {
  PacketRow r;
  r.src = h.src_rank;
  r.dst = h.dst_rank;
  r.type = h.type;
  r.iteration = h.iteration;
  r.tensor_id = h.tensor_id;
  r.chunk = h.chunk_index;
  r.send_ts_ns = h.send_ts_ns;
  r.flags = h.flags;
  r.priority = h.priority;
  r.mag_class = h.mag_class;
  r.tclass = h.tclass;
  r.size = FRAME_OVERHEAD + payload_len;
  return r;
}

int64_t python_tuple_hash(const int64_t* items, size_t n) {
  constexpr uint64_t P1 = 11400714785074694791ULL, P2 = 14029467366897019727ULL, P5 = 2870177450012600261ULL;
  constexpr int64_t MODULUS = (int64_t{1} << 61) - 1;
  uint64_t acc = P5;
  for (size_t i = 0; i < n; ++i) {
    const int64_t v = items[i];
    if (v < 0 || v >= MODULUS) throw std::invalid_argument("python_tuple_hash: an item out of 0 .. 2**61 - 2");
    acc += uint64_t(v) * P2;
    acc = (acc << 31) | (acc >> 33);
    acc *= P1;
  }
  acc += uint64_t(n) ^ (P5 ^ 3527539ULL);
  if (acc == ~uint64_t{0}) return 1546275796;
  return static_cast<int64_t>(acc);
}

HostStack::HostStack(int32_t host_, uint16_t job_, Receiver* receiver, StackWire wire, bool agent_reads)
    : host(host_), job(job_), receiver_(receiver), wire_(std::move(wire)), agent_reads_(agent_reads) {
  if (wire_.ip_of_rank.size() != wire_.host_of_rank.size())
    throw std::invalid_argument("a stack's wire: one address per rank");
  pair_flow_.assign(wire_.host_of_rank.size(), -1);
}

void HostStack::add_sender(Sender* sender) {
  for (const auto& [rank, s] : senders_)
    if (rank == sender->dst_rank) throw std::invalid_argument("a sender to rank " + std::to_string(rank) + " exists");
  if (sender->dst_rank >= wire_.host_of_rank.size() || wire_.host_of_rank[sender->dst_rank] < 0)
    throw std::invalid_argument("a sender to rank " + std::to_string(sender->dst_rank) + ", which no host has");
  if (sender->watched())
    throw std::invalid_argument("the sender to rank " + std::to_string(sender->dst_rank) +
                                " is polled by another stack already");
  senders_.emplace_back(sender->dst_rank, sender);
  sender->watch(watch_, watch_->add());  // whatever it was given before: polled at the next poll
}

void HostStack::receive(const Header& h, const InPayload& payload, int64_t now, bool ce) {
  if (records) {  // packet_log.py `receive`
    if (int64_t(records->received.size()) < records->max_records) {
      PacketRow r = packet_row(h, int64_t(payload.size));
      r.recv_ns = now;
      r.ce = ce;
      records->received.push_back(r);
    } else {
      records->overflow += 1;
    }
  }
  if (!is_feedback(h.type)) {
    receiver_->receive(h, payload, now, ce);
    if (!agent_reads_) receiver_->take_delivered();
    return;
  }
  for (auto& [rank, sender] : senders_)
    if (rank == h.src_rank) {
      sender->receive(h, payload, now, ce);
      for (SendResult& r : sender->take_completed()) completions.push_back(r);
      return;
    }
}

void HostStack::poll(int64_t now, std::vector<OutPacket>& out) {
  const size_t first = out.size();
  receiver_->poll(now, out);
  // The senders given input since their last poll and those whose timeout has come, in the
  // order made, as Python polls every sender: any other would put out nothing and change
  // nothing (why the Python twin, which polls every one, gives the same packets).
  transport::SenderWatch& w = *watch_;
  if (w.any_touched() || w.next_due() <= now) {
    w.take_due(now, visit_);
    for (const uint32_t i : visit_) {
      Sender* sender = senders_[i].second;
      sender->poll(now, out);
      for (SendResult& r : sender->take_completed()) completions.push_back(r);
      w.set_due(i, sender->next_timeout());  // what next_timeout would ask it: nothing changes it until then
    }
    visit_.clear();
    w.refresh();
  }
  if (records) {  // packet_log.py `poll`
    for (size_t i = first; i < out.size(); ++i) {
      if (int64_t(records->sent.size()) >= records->max_records) {
        records->overflow += int64_t(out.size() - i);
        break;
      }
      const OutPacket& p = out[i];
      records->sent.push_back(packet_row(p.h, int64_t(p.in_payload().size)));
    }
  }
}

int64_t HostStack::next_due() {
  int64_t t = agent_timer ? *agent_timer : NO_DUE;
  const std::optional<int64_t> r = receiver_->next_timeout();  // its pull pacer's, if it paces pulls
  if (r && *r < t) t = *r;
  // Senders given input since their last poll (none right after a poll) say their timeout anew.
  transport::SenderWatch& w = *watch_;
  if (w.any_touched()) {
    for (const uint32_t i : w.touched()) w.set_due(i, senders_[i].second->next_timeout());
    w.refresh();
  }
  return w.next_due() < t ? w.next_due() : t;
}

bool HostStack::needs_agent(int64_t now) const {
  return (agent_reads_ && receiver_->has_delivered()) || (agent_timer && *agent_timer <= now) ||
         (collectives && collectives->ended());
}

// hosts.py: the emulator's data path hashes the 5-tuple (frames.py); the same hash here makes
// ECMP choose the same paths in both worlds.
int64_t HostStack::flow(const Header& h) {
  const int64_t dst_ip = wire_.ip_of_rank.at(h.dst_rank);
  if (wire_.udp_port < 0) return python_tuple_hash({wire_.ip, dst_ip, TCP, h.tensor_id & 0xFFFF, TCP_PORT});
  int64_t& f = pair_flow_.at(h.dst_rank);
  if (f == -1) f = python_tuple_hash({wire_.ip, dst_ip, UDP, wire_.udp_port, wire_.udp_port});
  return f;
}

Packet HostStack::packet(const OutPacket& out) {
  const Header& h = out.h;
  const int64_t payload = int64_t(out.in_payload().size);
  Packet p;
  p.size = static_cast<int32_t>(FRAME_OVERHEAD + payload > ETH_MIN ? FRAME_OVERHEAD + payload : ETH_MIN);
  p.dst = wire_.host_of_rank.at(h.dst_rank);
  p.flow = flow(h);
  p.ect = wire_.ect && ecn_capable(h.type);
  p.ce = false;
  p.dlcp = wire_.dlcp;
  // wire/packet.py dlcp_packet: a control packet is all header, never cut.
  p.header_size = wire_.dlcp && h.type != DATA ? p.size : FRAME_OVERHEAD;
  if (wire_.dlcp) {  // wire/packet.py dlcp_packet
    p.prio = h.priority;
    p.mag = h.mag_class;
    p.tclass = h.tclass;
    p.layer = static_cast<int32_t>(h.tensor_id >> TENSOR_LAYER_SHIFT);
    p.droppable = (h.flags & FLAG_DROPPABLE) != 0;
    p.job = h.job;
  } else {  // plain_packet
    p.prio = NOT_DLCP_PRIORITY;
    p.mag = 0;
    p.tclass = 0;
    p.layer = 0;
    p.droppable = false;
  }
  return p;
}

}  // namespace dlcp
