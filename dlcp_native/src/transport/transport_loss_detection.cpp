// RACK-like loss detection (RFC 8985) with its tail-loss probe, and the retransmission timeout
// (RFC 6298) of a sender (dlcp_emu/transport/loss_detection.py, which says why).
//
// Evidence is taken only within a lane (layer priority, magnitude class): switches queue lanes
// separately, so a delivered packet proves nothing about an earlier one in another lane. A
// lane's packets sent before its latest delivered one are lost once a reordering window is
// overdue; the window widens with each spurious retransmission.
#include <algorithm>
#include <functional>

#include "transport/transport_sender.hpp"

namespace dlcp::transport {

int64_t Sender::reorder_window() const {
  if (!rtt.has_srtt || rtt.srtt_ns == 0) return 0;
  const double f = reorder_fraction * reo_mult_;
  return int64_t(rtt.srtt_ns * (1.0 < f ? 1.0 : f));  // int(srtt * min(f, 1.0))
}

// RACK's adaptation (RFC 8985 6.2): each spurious retransmission widens the window by one more
// reorder_fraction of the SRTT, up to one SRTT; it decays back after 16 losses without one.
void Sender::on_spurious() {
  spurious += 1;
  const double cap = reorder_fraction != 0 ? 1 / reorder_fraction : 1;
  const double more = reo_mult_ + 1;
  reo_mult_ = cap < more ? cap : more;  // min(reo_mult + 1, cap)
  reo_decay_ = 16;
}

// Declare lost the packets of this lane sent before its latest delivered one, once they are
// a reordering window overdue; arm the lane's timer for the next one.
void Sender::detect(Lane& lane, int64_t now) {
  auto& q = lane.q;
  const int64_t reo = reorder_window();
  while (!q.empty()) {
    const LaneEntry& e = q.front();
    Outbound* m = in_flight(e.m, e.c, e.seq);
    if (!m) {
      q.pop_front();
    } else if (e.seq < lane.rack_seq || e.ts < lane.rack_ts) {
      const int64_t deadline = e.ts + lane.rack_rtt + reo;
      if (now < deadline) {
        if (lane.deadline != deadline) {
          lane.deadline = deadline;
          timers_.emplace_back(deadline, lane.idx);
          std::push_heap(timers_.begin(), timers_.end(), std::greater<Timer>{});
        }
        return;
      }
      const LaneEntry gone = e;
      q.pop_front();
      lost(*m, gone.c, gone.seq);
    } else {
      break;
    }
  }
  lane.deadline.reset();
}

void Sender::run_timers(int64_t now) {
  while (!timers_.empty() && timers_.front().first <= now) {
    std::pop_heap(timers_.begin(), timers_.end(), std::greater<Timer>{});
    const auto [deadline, i] = timers_.back();
    timers_.pop_back();
    Lane& lane = lanes_[size_t(i)];
    if (lane.deadline == deadline) {
      lane.deadline.reset();
      detect(lane, now);
    }
  }
  if (pto_deadline_ && now >= *pto_deadline_) on_pto();
  if (rto_deadline_ && now >= *rto_deadline_) on_rto(now);
}

// (Re)arm the probe timeout at 2 SRTT from now, once the outstanding probe is settled, while
// packets are in flight, the RTO would not come first, and no RTO came since the last progress.
void Sender::arm_pto(int64_t now) {
  if (tlp_ && !in_flight(tlp_->m, tlp_->c, tlp_->seq)) tlp_.reset();
  pto_deadline_.reset();
  if (!tlp_ && inflight_ && rtt.has_srtt && rtt.srtt_ns != 0 && !after_rto_ && !cc.pulls) {
    const int64_t deadline = now + int64_t(2 * rtt.srtt_ns) + rtt.pto_margin_ns;
    if (!rto_deadline_ || deadline < *rto_deadline_) pto_deadline_ = deadline;
  }
}

// Choose the probe: the latest-sent packet still in flight, over every lane.
void Sender::on_pto() {
  pto_deadline_.reset();
  tlp_due_.reset();
  for (const Lane& lane : lanes_) {
    for (size_t i = lane.q.size(); i-- > 0;) {
      const LaneEntry& e = lane.q[i];
      if (in_flight(e.m, e.c, e.seq)) {
        if (!tlp_due_ || e.seq > tlp_due_->seq) tlp_due_ = TlpDue{e.seq, e.m, e.c};
        break;
      }
    }
  }
}

// Send the chosen probe, whatever the window: it stands for the packet it repeats, which
// leaves the flight.
void Sender::send_tlp(int64_t now, std::vector<OutPacket>& out) {
  const TlpDue due = *tlp_due_;
  tlp_due_.reset();
  Outbound* m = in_flight(due.m, due.c, due.seq);
  if (!m) return;
  m->inflight -= 1;
  inflight_ -= 1;
  tlp_ = Tlp{due.m, due.c, cc.next_seq, due.seq};
  tail_probes += 1;
  emit(*m, due.c, true, now, out);
}

void Sender::on_rto(int64_t now) {
  timeouts += 1;
  tlp_.reset();
  tlp_due_.reset();
  pto_deadline_.reset();
  after_rto_ = true;
  rtt.backoff();
  if (inflight_) {
    cc.on_timeout();
    for (Lane& lane : lanes_) {
      for (size_t i = 0; i < lane.q.size(); ++i) {
        const LaneEntry& e = lane.q[i];
        if (Outbound* m = in_flight(e.m, e.c, e.seq)) {
          lost(*m, e.c, e.seq);
          if (cc.pulls && m->ch[e.c].state == LOST) credit_ += 1;  // NDP: an RTO's resends go out unasked
        }
      }
      lane.q.clear();
      lane.deadline.reset();
    }
  }
  if (cc.pulls && credit_ < 1) credit_ = 1;  // a packet to restart the pulls: the last PULL may have been lost
  if (bounded_loss)
    msgs_.each([this](Outbound& m) {
      if (m.next_new >= m.count && m.probe_rounds) queue_probe(m);
    });
  rto_deadline_ = msgs_.empty() ? std::nullopt : std::optional<int64_t>(now + rtt.rto_ns);
}

}  // namespace dlcp::transport
