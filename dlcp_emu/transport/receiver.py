"""The receiving endpoint, sans-I/O: give it packets with `receive(header, payload, now, ce)`,
collect what to send with `poll(now)`, and completed tensors with `take_delivered()`.

Every packet lands at its offset, so reordering and duplicates are harmless. Each data
packet is answered by one ACK (cumulative point, the chunk, three chunks before it, the
echoed send time and CE mark); a trimmed packet by a NACK. `ReliableReceiver` completes a
tensor when every chunk has arrived. `DlcpReceiver` also completes once a PROBE has told it
which chunks are droppable, every other chunk has arrived, and the missing bytes are within
the bound; the missing bytes stay zero (the parameters keep last iteration's value) and are
accounted exactly in the Delivery. Given `pull_gap_ns`, a receiver paces NDP's pulls
(`pulls.py`): every data packet asks its sender for one more, released by a pacer shared by
every flow into it.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field

import numpy as np

from dlcp_emu.wire import MAX_PAYLOAD, DlcpHeader, Flags, PacketType
from dlcp_emu.transport import feedback as fb
from dlcp_emu.transport.message import DEFAULT_MTU, FLOAT, transport_payload_size
from dlcp_emu.transport.pulls import PullPacer

ACK = PacketType.ACK
BITMAP = PacketType.BITMAP
NO_FLAGS = Flags(0)
# Flag tests by set membership: `h.flags & Flags.X` builds an enum object per packet.
HAS_TRIMMED = frozenset(f for f in range(256) if f & Flags.TRIMMED)
HAS_DROPPABLE = frozenset(f for f in range(256) if f & Flags.DROPPABLE)
CONTROL_PRIORITY = 0   # feedback is small and drives every sender's clock: serve it first
CONTROL_MAG = 7


@dataclass
class Delivery:
    """One completed tensor. `data` equals what was sent, except `lost_ranges` (byte
    ranges [start, stop)) which are zero."""

    job: int
    src_rank: int
    dst_rank: int
    iteration: int
    tensor_id: int
    data: np.ndarray
    first_ns: int                  # first packet of the tensor arrived
    done_ns: int                   # completed
    lost_chunks: np.ndarray        # chunk indices zero-filled
    lost_bytes: int
    lost_ranges: list[tuple[int, int]]
    lost_bytes_by_class: dict[int, int] = field(default_factory=dict)   # -1: class unknown
    lost_chunks_by_class: dict[int, int] = field(default_factory=dict)
    bound_bytes: int = 0           # bound announced by the probe (0: reliable, or no probe seen)
    packets: int = 0               # data packets received, including duplicates and trims
    duplicates: int = 0
    trimmed: int = 0
    nbytes: int = 0                # the tensor's size (data.nbytes; payload-free: data is None)


class _Inbound:
    __slots__ = ("key", "count", "cs", "buf", "got", "received", "received_bytes",
                 "received_droppable", "cum", "recent", "last_len", "first_ns", "packets",
                 "dups", "trimmed", "classes", "total", "bound", "n_droppable", "nseg",
                 "segs", "drop_class", "probe_ts")

    def __init__(self, key, count, cs, now):
        self.key = key
        self.count = count
        self.cs = cs
        self.buf = bytearray(count * cs)   # zero: what a missing chunk delivers
        self.got = bytearray(count)
        self.received = self.received_bytes = self.received_droppable = self.cum = 0
        self.recent = deque(maxlen=fb.ACK_EXTRA)
        self.last_len = None
        self.first_ns = now
        self.packets = self.dups = self.trimmed = 0
        self.classes = {}        # chunk -> class, learnt from trimmed headers
        self.total = None        # from the last chunk or a probe
        self.bound = 0
        self.n_droppable = 0
        self.nseg = 0            # 0: no probe yet
        self.segs = set()
        self.drop_class = {}     # droppable chunk -> class, from probes
        self.probe_ts = None     # send time of the last probe answered


def _chunk_size(h: DlcpHeader) -> int:
    """Chunk size from any one packet: offset = chunk_index * chunk_size."""
    if h.chunk_index == 0:
        return h.payload_len
    return h.offset // h.chunk_index


class Receiver:
    """Base receiver; use ReliableReceiver or DlcpReceiver."""

    bounded_loss = False

    def __init__(self, rank: int, *, mtu: int = DEFAULT_MTU, remember: int = 4096,
                 pull_gap_ns: int | None = None):
        self.rank = rank
        self._pacer = None if pull_gap_ns is None else PullPacer(pull_gap_ns)
        self.payload_size = transport_payload_size(mtu)
        self.remember = remember
        self._msgs: dict[tuple, _Inbound] = {}
        self._done: OrderedDict[tuple, None] = OrderedDict()  # completed keys: answer late packets
        self._out: list = []
        self._delivered: list[Delivery] = []
        self.malformed = 0

    # ---- sans-I/O interface -----------------------------------------------------------
    def receive(self, h: DlcpHeader, payload, now: int, ce: bool = False) -> None:
        if h.dst_rank != self.rank:
            self.malformed += 1
        elif h.type == PacketType.DATA:
            self._on_data(h, payload, now, ce)
        elif h.type == PacketType.PROBE and self.bounded_loss:
            self._on_probe(h, payload, now)

    def poll(self, now: int) -> list:
        if self._pacer is not None:
            self._release_pull(now)
        out, self._out = self._out, []
        return out

    def next_timeout(self) -> int | None:
        return None if self._pacer is None else self._pacer.next_timeout()  # senders drive recovery

    def take_delivered(self) -> list[Delivery]:
        out, self._delivered = self._delivered, []
        return out

    @property
    def pending(self) -> int:
        return len(self._msgs)

    # ---- data -------------------------------------------------------------------------
    def _state(self, h: DlcpHeader, now: int, cs: int | None = None):
        key = (h.job, h.src_rank, h.iteration, h.tensor_id)
        st = self._msgs.get(key)
        if st is None:
            if key in self._done:
                return key, None
            count = h.chunk_count
            if cs is None:
                cs = _chunk_size(h)
            if count <= 0 or cs <= 0 or cs % 4 or cs > MAX_PAYLOAD:
                self.malformed += 1
                return None, None
            st = self._msgs[key] = _Inbound(key, count, cs, now)
        return key, st

    def _on_data(self, h: DlcpHeader, payload, now: int, ce: bool) -> None:
        key, st = self._state(h, now)
        if key is None:
            return
        c = h.chunk_index
        if st is None:  # completed earlier: tell the sender again
            self._feedback(h, now, fb.encode_ack(h.send_ts_ns, 0, fb.FB_COMPLETE, ()), ACK)
            return
        n = h.payload_len
        cs = st.cs
        last = st.count - 1
        if (h.chunk_count != st.count or c > last or h.offset != c * cs
                or (n != cs if c < last else not 0 < n <= cs)):
            self.malformed += 1
            return
        st.packets += 1
        if self._pacer is not None:
            self._pacer.request((h.job, h.src_rank), now, (h.iteration, h.tensor_id, c, st.count, h.tclass))
        if h.flags in HAS_TRIMMED:
            st.trimmed += 1
            st.classes[c] = h.mag_class
            if c == last:
                st.total = c * cs + n
            if not st.got[c]:
                self._feedback(h, now, fb.encode_nack(h.send_ts_ns, st.cum, c), BITMAP)
                return
        elif not st.got[c]:
            if len(payload) != n:
                self.malformed += 1
                return
            off = c * cs
            st.buf[off:off + n] = payload
            st.got[c] = 1
            st.received += 1
            st.received_bytes += n
            if h.flags in HAS_DROPPABLE:
                st.received_droppable += 1
            if c == last:
                st.total = off + n
            if c == st.cum:
                got, cum, count = st.got, c + 1, st.count
                while cum < count and got[cum]:
                    cum += 1
                st.cum = cum
        else:
            st.dups += 1
        fl = fb.FB_CE if ce else 0
        extra = tuple(st.recent)
        if c not in st.recent:
            st.recent.appendleft(c)
        if self._complete_ready(st):
            fl |= fb.FB_COMPLETE
            self._complete(h, st, now)
        self._feedback(h, now, fb.encode_ack(h.send_ts_ns, st.cum, fl, extra), ACK)

    def _complete_ready(self, st: _Inbound) -> bool:
        if st.received == st.count:
            return True
        return (self.bounded_loss and st.nseg and len(st.segs) == st.nseg
                and st.received - st.received_droppable == st.count - st.n_droppable
                and st.total - st.received_bytes <= st.bound)

    def _complete(self, h: DlcpHeader, st: _Inbound, now: int) -> None:
        total = st.total
        cs = st.cs
        lost = np.flatnonzero(np.frombuffer(st.got, dtype=np.uint8) == 0)
        ranges: list[tuple[int, int]] = []
        by_bytes: dict[int, int] = {}
        by_chunks: dict[int, int] = {}
        lost_bytes = 0
        for c in lost.tolist():
            start, stop = c * cs, min((c + 1) * cs, total)
            lost_bytes += stop - start
            cls = st.drop_class.get(c, st.classes.get(c, -1))
            by_bytes[cls] = by_bytes.get(cls, 0) + stop - start
            by_chunks[cls] = by_chunks.get(cls, 0) + 1
            if ranges and ranges[-1][1] == start:
                ranges[-1] = (ranges[-1][0], stop)
            else:
                ranges.append((start, stop))
        # The buffer started zeroed and missing chunks were never written: zero-filled.
        data = np.frombuffer(memoryview(st.buf)[:total], dtype=FLOAT)
        job, src, it, tensor = st.key
        self._delivered.append(Delivery(
            job, src, self.rank, it, tensor, data, st.first_ns, now, lost, lost_bytes, ranges,
            by_bytes, by_chunks, st.bound if self.bounded_loss else 0,
            st.packets, st.dups, st.trimmed, total))
        del self._msgs[st.key]
        self._done[st.key] = None
        if len(self._done) > self.remember:
            self._done.popitem(last=False)
        if self._pacer is not None and not any(k[:2] == (job, src) for k in self._msgs):
            self._pacer.flush((job, src))

    def _release_pull(self, now: int) -> None:
        """A PULL, if the pacer has one due (an ACK with FB_PULL: a pull number alone)."""
        due = self._pacer.release(now)
        if due is not None:
            (job, src), n = due
            iteration, tensor, chunk, count, tclass = self._pacer.header[(job, src)]
            p = fb.encode_ack(0, 0, fb.FB_PULL, (), n)
            self._out.append((DlcpHeader(ACK, NO_FLAGS, CONTROL_PRIORITY, CONTROL_MAG, job, self.rank, src,
                                         len(p), iteration, tensor, chunk, count, 0, now, tclass), p))

    def _feedback(self, h: DlcpHeader, now: int, payload: bytes, ptype, chunk: int | None = None):
        if self._pacer is not None:   # every answer carries the sender's latest pull number
            pull = self._pacer.released.get((h.job, h.src_rank), 0)
            payload = payload[:14] + bytes((pull >> 8, pull & 0xFF)) + payload[16:]
        self._out.append((DlcpHeader(
            ptype, NO_FLAGS, CONTROL_PRIORITY, CONTROL_MAG, h.job, self.rank, h.src_rank,
            len(payload), h.iteration, h.tensor_id, h.chunk_index if chunk is None else chunk,
            h.chunk_count, 0, now, h.tclass), payload))

    # ---- probes (dlcp) ----------------------------------------------------------------
    def _on_probe(self, h: DlcpHeader, payload, now: int) -> None:
        if h.flags in HAS_TRIMMED or len(payload) < fb.PROBE_HEAD.size:
            self._on_trimmed_probe(h, now)
            return
        total, cs, bound, n_drop, seg, nseg, entries = fb.decode_probe(payload)
        count = h.chunk_count
        if not (0 < cs and (count - 1) * cs < total <= count * cs and seg < nseg
                and n_drop <= count):
            self.malformed += 1
            return
        key, st = self._state(h, now, cs=cs)
        if key is None:
            return
        if st is None:
            self._bitmap_complete(h, now)
            return
        if cs != st.cs or (st.total is not None and st.total != total):
            self.malformed += 1
            return
        st.total = total
        if not st.nseg:
            st.nseg, st.bound, st.n_droppable = nseg, bound, n_drop
        if seg not in st.segs:
            st.segs.add(seg)
            st.drop_class.update(zip((entries & fb.PROBE_CHUNK_MASK).tolist(),
                                     (entries >> fb.PROBE_ENTRY_SHIFT).tolist()))
        if st.probe_ts == h.send_ts_ns:
            return  # one answer per probe round, however many packets it has
        st.probe_ts = h.send_ts_ns
        if len(st.segs) < st.nseg:
            self._bitmaps(h, st, now, fb.FB_NEED_PROBE)
        elif self._complete_ready(st):
            self._complete(h, st, now)
            self._bitmap_complete(h, now)
        else:
            self._bitmaps(h, st, now, 0)

    def _on_trimmed_probe(self, h: DlcpHeader, now: int) -> None:
        """The probe's list was cut off: show what arrived and ask for the probe again."""
        key = (h.job, h.src_rank, h.iteration, h.tensor_id)
        st = self._msgs.get(key)
        if key in self._done:
            self._bitmap_complete(h, now)
        elif st is None:
            self._feedback(h, now, fb.BITMAP_HEAD.pack(h.send_ts_ns, 0, fb.FB_NEED_PROBE, 0, 0, 0),
                           BITMAP, 0)
        elif st.probe_ts != h.send_ts_ns:
            st.probe_ts = h.send_ts_ns
            self._bitmaps(h, st, now, fb.FB_NEED_PROBE)

    def _bitmaps(self, h: DlcpHeader, st: _Inbound, now: int, fl: int) -> None:
        for base, p in fb.encode_bitmaps(st.got, st.cum, h.send_ts_ns, fl, self.payload_size):
            self._feedback(h, now, p, BITMAP, base)

    def _bitmap_complete(self, h: DlcpHeader, now: int) -> None:
        self._feedback(h, now, fb.BITMAP_HEAD.pack(h.send_ts_ns, 0, fb.FB_COMPLETE, 0, 0, 0), BITMAP, 0)


class ReliableReceiver(Receiver):
    """Completes a tensor when every byte has arrived."""

    bounded_loss = False


class DlcpReceiver(Receiver):
    """Bounded loss: completes when every non-droppable chunk has arrived and the missing
    (droppable) bytes are within the bound the sender's PROBE announced."""

    bounded_loss = True
