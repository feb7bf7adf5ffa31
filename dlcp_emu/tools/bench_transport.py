"""`dlcp-emu bench transport`: packets per second of the transport endpoints, native and
Python, in one run: one sender and one receiver move one large message (100 MB by default)
over a lossless link and a lossy one, in virtual time.

Three ways for each link, on the same message:
- `python`: the Python endpoints (`dlcp_emu.transport`) in a Python event loop;
- `native_via_python`: the native endpoints (`dlcp_emu.transport.native`) in the same Python
  loop, so every packet crosses into Python (what hosts that stay Python would pay);
- `native`: the native endpoints in the core's own loop (`run_transport_pair`): no Python
  per packet;
and `native_payload_free`: the same with sizes only (no bytes copied or kept).

The loop and the channel are the same in both languages (`dlcp_native/src/transport/transport_pair.cpp`
mirrors `run_loop` and `Channel` below, and draws loss from Python's own generator), so every
way must see the same packets and end at the same virtual time: `identical` says so.
Planning the message (magnitude classes, droppable chunks: numpy, per message) is timed
apart (`plan_s`); the figures are the loop's packets (both directions) per wall second, the
fastest of `repeat` runs (the machine is shared: the spread is in `runs_pps`). Python's
garbage collector stays on, as in a simulation.
"""
from __future__ import annotations

import heapq
import random
import time

import numpy as np

from dlcp_native.transport import run_transport_pair

from dlcp_emu.transport import DlcpReceiver, DlcpSender, Message, ReliableReceiver, ReliableSender
from dlcp_emu.transport import native
from dlcp_emu.wire import FRAME_OVERHEAD

MB = 1_000_000
DELAY_NS = 20_000
WAYS = ("python", "native_via_python", "native", "native_payload_free")
MAX_EVENTS = 50_000_000


class Channel:
    """One direction: loss with probability `loss` (a seeded random.Random), then `delay_ns`
    after serialising at `rate_bps` (None: at once) behind the packets before it."""

    def __init__(self, seed, loss, delay_ns=DELAY_NS, rate_bps=None):
        self.rng, self.loss, self.delay_ns, self.rate_bps = random.Random(seed), loss, delay_ns, rate_bps
        self.busy_until = 0.0
        self.sent = self.lost = 0

    def transmit(self, payload_len, now):
        """The arrival time, or None when lost."""
        self.sent += 1
        if self.loss and self.rng.random() < self.loss:
            self.lost += 1
            return None
        start = now
        if self.rate_bps:
            start = max(float(now), self.busy_until) + (payload_len + FRAME_OVERHEAD) * 8e9 / self.rate_bps
            self.busy_until = start
        return int(start + self.delay_ns)

    def settings(self, seed):
        return {"seed": seed, "loss": self.loss, "delay_ns": self.delay_ns, "rate_bps": self.rate_bps}


def run_loop(sender, receiver, fwd, back, max_events=MAX_EVENTS):
    """Until the sender has nothing pending: (events, end_ns, packets). The native loop
    (`dlcp_native.transport.run_transport_pair`) is this, step for step."""
    heap, seq, now, packets, events = [], 0, 0, 0, 0
    while True:
        for ep, ch, to_receiver in ((sender, fwd, True), (receiver, back, False)):
            for h, p in ep.poll(now):
                packets += 1
                t = ch.transmit(h.payload_len, now)
                if t is not None:
                    heapq.heappush(heap, (t, seq, to_receiver, h, p))
                    seq += 1
        if sender.pending == 0:
            return events, now, packets
        events += 1
        if events > max_events:
            raise RuntimeError(f"the transfer is not done after {max_events} events")
        t = sender.next_timeout()
        if heap and (t is None or heap[0][0] < t):
            t = heap[0][0]
        if t is None:
            raise RuntimeError(f"no packet in flight and no timer armed at t={now} ns")
        now = max(now, t)
        while heap and heap[0][0] <= now:
            _, _, to_receiver, h, p = heapq.heappop(heap)
            (receiver if to_receiver else sender).receive(h, p, now)


def _endpoints(way, transport, mtu):
    if way == "python":
        s, r = (DlcpSender, DlcpReceiver) if transport == "dlcp" else (ReliableSender, ReliableReceiver)
    else:
        s, r = (native.DlcpSender, native.DlcpReceiver) if transport == "dlcp" else \
            (native.ReliableSender, native.ReliableReceiver)
    kw = {"store": False} if way == "native_payload_free" else {}
    return s(0, 1, mtu=mtu), r(1, mtu=mtu, **kw)


def run_way(way, msg, transport, loss, seed, mtu, rate_bps=None):
    """One transfer; a dict of its figures."""
    sender, receiver = _endpoints(way, transport, mtu)
    fwd, back = Channel(seed, loss, rate_bps=rate_bps), Channel(seed + 1, loss, rate_bps=rate_bps)
    start = time.perf_counter()
    if way == "native_payload_free":
        mags = msg.chunk_magnitudes
        sender.send(Message(None, src_rank=0, dst_rank=1, chunk_magnitudes=mags), 0, nbytes=msg.data.nbytes)
    else:
        sender.send(msg, 0)
    plan_s = time.perf_counter() - start
    start = time.perf_counter()
    if way in ("python", "native_via_python"):
        events, end_ns, packets = run_loop(sender, receiver, fwd, back)
        fwd_lost, back_lost = fwd.lost, back.lost
    else:
        st = run_transport_pair(sender._core, receiver._core, fwd.settings(seed),
                                      back.settings(seed + 1), MAX_EVENTS)
        if st["stuck"]:
            raise RuntimeError(f"the native transfer did not finish: {st}")
        events, end_ns, packets = st["events"], st["end_ns"], st["packets"]
        fwd_lost, back_lost = st["forward_lost"], st["backward_lost"]
    seconds = time.perf_counter() - start
    (d,) = receiver.take_delivered()
    return {"way": way, "packets": packets, "events": events, "end_ns": end_ns, "seconds": round(seconds, 4),
            "pps": int(packets / seconds), "plan_s": round(plan_s, 4), "lost_packets": fwd_lost + back_lost,
            "lost_bytes": d.lost_bytes, "retransmissions": sender.take_completed()[0].retransmissions,
            "timeouts": sender.timeouts}


def run(transport="dlcp", mbytes=100.0, loss=0.01, mtu=1500, seed=1, ways=WAYS, repeat=1, log=None):
    """Every way over a lossless and a lossy link, `repeat` times (the fastest run counts);
    figures, ratios, and whether every run of every way saw the same packets and ended at
    the same virtual time."""
    nbytes = max(4, int(mbytes * MB) // 4 * 4)
    data = np.random.default_rng(seed).standard_normal(nbytes // 4).astype(np.float32)
    # The magnitudes measured once, as every sender would measure them: planning stays out
    # of the figures (it is per message, and shared by both languages).
    from dlcp_emu.transport import chunk_magnitudes, transport_payload_size
    mags = chunk_magnitudes(data, transport_payload_size(mtu))
    msg = Message(data, src_rank=0, dst_rank=1, chunk_magnitudes=mags)
    links = []
    for name, p in (("lossless", 0.0), (f"{loss:g} loss", loss)):
        rows, same = {}, set()
        for way in ways:
            runs = []
            for i in range(repeat):
                runs.append(run_way(way, msg, transport, p, seed, mtu))
                r = runs[-1]
                same.add((r["packets"], r["end_ns"], r["lost_bytes"]))
                if log:
                    log(f"{name}, {way}, run {i + 1}: {r['packets']:,} packets in {r['seconds']:.3f} s: "
                        f"{r['pps']:,}/s")
            rows[way] = max(runs, key=lambda r: r["pps"])
            rows[way]["runs_pps"] = [r["pps"] for r in runs]
        link = {"link": name, "loss": p, "ways": rows, "identical": len(same) == 1}
        if "python" in rows:
            for way in rows:
                if way != "python":
                    link[f"{way}_ratio"] = round(rows[way]["pps"] / rows["python"]["pps"], 1)
        links.append(link)
    return {"transport": transport, "bytes": nbytes, "mtu": mtu, "delay_ns": DELAY_NS, "repeat": repeat, "links": links,
            "identical": all(x["identical"] for x in links)}
