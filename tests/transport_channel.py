"""A lossy point-to-point channel in virtual time, and an event loop that drives a sender and
a receiver over two of them. It wraps the real endpoints (nothing is mocked): tests use it,
and it is a minimal example of the simulator's contract with the sans-I/O endpoints.

Every impairment is drawn from one seeded random.Random, so a run is reproducible.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, replace
from typing import Callable

from dlcp_emu.wire import FRAME_OVERHEAD, DlcpHeader, Flags


class ChannelStuck(RuntimeError):
    """The event loop ran out of events or hit its bound before the endpoints finished."""


@dataclass
class LossyChannel:
    """One direction. Each packet is independently lost, trimmed (payload cut, TRIMMED set:
    an NDP switch), CE-marked, duplicated, and delayed by delay_ns + uniform jitter, plus
    reorder_ns * uniform with probability `reorder`. With rate_bps packets also serialise
    at that rate behind a drop-tail queue of queue_packets. `drop` / `trim_if` force the
    fate of chosen packets, `extra_delay` delays chosen ones (a priority queue, in tests)."""

    seed: int = 0
    loss: float = 0.0
    trim: float = 0.0
    ecn: float = 0.0
    duplicate: float = 0.0
    reorder: float = 0.0
    delay_ns: int = 20_000
    jitter_ns: int = 0
    reorder_ns: int = 100_000
    rate_bps: float | None = None
    queue_packets: int = 1 << 30
    drop: Callable[[DlcpHeader], bool] | None = None
    trim_if: Callable[[DlcpHeader], bool] | None = None
    extra_delay: Callable[[DlcpHeader], int] | None = None

    def __post_init__(self):
        self.rng = random.Random(self.seed)
        self._busy_until = 0
        self.sent = self.lost = self.trimmed = self.marked = self.duplicated = 0

    def transmit(self, h: DlcpHeader, payload, now: int) -> list[tuple[int, DlcpHeader, object, bool]]:
        """(arrival time, header, payload, ce) for each copy that arrives."""
        rng = self.rng
        self.sent += 1
        if (self.drop and self.drop(h)) or rng.random() < self.loss:
            self.lost += 1
            return []
        start = now
        if self.rate_bps:
            tx = (len(payload) + FRAME_OVERHEAD) * 8e9 / self.rate_bps
            if (self._busy_until - now) > tx * self.queue_packets:
                self.lost += 1
                return []
            start = max(now, self._busy_until) + tx
            self._busy_until = start
        if len(payload) and ((self.trim_if and self.trim_if(h)) or rng.random() < self.trim):
            self.trimmed += 1
            h = replace(h, flags=h.flags | Flags.TRIMMED)
            payload = b""
        ce = rng.random() < self.ecn
        self.marked += ce
        copies = 2 if rng.random() < self.duplicate else 1
        self.duplicated += copies - 1
        out = []
        for _ in range(copies):
            t = start + self.delay_ns + (self.extra_delay(h) if self.extra_delay else 0)
            if self.jitter_ns:
                t += rng.randrange(self.jitter_ns + 1)
            if self.reorder and rng.random() < self.reorder:
                t += rng.randrange(self.reorder_ns + 1)
            out.append((int(t), h, payload, ce))
        return out


@dataclass
class RunStats:
    events: int
    end_ns: int
    packets: int


def run_pair(sender, receiver, forward: LossyChannel, backward: LossyChannel, *,
             start_ns: int = 0, max_events: int = 1_000_000,
             done: Callable[[], bool] | None = None,
             on_packet: Callable[[int, DlcpHeader, object], None] | None = None,
             sends: list | None = None) -> RunStats:
    """Run until `done()` (default: the sender has nothing pending) and every message of
    `sends` ((time, Message), by time) was given to the sender at its time. Raises
    ChannelStuck if no event is left or max_events is exceeded: a transport that does not
    terminate fails loudly instead of hanging. on_packet(now, header, payload) sees every
    packet sent."""
    done = done or (lambda: sender.pending == 0)
    sends = list(sends or ())
    sends.reverse()  # popped from the end, earliest first
    heap: list = []
    seq = 0
    now = start_ns
    packets = 0

    def flush(ep, channel, peer):
        nonlocal seq, packets
        for h, p in ep.poll(now):
            packets += 1
            if on_packet:
                on_packet(now, h, p)
            for t, h2, p2, ce in channel.transmit(h, p, now):
                heapq.heappush(heap, (t, seq, peer, h2, p2, ce))
                seq += 1

    events = 0
    while True:
        flush(sender, forward, receiver)
        flush(receiver, backward, sender)
        if done() and not sends:
            return RunStats(events, now, packets)
        events += 1
        if events > max_events:
            raise ChannelStuck(f"not done after {max_events} events (t={now} ns)")
        times = [t for t in (sender.next_timeout(), receiver.next_timeout()) if t is not None]
        if heap:
            times.append(heap[0][0])
        if sends:
            times.append(sends[-1][0])
        if not times:
            raise ChannelStuck(f"no packet in flight and no timer armed at t={now} ns")
        now = max(now, min(times))
        while sends and sends[-1][0] <= now:
            sender.send(sends.pop()[1], now)
        while heap and heap[0][0] <= now:
            _, _, ep, h, p, ce = heapq.heappop(heap)
            ep.receive(h, p, now, ce)
