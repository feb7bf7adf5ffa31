// What a sender does with what comes back (dlcp_emu/transport/sender.py `_on_ack`,
// `_on_bitmap` and what they call): ACKs and BITMAPs move a message's chunks on (delivered,
// lost), feed the congestion window and the loss detection's lanes, and finish a message.
#include "transport/transport_sender.hpp"

#include <algorithm>
#include <limits>

#include "transport/transport_feedback.hpp"

namespace dlcp::transport {

namespace fb = feedback;

namespace {

// A u64 echoed time as the int64 clock: our endpoints echo what they sent (never past int64).
int64_t as_time(uint64_t echo) {
  return echo > uint64_t(std::numeric_limits<int64_t>::max()) ? std::numeric_limits<int64_t>::max()
                                                                : int64_t(echo);
}

}  // namespace

// NDP's pulls: the credit a feedback payload's pull number adds (pulls.py's PullCredit).
bool Sender::take_pull(const Header& /*h*/, const InPayload& p) {
  if (p.size < fb::FEEDBACK_SIZE) return false;  // trimmed: its number is lost, the next one covers it
  const uint16_t d = uint16_t(fb::pull_number(p.data) - max_pull_);
  if (0 < d && d <= 0x7FFF) {
    max_pull_ = uint16_t(max_pull_ + d);
    credit_ += d;
  }
  return (p.data[12] & fb::FB_PULL) != 0;
}

// ---- feedback ------------------------------------------------------------------------------
void Sender::on_ack(Outbound& m, const Header& h, const InPayload& p, int64_t now) {
  const uint32_t c = h.chunk_index;
  if (c >= m.count) {
    malformed += 1;
    return;
  }
  if ((h.flags & FLAG_TRIMMED) || p.size < fb::FEEDBACK_SIZE) {
    const int64_t newly = deliver(m, c);  // a trimmed ACK still names the chunk that arrived
    progress(m, newly, -1, false, now);
    return;
  }
  const fb::Ack a = fb::decode_ack(p.data, p.size);
  const int64_t echo = as_time(a.echo);
  if (echo <= now) rtt.sample(now - echo);
  const bool probed = tlp_ && tlp_->m == m.ref() && tlp_->c == c;
  if (probed && m.ch[c].tx_seq == tlp_->seq && echo == m.ch[c].xmit_ts && m.ch[c].state == IN_FLIGHT) {
    // The tail-loss probe arrived and the packet it repeated had not: that was a loss.
    losses += 1;
    cc.on_loss(tlp_->probed_seq);
  }
  if (a.flags & fb::FB_COMPLETE) {
    finish(m, now);
    return;
  }
  int64_t seq;
  if (m.ch[c].xmit_ts == echo) {
    seq = m.ch[c].tx_seq;
  } else {
    seq = -1;
    if (echo < m.ch[c].xmit_ts && m.ch[c].state != ACKED && !probed)
      on_spurious();  // an earlier copy arrived after all: widen the reordering window
  }
  int64_t newly = deliver(m, c);
  for (size_t i = 0; i < a.n_extra; ++i)
    if (a.extra[i] < m.count) newly += deliver(m, a.extra[i]);
  if (a.cum > m.cum) newly += advance_cum(m, std::min(a.cum, m.count));
  Lane& lane = lanes_[size_t(m.lane_base | m.ch[c].mag)];
  if (echo > lane.rack_ts || seq > lane.rack_seq) {
    lane.rack_ts = std::max(lane.rack_ts, echo);
    lane.rack_seq = std::max(lane.rack_seq, seq);
    lane.rack_rtt = now - echo;
  }
  progress(m, newly, seq, a.flags & fb::FB_CE, now);
  if (!cc.pulls) detect(lane, now);  // NDP reads nothing from reordering
}

void Sender::on_bitmap(Outbound& m, const Header& h, const InPayload& p, int64_t now) {
  if ((h.flags & FLAG_TRIMMED) || p.size < fb::BITMAP_HEAD_SIZE) return;
  const fb::Bitmap b = fb::decode_bitmap(p.data, p.size);
  const int64_t echo = as_time(b.echo);
  if (echo <= now) rtt.sample(now - echo);
  if (b.flags & fb::FB_COMPLETE) {
    finish(m, now);
    return;
  }
  const uint64_t count = m.count;
  int64_t newly = b.cum > m.cum ? advance_cum(m, std::min(b.cum, m.count)) : 0;
  if (b.flags & fb::FB_NACK) {
    // The transmission sent at echo was trimmed: lost for certain, no need to wait.
    const uint32_t c = b.base;
    if (c < count && m.ch[c].state == IN_FLIGHT && m.ch[c].xmit_ts == echo) lost(m, c, m.ch[c].tx_seq);
  } else {
    for (uint32_t i = 0; i < b.nbits; ++i) {
      const uint64_t c = uint64_t(b.base) + i;
      if (b.bit(i) && c < count) newly += deliver(m, uint32_t(c));
    }
    // Missing at the probe's arrival although sent a reordering window before it.
    const int64_t latest = echo - reorder_window();
    for (uint32_t i = 0; i < b.nbits; ++i) {
      const uint64_t c = uint64_t(b.base) + i;
      if (!b.bit(i) && c < count && m.ch[c].state == IN_FLIGHT && m.ch[c].xmit_ts <= latest)
        lost(m, uint32_t(c), m.ch[c].tx_seq);
    }
  }
  if ((b.flags & fb::FB_NEED_PROBE) && echo == m.probe_ts)
    queue_probe(m);  // once per probe round, not once per packet of its answer
  progress(m, newly, -1, false, now);
}

void Sender::progress(Outbound& m, int64_t newly, int64_t seq, bool ce, int64_t now) {
  cc.on_ack(seq, ce, newly);
  if (m.acked == m.count)
    finish(m, now);
  else if (newly) {
    rto_deadline_ = now + rtt.rto_ns;
    after_rto_ = false;
    arm_pto(now);
  }
}

int64_t Sender::advance_cum(Outbound& m, uint32_t cum) {
  int64_t newly = 0;
  for (uint32_t c = m.cum; c < cum; ++c) newly += deliver(m, c);
  m.cum = cum;
  return newly;
}

int64_t Sender::deliver(Outbound& m, uint32_t c) {
  const uint8_t s = m.ch[c].state;
  if (s == ACKED) return 0;
  if (s == IN_FLIGHT) {
    m.inflight -= 1;
    inflight_ -= 1;
  } else if (s == ABANDONED) {
    m.abandoned -= m.size(c);
  }
  m.ch[c].state = ACKED;
  m.acked += 1;
  return 1;
}

void Sender::lost(Outbound& m, uint32_t c, int64_t seq) {
  m.inflight -= 1;
  inflight_ -= 1;
  losses += 1;
  if (reo_mult_ > 1) {
    reo_decay_ -= 1;
    if (!reo_decay_) {
      reo_mult_ = 1;
      reo_decay_ = 16;
    }
  }
  cc.on_loss(seq);
  if (m.ch[c].flags & FLAG_DROPPABLE) {
    const int64_t size = m.size(c);
    if (m.abandoned + size <= m.bound) {  // within the loss bound: let it go
      m.ch[c].state = ABANDONED;
      m.abandoned += size;
      return;
    }
  }
  m.ch[c].state = LOST;
  m.retx.push_back(c);
  make_ready(m);
}

void Sender::finish(Outbound& m, int64_t now) {
  inflight_ -= m.inflight;
  m.inflight = 0;
  completed_.push_back({m.iteration, m.tensor_id, m.total, m.count, m.start_ns, now, m.packets, m.retransmits,
                        m.probe_rounds});
  if (last_ == m.slot) last_ = Outbounds::NONE;
  msgs_.remove(m, key(m.iteration, m.tensor_id));  // m.done in Python: every reference to it goes stale
  rto_deadline_ = msgs_.empty() ? std::nullopt : std::optional<int64_t>(now + rtt.rto_ns);
  after_rto_ = false;  // a completion is progress
  arm_pto(now);
}

}  // namespace dlcp::transport
