// The sending endpoint, sans-I/O (dlcp_emu/transport/sender.py): `send` queues a tensor,
// `poll` answers what to put on the wire, `receive` takes ACKs and BITMAPs, `next_timeout`
// says when to poll again without input, `take_completed` lists finished tensors. One sender
// serves one (job, src_rank, dst_rank) pair and shares one congestion window among its
// tensors; the tensor with the highest layer priority (lowest number, then the oldest) sends
// first, its retransmissions before its new chunks.
//
// `bounded_loss` false is ReliableSender, true DlcpSender (below). Loss detection (RACK-like, per
// lane, and the RTO) is in transport_loss_detection.cpp, as loss_detection.py in Python; what
// ACKs and BITMAPs do to a message, in transport_sender_acks.cpp; what goes on the wire, in
// transport_sender_packets.cpp. Messages live in reused slots (transport_outbound.hpp).
//
// Where Python iterates a dict, this iterates in the same (insertion) order; heaps order by
// the same keys, which are unique, so every pop is the one Python makes.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "transport/transport_congestion.hpp"
#include "transport/transport_message.hpp"
#include "transport/transport_outbound.hpp"
#include "transport/transport_sender_watch.hpp"
#include "base/ring.hpp"
#include "wire/transport_packet.hpp"

namespace dlcp::transport {

struct LaneEntry {
  int64_t seq;
  int64_t ts;
  OutRef m;
  uint32_t c;
};

// One lane (layer priority, magnitude class): loss is evidenced only within a lane.
struct Lane {
  int idx = 0;              // priority << 3 | magnitude class
  Ring<LaneEntry> q;        // in send order; stale entries skipped
  int64_t rack_ts = -1;     // send time of the latest-sent delivered packet
  int64_t rack_seq = -1;
  int64_t rack_rtt = 0;
  std::optional<int64_t> deadline;  // pending reordering timer
};

class Sender {
 public:
  Sender(bool bounded_loss, int64_t src_rank, int64_t dst_rank, int64_t job, int64_t mtu,
         CongestionControl cc, RttEstimator rtt, double reorder_fraction = 0.25);

  // A tensor of `buf->size` bytes (buf->data null: payload-free) with its plan (one class and
  // one droppable flag per chunk; droppable is ignored unless bounded_loss).
  // tclass: the traffic class every packet of it carries (wire::TrafficClass).
  void send(uint32_t iteration, uint32_t tensor_id, int64_t priority, std::shared_ptr<const Buffer> buf,
            const ChunkPlan& plan, int64_t now, uint8_t tclass = wire::TCLASS_GRADIENT);
  void poll(int64_t now, std::vector<OutPacket>& out);
  void receive(const Header& h, const InPayload& payload, int64_t now, bool ce = false);
  std::optional<int64_t> next_timeout();
  std::vector<SendResult> take_completed() { return std::exchange(completed_, {}); }
  // From now on `send` and `receive` tell `w` (as sender `index` of its stack).
  void watch(std::shared_ptr<SenderWatch> w, uint32_t index) {
    watch_ = std::move(w);
    watch_index_ = index;
  }
  bool watched() const { return watch_ != nullptr; }

  size_t pending() const { return msgs_.size(); }
  int64_t inflight() const { return inflight_; }
  bool sending(uint32_t iteration, uint32_t tensor_id) const { return msgs_.contains(key(iteration, tensor_id)); }
  int64_t chunks(int64_t nbytes) const { return (nbytes + payload_size - 1) / payload_size; }

  const bool bounded_loss;
  const uint16_t src_rank, dst_rank, job;
  const int64_t payload_size;
  const double reorder_fraction;
  CongestionControl cc;
  RttEstimator rtt;
  int64_t timeouts = 0, losses = 0, malformed = 0, spurious = 0, tail_probes = 0;
  double reo_mult() const { return reo_mult_; }

 private:
  static uint64_t key(uint32_t iteration, uint32_t tensor_id) { return uint64_t(iteration) << 32 | tensor_id; }

  // sending (transport_sender_packets.cpp)
  void make_ready(Outbound& m);
  std::pair<int64_t, bool> next_chunk(Outbound& m);
  void emit(Outbound& m, uint32_t c, bool retx, int64_t now, std::vector<OutPacket>& out);
  void probe_packets(Outbound& m, int64_t now, std::vector<OutPacket>& out);
  void queue_probe(Outbound& m);

  // feedback (transport_sender_acks.cpp)
  void on_ack(Outbound& m, const Header& h, const InPayload& p, int64_t now);
  void on_bitmap(Outbound& m, const Header& h, const InPayload& p, int64_t now);
  void progress(Outbound& m, int64_t newly, int64_t seq, bool ce, int64_t now);
  int64_t advance_cum(Outbound& m, uint32_t cum);
  int64_t deliver(Outbound& m, uint32_t c);
  void lost(Outbound& m, uint32_t c, int64_t seq);
  void finish(Outbound& m, int64_t now);
  // The lane entry's message if that transmission is still in flight (not finished, not
  // sent again, not delivered or lost since).
  Outbound* in_flight(OutRef r, uint32_t c, int64_t seq) {
    Outbound* m = msgs_.live(r);
    return m && m->ch[c].tx_seq == seq && m->ch[c].state == IN_FLIGHT ? m : nullptr;
  }

  // loss detection (transport_loss_detection.cpp)
  int64_t reorder_window() const;
  void on_spurious();
  void detect(Lane& lane, int64_t now);
  void run_timers(int64_t now);
  void arm_pto(int64_t now);
  void on_pto();
  void send_tlp(int64_t now, std::vector<OutPacket>& out);
  void on_rto(int64_t now);

  struct Tlp {  // the outstanding tail-loss probe
    OutRef m;
    uint32_t c;
    int64_t seq;         // the probe's transmission
    int64_t probed_seq;  // the transmission it repeats
  };
  struct TlpDue {  // the packet the probe timer chose, sent by this poll
    int64_t seq;
    OutRef m;
    uint32_t c;
  };

  struct Ready {
    uint8_t priority;
    int64_t order;
    OutRef m;
  };
  struct ReadyAfter {  // std heaps are max-heaps: "after" puts the least key on top
    bool operator()(const Ready& a, const Ready& b) const {
      return a.priority != b.priority ? a.priority > b.priority : a.order > b.order;
    }
  };
  using Timer = std::pair<int64_t, int>;  // (deadline, lane index)

  Outbounds msgs_;      // by (iteration, tensor_id), in send order: Python's dict
  uint32_t last_ = Outbounds::NONE;  // the last answer's message's slot (most follow one for the same), until it finishes
  uint64_t last_key_ = 0;
  std::vector<Ready> ready_;                          // heap of tensors with work to send
  int64_t order_ = 0;
  int64_t inflight_ = 0;
  std::vector<Lane> lanes_;
  std::vector<Timer> timers_;  // min-heap
  std::optional<int64_t> rto_deadline_;
  std::optional<int64_t> pto_deadline_;  // tail-loss probe timer
  std::optional<Tlp> tlp_;
  std::optional<TlpDue> tlp_due_;
  bool after_rto_ = false;  // an RTO came and nothing new was acknowledged since
  int64_t next_release_ = 0;  // pacing
  // NDP's pulls (cc.pulls; dlcp_emu/transport/pulls.py's PullCredit): packets it may send, the
  // latest pull number seen, and the window a flow starts with.
  int64_t credit_ = 0, first_window_ = 0;
  uint16_t max_pull_ = 0;
  bool take_pull(const Header& h, const InPayload& p);  // whether it was a PULL alone
  std::vector<OutRef> probe_queue_;
  std::vector<SendResult> completed_;
  std::shared_ptr<SenderWatch> watch_;  // its stack's, if a stack polls it
  uint32_t watch_index_ = 0;
  void touched() {
    if (watch_) watch_->touch(watch_index_);
  }
  double reo_mult_ = 1;
  int64_t reo_decay_ = 16;
};

// Every byte delivered: every lost chunk is retransmitted.
class ReliableSender : public Sender {
 public:
  ReliableSender(int64_t src_rank, int64_t dst_rank, int64_t job, int64_t mtu, CongestionControl cc,
                 RttEstimator rtt, double reorder_fraction = 0.25)
      : Sender(false, src_rank, dst_rank, job, mtu, cc, rtt, reorder_fraction) {}
};

// Bounded loss: droppable chunks may be lost within the bound; PROBE + BITMAP drive selective
// retransmission of the rest.
class DlcpSender : public Sender {
 public:
  DlcpSender(int64_t src_rank, int64_t dst_rank, int64_t job, int64_t mtu, CongestionControl cc, RttEstimator rtt,
             double reorder_fraction = 0.25)
      : Sender(true, src_rank, dst_rank, job, mtu, cc, rtt, reorder_fraction) {}
};

}  // namespace dlcp::transport
