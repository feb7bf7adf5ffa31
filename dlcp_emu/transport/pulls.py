"""NDP's receiver-paced pulls (Handley et al., SIGCOMM'17; htsim's NdpSrc, NdpSink and
NdpPullPacer, sim/ndp.cpp), the `ndp` congestion setting of both ends.

Receiver: every data packet that arrives, whole or trimmed to its header, asks for one more
packet from its sender. The requests of all the flows into a receiver share one pacer, which
releases them one at a time, round robin over the senders, at most one every `gap_ns` (a
full frame's time at 99% of the receiver's link, htsim's pull rate). A request the pacer can
release at once rides on the packet's ACK or NACK; else it waits in the pacer and leaves as
a PULL (an ACK with FB_PULL). Each sender's pulls are numbered (16 bits, wrapping): every
answer to it (ACK, NACK, BITMAP, PULL) carries the latest number released to it, so a lost
one is covered by the next. When a sender has nothing left under way at the receiver, its waiting
requests are dropped (htsim's `release_pulls`): they would pull nothing.

Sender: the first window (`initial_window`, one BDP for NDP) goes out unasked; after it, one
packet per pull, retransmissions (a NACKed trim) first. Its window never shrinks and it reads
nothing from reordering (no RACK, no tail-loss probe): a loss is a NACK, or the RTO, the
last resort, whose resends go out at once.
"""
from __future__ import annotations

from collections import deque

from switch_models import ETHERNET_OVERHEAD

from dlcp_emu.transport import feedback as fb
from dlcp_emu.wire.layout import ETH_LEN

PULL_RATE = 0.99        # of the link: htsim's main_ndp.cpp, NdpPullPacer(..., 0.99)
PULL_MASK = 0xFFFF      # pull numbers are 16 bits on the wire


def pull_gap_ns(link_rate_bps: float, mtu: int) -> int:
    """The pacer's spacing: one full frame (with preamble, gap and FCS) at PULL_RATE of the link."""
    if not link_rate_bps > 0:
        raise ValueError(f"link rate must be positive, got {link_rate_bps!r}")
    return max(1, round((mtu + ETH_LEN + ETHERNET_OVERHEAD) * 8e9 / (link_rate_bps * PULL_RATE)))


def pull_number(payload) -> int:
    """The pull number a feedback payload carries (its prefix's last two bytes)."""
    return payload[14] << 8 | payload[15]


class PullPacer:
    """The receiver's side: which pull each sender has been released, and the requests waiting."""

    def __init__(self, gap_ns: int):
        if not (isinstance(gap_ns, int) and gap_ns > 0):
            raise ValueError(f"pull_gap_ns must be a positive integer of ns, got {gap_ns!r}")
        self.gap_ns = gap_ns
        self.released: dict[tuple, int] = {}   # (job, src) -> its latest pull number
        self.waiting: dict[tuple, int] = {}    # (job, src) -> requests not yet released
        self.turn: deque = deque()             # senders with requests waiting, round robin
        self.last: int | None = None           # when the latest pull was released
        self.header: dict[tuple, tuple] = {}   # (job, src) -> (iteration, tensor, chunk, count, tclass) to pull with

    def request(self, src: tuple, now: int, header: tuple) -> int:
        """One more packet asked of `src` (header: the iteration, tensor, chunk, count and tclass a
        PULL for it names); the pull number its answers now carry."""
        self.header[src] = header
        if not self.turn and (self.last is None or now - self.last >= self.gap_ns):
            self.last = now
            n = self.released[src] = (self.released.get(src, 0) + 1) & PULL_MASK
            return n
        if not self.waiting.get(src):
            self.waiting[src] = 0
            self.turn.append(src)
        self.waiting[src] += 1
        return self.released.get(src, 0)

    def flush(self, src: tuple) -> None:
        """`src` has nothing under way here: its waiting requests would pull nothing."""
        if self.waiting.pop(src, 0):
            self.turn.remove(src)

    def next_timeout(self) -> int | None:
        return self.last + self.gap_ns if self.turn else None

    def release(self, now: int):
        """The sender whose turn it is, and its new pull number, if one is due by now."""
        if not self.turn or now < self.last + self.gap_ns:
            return None
        src = self.turn.popleft()
        self.waiting[src] -= 1
        if self.waiting[src]:
            self.turn.append(src)
        else:
            del self.waiting[src]
        self.last = now
        n = self.released[src] = (self.released.get(src, 0) + 1) & PULL_MASK
        return src, n


class PullCredit:
    """The sender's side, mixed into `Sender`: `_pulls` (the mode), `_credit` (packets it may
    send), `_max_pull` (the latest pull number seen) and `_first_window`."""

    def _take_pull(self, payload) -> bool:
        """Credit what a feedback payload's pull number adds; whether it is a PULL alone."""
        if len(payload) < fb.FEEDBACK.size:
            return False     # trimmed: its number is lost, the next one covers it
        d = (pull_number(payload) - self._max_pull) & PULL_MASK
        if 0 < d <= PULL_MASK >> 1:
            self._max_pull = (self._max_pull + d) & PULL_MASK
            self._credit += d
        return bool(payload[12] & fb.FB_PULL)

    def _start_window(self) -> None:
        """A message to an idle sender starts a flow: its first window goes out unasked."""
        if self._pulls and not self._msgs:
            self._credit = max(self._credit, self._first_window)
