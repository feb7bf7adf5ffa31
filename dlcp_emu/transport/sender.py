"""The sending endpoint, sans-I/O: `send(message, now)` queues a tensor, `poll(now)` answers
what to put on the wire, `receive(header, payload, now)` takes ACKs and BITMAPs,
`next_timeout()` says when to call `poll` again without input, `take_completed()` lists
finished tensors. One sender serves one (job, src_rank, dst_rank) pair and shares one
congestion window among its tensors; the tensor with the highest layer priority (lowest
number, then the oldest) sends first, its retransmissions before its new chunks.

Loss detection is RACK-like, per lane (`loss_detection.py`); trimmed packets are NACKed at
once; a retransmission timeout catches the rest. Under NDP's pulls (`cc.pulls`, `pulls.py`)
the receiver paces the sender instead of its window, and only NACKs and the RTO find losses.

`ReliableSender` retransmits every lost chunk. `DlcpSender` retransmits lost non-droppable
chunks, gives up droppable ones while their bytes fit in the loss bound, sends a PROBE after
the last chunk and again on each timeout, and finishes when the receiver reports completion.
"""

from __future__ import annotations

import heapq
from collections import deque

import numpy as np

from dlcp_emu.wire import DlcpHeader, Flags, PacketType
from dlcp_emu.transport import feedback as fb
from dlcp_emu.transport.congestion import CongestionControl, RttEstimator
from dlcp_emu.transport.loss_detection import LossDetection, _Lane
from dlcp_emu.transport.outbound import (
    ABANDONED, ACKED, IN_FLIGHT, LOST, UNSENT, SendResult, _Outbound, prepare,
)
from dlcp_emu.transport.message import DEFAULT_MTU, MagnitudePolicy, Message, transport_payload_size
from dlcp_emu.transport.pulls import PullCredit

DATA, PROBE, ACK, BITMAP = PacketType.DATA, PacketType.PROBE, PacketType.ACK, PacketType.BITMAP
_FLAGS = [Flags(i) for i in range(16)]  # Flags(i) is slow; the data path indexes this
DROPPABLE, RETX, LAST = int(Flags.DROPPABLE), int(Flags.RETRANSMISSION), int(Flags.LAST_CHUNK)
HAS_TRIMMED = frozenset(f for f in range(256) if f & Flags.TRIMMED)  # cheaper than `flags & X`


class Sender(LossDetection, PullCredit):
    """Base sender; use ReliableSender or DlcpSender."""

    bounded_loss = False

    def __init__(self, src_rank: int, dst_rank: int, *, job: int = 0, mtu: int = DEFAULT_MTU,
                 cc: CongestionControl | None = None, rtt: RttEstimator | None = None,
                 policy: MagnitudePolicy | None = None, reorder_fraction: float = 0.25):
        self.src_rank, self.dst_rank, self.job = src_rank, dst_rank, job
        self.payload_size = transport_payload_size(mtu)
        self.cc = cc or CongestionControl()
        self.rtt = rtt or RttEstimator()
        self.policy = policy or MagnitudePolicy()
        self.reorder_fraction = reorder_fraction
        self._msgs: dict[tuple[int, int], _Outbound] = {}
        self._ready: list = []           # heap of (priority, order, msg) with work to send
        self._order = 0
        self._inflight = 0
        self._lanes = [_Lane(i) for i in range(64)]
        self._timers: list = []          # heap of (deadline, lane index)
        self._rto_deadline: int | None = None
        self._next_release = 0           # pacing
        self._probe_queue: list[_Outbound] = []
        self._completed: list[SendResult] = []
        self._reo_mult = 1
        self._reo_decay = 16
        self._pto_deadline: int | None = None   # tail-loss probe timer (loss_detection.py)
        self._tlp = None       # the outstanding probe: (msg, chunk, its seq, the probed seq)
        self._tlp_due = None   # (seq, msg, chunk) the probe timer chose, sent by this poll
        self._after_rto = False   # an RTO came and nothing new was acknowledged since
        self.timeouts = self.losses = self.malformed = self.spurious = self.tail_probes = 0
        self._pulls = self.cc.pulls                     # NDP: paced by the receiver's pulls
        self._credit = self._first_window = max(1, int(self.cc.cwnd))
        self._max_pull = 0

    # ---- sans-I/O interface -----------------------------------------------------------
    def send(self, msg: Message, now: int) -> None:
        if msg.data is None:
            raise ValueError("this sender sends values: a payload-free message (data None) is for "
                             "the native senders (dlcp_emu.transport.native)")
        p = prepare(msg, job=self.job, src_rank=self.src_rank, dst_rank=self.dst_rank,
                    payload_size=self.payload_size, policy=self.policy,
                    bounded_loss=self.bounded_loss, busy=self._msgs)
        raw = p.data.tobytes()  # own copy: caller may reuse
        total, cs, count, mag, drop = p.total, self.payload_size, p.count, p.mag, p.drop
        flags = bytearray(count)
        if self.bounded_loss:
            flags[:] = drop
        flags[-1] |= LAST

        m = _Outbound()
        m.key, m.iteration, m.tensor_id, m.priority = msg.key, msg.iteration, msg.tensor_id, msg.priority
        m.tclass = msg.tclass
        m.count, m.cs, m.total, m.view = count, cs, total, memoryview(raw)
        m.mag, m.flags = mag, flags
        m.state = bytearray(count)
        m.xmit_ts = [0] * count
        m.tx_seq = [-1] * count
        m.next_new = m.cum = m.acked = m.inflight = m.abandoned = 0
        m.retx = deque()
        m.bound = p.bound
        m.probes = (fb.encode_probes(total, cs, m.bound, bytes(drop), mag, self.payload_size)
                    if self.bounded_loss else [])
        m.probe_rounds = 0
        m.probe_ts = -1
        m.probe_due = m.done = m.in_ready = False
        m.order = self._order
        self._order += 1
        m.start_ns = now
        m.packets = m.retransmits = 0
        m.lane_base = msg.priority << 3
        self._start_window()
        self._msgs[m.key] = m
        self._make_ready(m)

    def poll(self, now: int) -> list:
        self._run_timers(now)
        out = []
        if self._tlp_due is not None:
            self._send_tlp(now, out)
        for m in self._probe_queue:
            if not m.done:
                m.probe_due = False
                out.extend(self._probe_packets(m, now))
        self._probe_queue.clear()
        cwnd = max(1, int(self.cc.cwnd))
        gap = self.cc.pacing_gap_ns(self.rtt.srtt_ns)
        ready, pulls = self._ready, self._pulls
        while ready and (self._credit > 0 if pulls else self._inflight < cwnd):
            if gap and now < self._next_release:
                break
            m = ready[0][2]
            c, retx = self._next_chunk(m) if not m.done else (-1, False)
            if c >= 0:
                out.append(self._emit(m, c, retx, now))
                if pulls:
                    self._credit -= 1
                if gap:
                    self._next_release = max(self._next_release, now) + int(gap + 0.5)
            if self.bounded_loss and m.next_new >= m.count and not m.probe_rounds and not m.done:
                out.extend(self._probe_packets(m, now))  # right behind the last new chunk
            if c < 0:
                heapq.heappop(ready)
                m.in_ready = False
        return out

    def receive(self, h: DlcpHeader, payload, now: int, ce: bool = False) -> None:
        if h.job != self.job or h.src_rank != self.dst_rank or h.dst_rank != self.src_rank:
            self.malformed += 1
            return
        if self._pulls and h.flags not in HAS_TRIMMED and self._take_pull(payload):
            return  # a PULL: nothing else to read
        m = self._msgs.get((h.iteration, h.tensor_id))
        if m is None:
            return  # finished already: a late or duplicate answer
        if h.type == ACK:
            self._on_ack(m, h, payload, now)
        elif h.type == BITMAP:
            self._on_bitmap(m, h, payload, now)

    def next_timeout(self) -> int | None:
        t = self._rto_deadline
        timers, lanes = self._timers, self._lanes
        while timers and lanes[timers[0][1]].deadline != timers[0][0]:
            heapq.heappop(timers)
        if timers and (t is None or timers[0][0] < t):
            t = timers[0][0]
        if self._pto_deadline is not None and (t is None or self._pto_deadline < t):
            t = self._pto_deadline
        may_send = self._credit > 0 if self._pulls else self._inflight < max(1, int(self.cc.cwnd))
        if (self.cc.pacing and self._ready and may_send
                and (t is None or self._next_release < t)):
            t = self._next_release
        return t

    def take_completed(self) -> list[SendResult]:
        out, self._completed = self._completed, []
        return out

    @property
    def pending(self) -> int:
        """Tensors not yet known to be complete."""
        return len(self._msgs)

    @property
    def inflight(self) -> int:
        return self._inflight

    # ---- sending ----------------------------------------------------------------------
    def _make_ready(self, m: _Outbound) -> None:
        if not m.in_ready and not m.done:
            m.in_ready = True
            heapq.heappush(self._ready, (m.priority, m.order, m))

    def _next_chunk(self, m: _Outbound) -> tuple[int, bool]:
        retx, state = m.retx, m.state
        while retx:
            c = retx.popleft()
            if state[c] == LOST:
                return c, True
        c = m.next_new
        while c < m.count and state[c] != UNSENT:  # acknowledged before sent: a stale duplicate
            c += 1
        if c < m.count:
            m.next_new = c + 1
            return c, False
        m.next_new = c
        return -1, False

    def _emit(self, m: _Outbound, c: int, retx: bool, now: int):
        seq = self.cc.on_send()
        m.state[c] = IN_FLIGHT
        m.inflight += 1
        self._inflight += 1
        m.xmit_ts[c] = now
        m.tx_seq[c] = seq
        mag = m.mag[c]
        self._lanes[m.lane_base | mag].q.append((seq, now, m, c))
        if self._rto_deadline is None:
            self._rto_deadline = now + self.rtt.rto_ns
        self._arm_pto(now)
        off = c * m.cs
        payload = m.view[off:off + m.cs]
        fl = m.flags[c]
        m.packets += 1
        if retx:
            fl |= RETX
            m.retransmits += 1
        return (DlcpHeader(DATA, _FLAGS[fl], m.priority, mag, self.job, self.src_rank,
                           self.dst_rank, len(payload), m.iteration, m.tensor_id, c, m.count,
                           off, now, m.tclass), payload)

    def _probe_packets(self, m: _Outbound, now: int) -> list:
        # The probe trails the tensor's data: its priority, the lowest magnitude class, so a
        # priority switch serves it after the chunks sent before it.
        fl = _FLAGS[RETX if m.probe_rounds else 0]
        m.probe_rounds += 1
        m.probe_ts = now
        return [(DlcpHeader(PROBE, fl, m.priority, 0, self.job, self.src_rank, self.dst_rank,
                            len(p), m.iteration, m.tensor_id, seg, m.count, 0, now, m.tclass), p)
                for seg, p in enumerate(m.probes)]

    def _queue_probe(self, m: _Outbound) -> None:
        if not m.probe_due:
            m.probe_due = True
            self._probe_queue.append(m)

    # ---- feedback ---------------------------------------------------------------------
    def _on_ack(self, m: _Outbound, h: DlcpHeader, payload, now: int) -> None:
        c = h.chunk_index
        if c >= m.count:
            self.malformed += 1
            return
        if h.flags in HAS_TRIMMED or len(payload) < fb.FEEDBACK.size:
            newly = self._deliver(m, c)  # a trimmed ACK still names the chunk that arrived
            self._progress(m, newly, -1, False, now)
            return
        echo, cum, fl, extra = fb.decode_ack(payload)
        if echo <= now:
            self.rtt.sample(now - echo)
        tlp = self._tlp
        probed = tlp is not None and tlp[0] is m and tlp[1] == c
        if probed and m.tx_seq[c] == tlp[2] and echo == m.xmit_ts[c] and m.state[c] == IN_FLIGHT:
            # The tail-loss probe arrived and the packet it repeated had not: that was a loss.
            self.losses += 1
            self.cc.on_loss(tlp[3])
        if fl & fb.FB_COMPLETE:
            self._finish(m, now)
            return
        if m.xmit_ts[c] == echo:
            seq = m.tx_seq[c]
        else:
            seq = -1
            if echo < m.xmit_ts[c] and m.state[c] != ACKED and not probed:
                self._spurious()  # an earlier copy arrived after all: widen the reordering window
        newly = self._deliver(m, c)
        count = m.count
        for e in extra:
            if e < count:
                newly += self._deliver(m, e)
        if cum > m.cum:
            newly += self._advance_cum(m, min(cum, count))
        lane = self._lanes[m.lane_base | m.mag[c]]
        if echo > lane.rack_ts or seq > lane.rack_seq:
            lane.rack_ts = max(lane.rack_ts, echo)
            lane.rack_seq = max(lane.rack_seq, seq)
            lane.rack_rtt = now - echo
        self._progress(m, newly, seq, bool(fl & fb.FB_CE), now)
        if not self._pulls:  # NDP reads nothing from reordering
            self._detect(lane, now)

    def _on_bitmap(self, m: _Outbound, h: DlcpHeader, payload, now: int) -> None:
        if h.flags in HAS_TRIMMED or len(payload) < fb.BITMAP_HEAD.size:
            return
        echo, cum, fl, base, bits = fb.decode_bitmap(payload)
        if echo <= now:
            self.rtt.sample(now - echo)
        if fl & fb.FB_COMPLETE:
            self._finish(m, now)
            return
        count, state = m.count, m.state
        newly = self._advance_cum(m, min(cum, count)) if cum > m.cum else 0
        if fl & fb.FB_NACK:
            # The transmission sent at echo was trimmed: lost for certain, no need to wait.
            if base < count and state[base] == IN_FLIGHT and m.xmit_ts[base] == echo:
                self._lost(m, base, m.tx_seq[base])
        else:
            for c in (np.flatnonzero(bits) + base).tolist():
                if c < count:
                    newly += self._deliver(m, c)
            # Missing at the probe's arrival although sent a reordering window before it.
            latest = echo - self._reorder_window()
            xmit_ts = m.xmit_ts
            for c in (np.flatnonzero(bits == 0) + base).tolist():
                if c < count and state[c] == IN_FLIGHT and xmit_ts[c] <= latest:
                    self._lost(m, c, m.tx_seq[c])
        if fl & fb.FB_NEED_PROBE and echo == m.probe_ts:
            self._queue_probe(m)  # once per probe round, not once per packet of its answer
        self._progress(m, newly, -1, False, now)

    def _progress(self, m: _Outbound, newly: int, seq: int, ce: bool, now: int) -> None:
        self.cc.on_ack(seq, ce, newly)
        if m.acked == m.count:
            self._finish(m, now)
        elif newly:
            self._rto_deadline = now + self.rtt.rto_ns
            self._after_rto = False
            self._arm_pto(now)

    def _advance_cum(self, m: _Outbound, cum: int) -> int:
        newly = 0
        for c in range(m.cum, cum):
            newly += self._deliver(m, c)
        m.cum = cum
        return newly

    def _deliver(self, m: _Outbound, c: int) -> int:
        s = m.state[c]
        if s == ACKED:
            return 0
        if s == IN_FLIGHT:
            m.inflight -= 1
            self._inflight -= 1
        elif s == ABANDONED:
            m.abandoned -= self._size(m, c)
        m.state[c] = ACKED
        m.acked += 1
        return 1

    @staticmethod
    def _size(m: _Outbound, c: int) -> int:
        return m.cs if c < m.count - 1 else m.total - c * m.cs

    def _lost(self, m: _Outbound, c: int, seq: int) -> None:
        m.inflight -= 1
        self._inflight -= 1
        self.losses += 1
        if self._reo_mult > 1:
            self._reo_decay -= 1
            if not self._reo_decay:
                self._reo_mult, self._reo_decay = 1, 16
        self.cc.on_loss(seq)
        if m.flags[c] & DROPPABLE:
            size = self._size(m, c)
            if m.abandoned + size <= m.bound:  # within the loss bound: let it go
                m.state[c] = ABANDONED
                m.abandoned += size
                return
        m.state[c] = LOST
        m.retx.append(c)
        self._make_ready(m)

    def _finish(self, m: _Outbound, now: int) -> None:
        m.done = True
        self._inflight -= m.inflight
        m.inflight = 0
        del self._msgs[m.key]
        self._forget(m)
        self._completed.append(SendResult(m.iteration, m.tensor_id, m.total, m.count, m.start_ns,
                                          now, m.packets, m.retransmits, m.probe_rounds))
        self._rto_deadline = now + self.rtt.rto_ns if self._msgs else None
        self._after_rto = False   # a completion is progress
        self._arm_pto(now)


class ReliableSender(Sender):
    """Every byte delivered: every lost chunk is retransmitted."""

    bounded_loss = False


class DlcpSender(Sender):
    """Bounded loss: droppable chunks (the policy's smallest gradients) may be lost within
    the bound; PROBE + BITMAP drive selective retransmission of the rest."""

    bounded_loss = True
