"""What a sender keeps of each message it sends: the state of every chunk, and what it
reports when the message is complete; and what every sender checks and plans of a message
before it keeps it (`prepare`: the Python endpoints and the native ones share it)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dlcp_emu.transport.message import FLOAT, MAX_CHUNKS, MagnitudePolicy, Message, chunk_magnitudes
from dlcp_emu.wire.layout import TOP_TRAFFIC_CLASS, TRAFFIC_CLASSES

UNSENT, IN_FLIGHT, ACKED, LOST, ABANDONED = range(5)  # chunk states; LOST = awaiting retransmission


@dataclass
class SendResult:
    iteration: int
    tensor_id: int
    nbytes: int
    chunks: int
    start_ns: int        # send() was called
    done_ns: int         # the sender learnt the tensor is complete
    packets: int         # data packets sent, retransmissions included
    retransmissions: int
    probe_rounds: int


class _Outbound:
    __slots__ = ("key", "iteration", "tensor_id", "priority", "tclass", "count", "cs", "total", "view",
                 "mag", "flags", "state", "xmit_ts", "tx_seq", "next_new", "retx", "cum",
                 "acked", "inflight", "abandoned", "bound", "probes", "probe_rounds", "probe_ts",
                 "probe_due", "done", "order", "in_ready", "start_ns", "packets",
                 "retransmits", "lane_base")


def _per_chunk(values, count: int, name: str, dtype) -> bytes:
    """One value per chunk; a single value (a scalar) applies to every chunk."""
    a = np.asarray(values, dtype=dtype).ravel()
    if a.ndim == 1 and np.ndim(values) == 0:
        a = np.full(count, a[0], dtype=dtype)
    if a.shape != (count,):
        raise ValueError(f"{name} needs one value per chunk ({count}), got {a.size}")
    return a.astype(np.uint8).tobytes()


@dataclass(frozen=True)
class Prepared:
    """A message checked and planned: its values flat and contiguous (a view of the caller's
    array when it is one already), and one class and droppable flag per chunk."""

    data: np.ndarray
    total: int
    count: int
    mag: bytes
    drop: bytes
    bound: int


def prepare(msg: Message, *, job: int, src_rank: int, dst_rank: int, payload_size: int,
            policy: MagnitudePolicy, bounded_loss: bool, busy, nbytes: int | None = None,
            planner=None, magnitudes=chunk_magnitudes) -> Prepared:
    """Check a message for a sender of (job, src_rank, dst_rank) that is sending the keys in
    `busy`, and plan its chunks; raise ValueError / TypeError naming what is wrong.
    A message without data (None) is payload-free: `nbytes` says its size. planner: what
    plans the chunks, `policy.plan` or one with its signature; magnitudes: what measures
    them, `chunk_magnitudes` or one with its signature (the native senders' own, for both)."""
    if (msg.job, msg.src_rank, msg.dst_rank) != (job, src_rank, dst_rank):
        raise ValueError(f"message is for job {msg.job} rank {msg.src_rank}->{msg.dst_rank}, "
                         f"this sender for job {job} rank {src_rank}->{dst_rank}")
    if not 0 <= msg.priority <= 7:
        raise ValueError(f"priority must be in 0..7, got {msg.priority}")
    if not 0 <= msg.tclass <= TOP_TRAFFIC_CLASS:
        raise ValueError(f"tclass must be a traffic class code in 0..{TOP_TRAFFIC_CLASS} "
                         f"({', '.join(TRAFFIC_CLASSES)}), got {msg.tclass}")
    if msg.key in busy:
        raise ValueError(f"tensor {msg.key} (iteration, tensor_id) is already being sent")
    if msg.data is None:  # payload-free (native endpoints only): sizes, no values
        data = flat = None
        total, cs = _payload_free_size(msg, nbytes), payload_size
    else:
        data = np.asarray(msg.data)
        if data.dtype != np.float32:
            raise TypeError(f"gradients must be float32, got {data.dtype}")
        flat = np.ascontiguousarray(data.ravel(), dtype=FLOAT)
        total, cs = flat.nbytes, payload_size
    count = -(-total // cs)
    if not 0 < total < 1 << 32 or count >= MAX_CHUNKS:
        raise ValueError(f"tensor must hold 1 byte to 4 GiB, got {total} bytes")
    mag, drop = _plan(msg, flat, total, count, payload_size, planner or policy.plan, magnitudes, bounded_loss)
    bound = policy.bound_bytes(total) if bounded_loss else 0
    return Prepared(flat, total, count, mag, drop, bound)


def _plan(msg: Message, data: np.ndarray, total: int, count: int, payload_size: int,
          planner, magnitudes, bounded_loss: bool) -> tuple[bytes, bytes]:
    need_drop = bounded_loss and msg.droppable is None
    if msg.mag_class is None or need_drop:
        mags = msg.chunk_magnitudes
        if mags is None:
            if data is None:
                raise ValueError("a payload-free message needs chunk_magnitudes, or mag_class "
                                 "and (bounded loss) droppable")
            mags = magnitudes(data, payload_size)
        plan = planner(mags, total, payload_size, droppable_allowed=bounded_loss,
                       salt=(msg.job, msg.src_rank, msg.dst_rank, msg.iteration, msg.tensor_id))
        mag, drop = plan.mag_class, plan.droppable
    if msg.mag_class is not None:
        mag = _per_chunk(msg.mag_class, count, "mag_class", np.uint8)
        if max(mag) > 7:
            raise ValueError("mag_class values must be in 0..7")
    if not bounded_loss:
        drop = bytes(count)
    elif msg.droppable is not None:
        drop = _per_chunk(msg.droppable, count, "droppable", bool)
    return mag, drop


def _payload_free_size(msg: Message, nbytes) -> int:
    if nbytes is None or isinstance(nbytes, bool) or not isinstance(nbytes, (int, np.integer)):
        raise ValueError(f"a payload-free message (data None) needs nbytes, an integer; got {nbytes!r}")
    if nbytes % 4:
        raise ValueError(f"nbytes must be whole float32 values (a multiple of 4), got {nbytes}")
    return int(nbytes)
