"""The transport endpoints compiled (`dlcp_native`'s core), behind the Python endpoints'
surface: `ReliableSender`, `DlcpSender`, `ReliableReceiver`, `DlcpReceiver` here take and
give what those of `sender.py` and `receiver.py` do (`DlcpHeader` and payload, `Message`,
`SendResult`, `Delivery`), and send the same packets at the same times
(`tests/test_native_transport.py` holds them to it, field by field, timer by timer).

What stays Python, per message: checking a message and planning its chunks (`prepare`:
magnitude classes from numpy quantiles, droppable chunks from a stable argsort, and numpy's
generator for `drop_order="random"`); the core takes the plan as bytes. Everything per
packet (segmentation, congestion control, loss detection, probes and bitmaps, reassembly,
zero-fill) is the core's.

Differences, on purpose:
- A sender keeps the caller's array, not a copy (zero-copy): do not change it until the
  tensor is complete. DATA payloads are memoryviews of it.
- A Delivery's `data` is the receiver's own buffer handed over (no copy).
- Payload-free: `send(Message(None, ...), now, nbytes=n)` sends sizes only (the message then
  needs `chunk_magnitudes`, or `mag_class` and, for dlcp, `droppable`); a receiver made with
  `store=False` keeps no bytes and delivers `data=None`, with losses accounted as usual.
- Header fields must fit the wire (ranks and job 16 bits, iteration and tensor 32 bits):
  the core refuses others where the Python endpoints would fail only when packing.
- `cc` and `rtt` (Python's or the core's `CongestionControl` / `RttEstimator`, below) are
  read for their settings and must be fresh (no sample, nothing sent); `sender.cc` and
  `sender.rtt` are then views of the core's.
"""
from __future__ import annotations

import dlcp_native.transport as compiled

from dlcp_emu.transport.message import (
    DEFAULT_MTU,
    ChunkPlan,
    MagnitudePolicy,
    Message,
    transport_payload_size,
)
from dlcp_emu.transport.outbound import SendResult, prepare
from dlcp_emu.transport.receiver import Delivery
from dlcp_emu.wire import DlcpHeader, Flags, PacketType

# The core's congestion control and RTT estimator, with the Python ones' constructor
# arguments (what a sender's `cc` and `rtt` are; senders here take either kind as settings).
CongestionControl = compiled.TransportCongestion
RttEstimator = compiled.TransportRtt

_TYPES = tuple(PacketType(i) for i in range(4))
_FLAGS = tuple(Flags(i) for i in range(16))
_U32 = 0xFFFFFFFF


def packets(raw) -> list:
    """The core's packet tuples as (DlcpHeader, payload)."""
    return [(DlcpHeader(_TYPES[t[0]], _FLAGS[t[1]], *t[2:15]), t[15]) for t in raw]


def fields(h: DlcpHeader) -> tuple:
    return (h.type, h.flags, h.priority, h.mag_class, h.job, h.src_rank, h.dst_rank, h.payload_len,
            h.iteration, h.tensor_id, h.chunk_index, h.chunk_count, h.offset, h.send_ts_ns, h.tclass)


def cc_settings(cc) -> dict:
    if cc.next_seq or cc.reductions or cc.timeouts:
        raise ValueError("the native sender takes a fresh CongestionControl (nothing sent yet)")
    return {"cwnd": cc.cwnd, "min_window": cc.min_window, "max_window": cc.max_window, "ecn": cc.ecn,
            "g": cc.g, "pacing": cc.pacing, "pacing_gain": cc.pacing_gain, "ssthresh": cc.ssthresh,
            "alpha": cc.alpha, "pulls": cc.pulls}


def rtt_settings(rtt) -> dict:
    if rtt.srtt_ns is not None:
        raise ValueError("the native sender takes a fresh RttEstimator (no sample yet)")
    return {"rto_ns": rtt.rto_ns, "min_rto_ns": rtt.min_rto_ns, "max_rto_ns": rtt.max_rto_ns,
            "granularity_ns": rtt.granularity_ns, "pto_margin_ns": rtt.pto_margin_ns}


def planner(policy: MagnitudePolicy):
    """`policy.plan` in the core (`compiled.plan_chunks`, identical: tests/test_native_plan.py),
    or the policy's own for drop_order "random" (numpy's generator shuffles)."""
    if policy.drop_order != "magnitude":
        return policy.plan
    fraction, bound, edges = policy.droppable_fraction, policy.loss_bound, policy.class_edges

    def plan(magnitudes, total_bytes, chunk_size, droppable_allowed=True, salt=()):
        return ChunkPlan(*compiled.plan_chunks(magnitudes, total_bytes, chunk_size, fraction, bound,
                                            droppable_allowed, edges))
    return plan


class _Busy:
    """`key in busy`: whether the core is sending that (iteration, tensor_id)."""

    def __init__(self, core):
        self.core = core

    def __contains__(self, key):
        return self.core.sending(*key)


class Sender:
    """Base of the native senders; use ReliableSender or DlcpSender."""

    bounded_loss = False
    _core_class = None

    def __init__(self, src_rank: int, dst_rank: int, *, job: int = 0, mtu: int = DEFAULT_MTU,
                 cc=None, rtt=None,
                 policy: MagnitudePolicy | None = None, reorder_fraction: float = 0.25):
        self.src_rank, self.dst_rank, self.job = src_rank, dst_rank, job
        self.payload_size = transport_payload_size(mtu)
        self.policy = policy or MagnitudePolicy()
        self._plan = planner(self.policy)
        self.reorder_fraction = reorder_fraction
        self._core = self._core_class(src_rank, dst_rank, job, mtu, cc_settings(cc or CongestionControl()),
                                      rtt_settings(rtt or RttEstimator()), reorder_fraction)
        self._busy = _Busy(self._core)

    def send(self, msg: Message, now: int, nbytes: int | None = None) -> None:
        if not (0 <= msg.iteration <= _U32 and 0 <= msg.tensor_id <= _U32):
            name = "iteration" if not 0 <= msg.iteration <= _U32 else "tensor_id"
            raise ValueError(f"{name} must be in 0..{_U32}, got {getattr(msg, name)}")
        p = prepare(msg, job=self.job, src_rank=self.src_rank, dst_rank=self.dst_rank,
                    payload_size=self.payload_size, policy=self.policy,
                    bounded_loss=self.bounded_loss, busy=self._busy, nbytes=nbytes, planner=self._plan,
                    magnitudes=compiled.chunk_magnitudes)
        self._core.send(msg.iteration, msg.tensor_id, msg.priority, p.data, p.total, p.mag, p.drop,
                        p.bound, now, msg.tclass)

    def poll(self, now: int) -> list:
        return packets(self._core.poll(now))

    def receive(self, h: DlcpHeader, payload, now: int, ce: bool = False) -> None:
        self._core.receive(fields(h), payload, now, ce)

    def next_timeout(self) -> int | None:
        return self._core.next_timeout()

    def take_completed(self) -> list[SendResult]:
        return [SendResult(*r) for r in self._core.take_completed()]

    pending = property(lambda self: self._core.pending, doc="tensors not yet known to be complete")
    inflight = property(lambda self: self._core.inflight)
    timeouts = property(lambda self: self._core.timeouts)
    losses = property(lambda self: self._core.losses)
    malformed = property(lambda self: self._core.malformed)
    spurious = property(lambda self: self._core.spurious)
    tail_probes = property(lambda self: self._core.tail_probes)
    cc = property(lambda self: self._core.cc, doc="the core's congestion control, read-only")
    rtt = property(lambda self: self._core.rtt, doc="the core's RTT estimator, read-only")


class ReliableSender(Sender):
    """Every byte delivered: every lost chunk is retransmitted."""

    bounded_loss = False
    _core_class = compiled.ReliableSender


class DlcpSender(Sender):
    """Bounded loss: droppable chunks may be lost within the bound; PROBE + BITMAP drive
    selective retransmission of the rest."""

    bounded_loss = True
    _core_class = compiled.DlcpSender


class Receiver:
    """Base of the native receivers; use ReliableReceiver or DlcpReceiver. `store=False`:
    payload-free (no bytes kept, `Delivery.data` None)."""

    bounded_loss = False
    _core_class = None

    def __init__(self, rank: int, *, mtu: int = DEFAULT_MTU, remember: int = 4096, store: bool = True,
                 pull_gap_ns: int | None = None):
        self.rank = rank
        self.payload_size = transport_payload_size(mtu)
        self.remember = remember
        if pull_gap_ns is not None and not (isinstance(pull_gap_ns, int) and pull_gap_ns > 0):
            raise ValueError(f"pull_gap_ns must be a positive integer of ns, got {pull_gap_ns!r}")
        self._core = self._core_class(rank, mtu, remember, store, pull_gap_ns or 0)

    def receive(self, h: DlcpHeader, payload, now: int, ce: bool = False) -> None:
        self._core.receive(fields(h), payload, now, ce)

    def poll(self, now: int) -> list:
        return packets(self._core.poll(now))

    def next_timeout(self) -> int | None:
        return self._core.next_timeout()   # the pull pacer's, if it paces pulls

    def take_delivered(self) -> list[Delivery]:
        return [Delivery(*d) for d in self._core.take_delivered()]

    pending = property(lambda self: self._core.pending)
    malformed = property(lambda self: self._core.malformed)


class ReliableReceiver(Receiver):
    """Completes a tensor when every byte has arrived."""

    bounded_loss = False
    _core_class = compiled.ReliableReceiver


class DlcpReceiver(Receiver):
    """Bounded loss: completes when every non-droppable chunk has arrived and the missing
    (droppable) bytes are within the bound the sender's PROBE announced."""

    bounded_loss = True
    _core_class = compiled.DlcpReceiver
