// What a sender puts on the wire (dlcp_emu/transport/sender.py `_make_ready`, `_next_chunk`,
// `_emit`, `_probe_packets`): which chunk of a message goes next, the DATA packet that carries
// it, and the PROBE round that trails a bounded-loss message's data.
#include <algorithm>
#include <utility>

#include "transport/transport_sender.hpp"

namespace dlcp::transport {

void Sender::make_ready(Outbound& m) {
  if (!m.in_ready) {  // (a finished message is never made ready again: its slot is free)
    m.in_ready = true;
    ready_.push_back({m.priority, m.order, m.ref()});
    std::push_heap(ready_.begin(), ready_.end(), ReadyAfter{});
  }
}

std::pair<int64_t, bool> Sender::next_chunk(Outbound& m) {
  while (!m.retx.empty()) {
    const uint32_t c = m.retx.front();
    m.retx.pop_front();
    if (m.ch[c].state == LOST) return {c, true};
  }
  uint32_t c = m.next_new;
  while (c < m.count && m.ch[c].state != UNSENT) ++c;  // acknowledged before sent: a stale duplicate
  if (c < m.count) {
    m.next_new = c + 1;
    return {c, false};
  }
  m.next_new = c;
  return {-1, false};
}

void Sender::emit(Outbound& m, uint32_t c, bool retx, int64_t now, std::vector<OutPacket>& out) {
  const int64_t seq = cc.on_send();
  m.ch[c].state = IN_FLIGHT;
  m.inflight += 1;
  inflight_ += 1;
  m.ch[c].xmit_ts = now;
  m.ch[c].tx_seq = seq;
  const uint8_t mag = m.ch[c].mag;
  lanes_[size_t(m.lane_base | mag)].q.push_back({seq, now, m.ref(), c});
  if (!rto_deadline_) rto_deadline_ = now + rtt.rto_ns;
  arm_pto(now);
  const int64_t off = int64_t(c) * m.cs;
  uint8_t fl = m.ch[c].flags;
  m.packets += 1;
  if (retx) {
    fl |= FLAG_RETRANSMISSION;
    m.retransmits += 1;
  }
  OutPacket& p = out.emplace_back();
  p.h = {DATA, fl, m.priority, mag, job, src_rank, dst_rank, uint16_t(m.size(c)), m.iteration, m.tensor_id,
         c, m.count, uint32_t(off), now, m.tclass};
  if (m.buf->data) p.buf = m.buf;  // payload-free: no bytes to hold, no count to keep per packet
  p.off = uint32_t(off);
}

void Sender::probe_packets(Outbound& m, int64_t now, std::vector<OutPacket>& out) {
  // The probe trails the tensor's data: its priority, the lowest magnitude class, so a
  // priority switch serves it after the chunks sent before it.
  const uint8_t fl = m.probe_rounds ? FLAG_RETRANSMISSION : 0;
  m.probe_rounds += 1;
  m.probe_ts = now;
  for (size_t seg = 0; seg < m.probes.size(); ++seg) {
    OutPacket& p = out.emplace_back();
    p.h = {PROBE, fl, m.priority, 0, job, src_rank, dst_rank, uint16_t(m.probes[seg].size()), m.iteration,
           m.tensor_id, uint32_t(seg), m.count, 0, now, m.tclass};
    p.control = m.probes[seg];
  }
}

void Sender::queue_probe(Outbound& m) {
  if (!m.probe_due) {
    m.probe_due = true;
    probe_queue_.push_back(m.ref());
  }
}

}  // namespace dlcp::transport
