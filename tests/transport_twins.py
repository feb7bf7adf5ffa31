"""A Python endpoint and its native twin driven as one: every call goes to both, and every
answer, timer, counter and result is compared before the run goes on. The channel carries
the Python endpoint's packets (the same objects, so both twins of the peer receive exactly
the same input); the native twin's packets are only compared with them.

The first difference fails at the call that made it, with both answers side by side.
"""
import dataclasses
import math

import numpy as np

from dlcp_emu.transport import chunk_magnitudes, native
from dlcp_emu.transport import receiver as py_receiver
from dlcp_emu.transport import sender as py_sender
from dlcp_emu.transport.native import fields
from dlcp_emu.wire import PacketType

IMPLS = ("python", "native")
_CLASSES = {
    "python": (py_sender.ReliableSender, py_sender.DlcpSender, py_receiver.ReliableReceiver,
               py_receiver.DlcpReceiver),
    "native": (native.ReliableSender, native.DlcpSender, native.ReliableReceiver, native.DlcpReceiver),
}


def endpoints(impl: str, transport: str):
    """(sender class, receiver class) of an implementation ("python" or "native")."""
    rs, ds, rr, dr = _CLASSES[impl]
    return (ds, dr) if transport == "dlcp" else (rs, rr)


def same_packets(a, b, where, payloads=True):
    assert len(a) == len(b), f"{where}: {len(a)} packets (python) against {len(b)} (native)"
    for i, ((ha, pa), (hb, pb)) in enumerate(zip(a, b)):
        assert fields(ha) == fields(hb), f"{where}, packet {i}: python {ha} / native {hb}"
        if payloads or ha.type != PacketType.DATA:
            assert bytes(pa) == bytes(pb), f"{where}, packet {i} ({ha.type!r} chunk {ha.chunk_index}): payloads differ"
        else:
            assert pb is None, f"{where}, packet {i}: a payload-free DATA packet has a payload"


def _same_float(x, y):
    return x == y or (x is None and y is None) or (isinstance(x, float) and math.isnan(x) and math.isnan(y))


SENDER_STATE = ("pending", "inflight", "timeouts", "losses", "malformed", "spurious", "tail_probes")
CC_STATE = ("cwnd", "ssthresh", "alpha", "reductions", "timeouts", "next_seq")
RTT_STATE = ("srtt_ns", "rttvar_ns", "min_rtt_ns", "rto_ns")


def same_delivery(a, b, where, data=True):
    for name in ("job", "src_rank", "dst_rank", "iteration", "tensor_id", "first_ns", "done_ns",
                 "lost_bytes", "lost_ranges", "bound_bytes", "packets", "duplicates", "trimmed"):
        assert getattr(a, name) == getattr(b, name), f"{where}: {name} {getattr(a, name)} / {getattr(b, name)}"
    assert list(a.lost_bytes_by_class.items()) == list(b.lost_bytes_by_class.items()), where
    assert list(a.lost_chunks_by_class.items()) == list(b.lost_chunks_by_class.items()), where
    assert np.array_equal(np.asarray(a.lost_chunks), np.asarray(b.lost_chunks)), where
    if data:
        assert b.data.dtype == np.float32 and a.data.tobytes() == b.data.tobytes(), f"{where}: data differ"
    else:
        assert b.data is None, f"{where}: a payload-free receiver delivered data"


class Twin:
    """Endpoint surface over a Python endpoint and its native twin."""

    def __init__(self, py, nat, name, payload_free=False):
        """payload_free: the native twin sends sizes only (no payload) or keeps no bytes;
        then payloads and delivered data are not compared, everything else is."""
        self.py, self.nat, self.name = py, nat, name
        self.payload_free = payload_free
        self.is_sender = hasattr(py, "take_completed")
        self.results = []   # SendResults or Deliveries, as the Python endpoint gave them
        self.seen = []      # every packet the endpoint sent (header, payload)
        self.calls = 0

    def check(self, what):
        """Compare both twins' timers, state, counters and what they completed."""
        self.calls += 1
        where = f"{self.name} after {what} (call {self.calls})"
        a, b = self.py.next_timeout(), self.nat.next_timeout()
        assert a == b, f"{where}: next_timeout {a} / {b}"
        if self.is_sender:
            for name in SENDER_STATE:
                assert getattr(self.py, name) == getattr(self.nat, name), f"{where}: {name}"
            for name in CC_STATE:
                x, y = getattr(self.py.cc, name), getattr(self.nat.cc, name)
                assert _same_float(x, y), f"{where}: cc.{name} {x!r} / {y!r}"
            for name in RTT_STATE:
                x, y = getattr(self.py.rtt, name), getattr(self.nat.rtt, name)
                assert _same_float(x, y), f"{where}: rtt.{name} {x!r} / {y!r}"
            assert self.py._reo_mult == self.nat._core.reo_mult, f"{where}: reordering window"
            done_a, done_b = self.py.take_completed(), self.nat.take_completed()
            assert done_a == done_b, f"{where}: completed {done_a} / {done_b}"
            self.results += done_a
        else:
            assert (self.py.pending, self.py.malformed) == (self.nat.pending, self.nat.malformed), where
            got_a, got_b = self.py.take_delivered(), self.nat.take_delivered()
            assert len(got_a) == len(got_b), f"{where}: {len(got_a)} / {len(got_b)} delivered"
            for a, b in zip(got_a, got_b):
                same_delivery(a, b, where, data=not self.payload_free)
            self.results += got_a

    def send(self, msg, now):
        if self.payload_free:  # the same plan from the same magnitudes, no bytes to the twin
            mags = chunk_magnitudes(msg.data, self.py.payload_size)
            msg = dataclasses.replace(msg, chunk_magnitudes=mags)
            self.py.send(msg, now)
            self.nat.send(dataclasses.replace(msg, data=None), now, nbytes=msg.data.nbytes)
        else:
            self.py.send(msg, now)
            self.nat.send(msg, now)
        self.check(f"send t={now}")

    def poll(self, now):
        a, b = self.py.poll(now), self.nat.poll(now)
        same_packets(a, b, f"{self.name} poll t={now}", payloads=not self.payload_free)
        self.seen += a
        self.check(f"poll t={now}")
        return a

    def receive(self, h, payload, now, ce=False):
        self.py.receive(h, payload, now, ce)
        self.nat.receive(h, payload, now, ce)
        self.check(f"receive {h.type!r} chunk {h.chunk_index} t={now}")

    def next_timeout(self):
        return self.py.next_timeout()

    @property
    def pending(self):
        return self.py.pending
