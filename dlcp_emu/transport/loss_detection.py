"""RACK-like loss detection (RFC 8985) with its tail-loss probe (TLP), and the retransmission
timeout (RFC 6298) of a sender.

Evidence is taken only within a lane (layer priority, magnitude class): switches queue lanes
separately, so a delivered packet proves nothing about an earlier one in another lane. A
lane's packets sent before its latest delivered one are lost once a reordering window is
overdue; the window widens with each spurious retransmission.

A lost tail has no later packet to evidence it: two SRTTs (plus the RTT estimator's margin,
40 frame times of a slow link) after the latest send or progress (the probe timeout, PTO),
the latest-sent packet still in flight is sent again, outside the
window. Its ACK either repairs the tail itself (then it counts as a loss: the window halves,
as RFC 8985 7.4 and Linux reduce when a probe's ACK carries no DSACK) or lets RACK find the
losses sent before it in its lane. One probe is outstanding at a time; the RTO (after a
probe, or when the RTO comes before the PTO) stays the last resort. A sender paced by NDP's
pulls (`pulls.py`) neither runs RACK nor probes: only the RTO is left it. `Sender` mixes this in:
it keeps the lanes, timers and counters these methods work on.
"""
from __future__ import annotations

import heapq
from collections import deque

from dlcp_emu.transport.outbound import IN_FLIGHT, LOST


class _Lane:
    __slots__ = ("idx", "q", "rack_ts", "rack_seq", "rack_rtt", "deadline")

    def __init__(self, idx: int):
        self.idx = idx        # priority << 3 | magnitude class
        self.q = deque()      # (seq, xmit_ts, msg, chunk) in send order; stale entries skipped
        self.rack_ts = -1     # send time of the latest-sent delivered packet
        self.rack_seq = -1
        self.rack_rtt = 0
        self.deadline = None  # pending reordering timer


class LossDetection:
    def _reorder_window(self) -> int:
        srtt = self.rtt.srtt_ns
        return int(srtt * min(self.reorder_fraction * self._reo_mult, 1.0)) if srtt else 0

    def _spurious(self) -> None:
        """RACK's adaptation (RFC 8985 6.2): each spurious retransmission widens the window by
        one more reorder_fraction of the SRTT, up to one SRTT; it decays back after 16
        losses without one."""
        self.spurious += 1
        self._reo_mult = min(self._reo_mult + 1, 1 / self.reorder_fraction if self.reorder_fraction else 1)
        self._reo_decay = 16

    def _detect(self, lane: _Lane, now: int) -> None:
        """Declare lost the packets of this lane sent before its latest delivered one, once
        they are a reordering window overdue; arm the lane's timer for the next one."""
        q = lane.q
        reo = self._reorder_window()
        while q:
            seq, ts, m, c = q[0]
            if m.done or m.tx_seq[c] != seq or m.state[c] != IN_FLIGHT:
                q.popleft()
            elif seq < lane.rack_seq or ts < lane.rack_ts:
                deadline = ts + lane.rack_rtt + reo
                if now < deadline:
                    if lane.deadline != deadline:
                        lane.deadline = deadline
                        heapq.heappush(self._timers, (deadline, lane.idx))
                    return
                q.popleft()
                self._lost(m, c, seq)
            else:
                break
        lane.deadline = None

    def _forget(self, m) -> None:
        """A finished message's lanes let go of the stale entries at their heads (those of
        finished messages, or superseded by a retransmission). `_detect` would skip them
        too, but it runs only on a lane's ACKs: a lane whose packets only ever completed
        their message (a one-chunk message is answered by the completion alone) kept every
        entry, and every message behind it, for the whole run (4 hosts' senders held every
        message they had sent, 1.4-3 MB a minute in the soak). A stale entry decides
        nothing, so dropping it changes no decision."""
        for mag in set(m.mag):
            q = self._lanes[m.lane_base | mag].q
            while q:
                seq, _, o, c = q[0]
                if o.done or o.tx_seq[c] != seq or o.state[c] != IN_FLIGHT:
                    q.popleft()
                else:
                    break

    def _run_timers(self, now: int) -> None:
        timers, lanes = self._timers, self._lanes
        while timers and timers[0][0] <= now:
            deadline, i = heapq.heappop(timers)
            if lanes[i].deadline == deadline:
                lanes[i].deadline = None
                self._detect(lanes[i], now)
        if self._pto_deadline is not None and now >= self._pto_deadline:
            self._on_pto()
        if self._rto_deadline is not None and now >= self._rto_deadline:
            self._on_rto(now)

    def _arm_pto(self, now: int) -> None:
        """(Re)arm the probe timeout (RFC 8985 7.2) at 2 SRTT (+ the estimator's margin: a slow
        link's ACKs may queue behind frames of data) from now, once the outstanding
        probe is settled (answered, declared lost or its message done), while packets are in
        flight, the RTO would not come first, and no RTO came since the last progress (as
        Linux probes only in its Open and CWR states, not in Loss)."""
        t = self._tlp
        if t is not None and (t[0].done or t[0].tx_seq[t[1]] != t[2] or t[0].state[t[1]] != IN_FLIGHT):
            self._tlp = t = None
        srtt = self.rtt.srtt_ns
        deadline = None
        if t is None and self._inflight and srtt and not self._after_rto and not self._pulls:
            deadline = now + int(2 * srtt) + self.rtt.pto_margin_ns
            if self._rto_deadline is not None and deadline >= self._rto_deadline:
                deadline = None
        self._pto_deadline = deadline

    def _on_pto(self) -> None:
        """Choose the probe: the latest-sent packet still in flight, over every lane."""
        self._pto_deadline = None
        best = None
        for lane in self._lanes:
            for seq, _, m, c in reversed(lane.q):
                if not m.done and m.tx_seq[c] == seq and m.state[c] == IN_FLIGHT:
                    if best is None or seq > best[0]:
                        best = (seq, m, c)
                    break
        self._tlp_due = best

    def _send_tlp(self, now: int, out: list) -> None:
        """Send the chosen probe (RFC 8985 7.3), whatever the window: it stands for the packet
        it repeats, which leaves the flight."""
        seq, m, c = self._tlp_due
        self._tlp_due = None
        if m.done or m.tx_seq[c] != seq or m.state[c] != IN_FLIGHT:
            return
        m.inflight -= 1
        self._inflight -= 1
        self._tlp = (m, c, self.cc.next_seq, seq)
        self.tail_probes += 1
        out.append(self._emit(m, c, True, now))

    def _on_rto(self, now: int) -> None:
        self.timeouts += 1
        self._tlp = self._tlp_due = self._pto_deadline = None
        self._after_rto = True
        self.rtt.backoff()
        if self._inflight:
            self.cc.on_timeout()
            for lane in self._lanes:
                for seq, _, m, c in lane.q:
                    if not m.done and m.tx_seq[c] == seq and m.state[c] == IN_FLIGHT:
                        self._lost(m, c, seq)
                        if self._pulls and m.state[c] == LOST:
                            self._credit += 1   # NDP: an RTO's resends go out unasked
                lane.q.clear()
                lane.deadline = None
        if self._pulls and self._credit < 1:
            self._credit = 1   # a packet to restart the pulls: the last PULL may have been lost
        if self.bounded_loss:
            for m in self._msgs.values():
                if m.next_new >= m.count and m.probe_rounds:
                    self._queue_probe(m)
        self._rto_deadline = now + self.rtt.rto_ns if self._msgs else None
