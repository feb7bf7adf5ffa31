"""Congestion control shared by the packet transports: a window in packets (every data
packet but the last of a tensor is one full chunk), slow start + AIMD, once-per-window
reaction to loss and ECN, RTO from SRTT/RTTVAR (RFC 6298).

"Once per window" uses transmission sequence numbers: a reduction happens only for a
packet sent after the previous reduction, so the burst of losses or marks that one
congestion event causes halves the window once (like NewReno's recovery point).
"""

from __future__ import annotations

import math

from switch_models import ETHERNET_OVERHEAD

from dlcp_emu.wire.layout import ETH_LEN

# Defaults, chosen for emulation and simulation rather than the Internet: RTTs are tens of
# microseconds (simulator) to a few milliseconds (Python switches at dilated rates), so the
# RFC's 1 s initial RTO and Linux's 200 ms floor would stall a training iteration.
INITIAL_RTO_NS = 10_000_000   # 10 ms before the first RTT sample
MIN_RTO_NS = 1_000_000        # 1 ms floor: well above sub-ms RTTs, well below an iteration
# RFC 6298's clock granularity G, the least margin of RTO over SRTT. Identical RTT samples
# (virtual time without queueing, or a driver that timestamps a burst at once) decay RTTVAR
# to 0 and RTO to SRTT, so the first queueing delay would fire a spurious timeout. Linux
# adds its 200 ms floor to SRTT the same way.
GRANULARITY_NS = 1_000_000
MAX_RTO_NS = 1_000_000_000    # 1 s cap on exponential backoff
INITIAL_WINDOW = 10           # packets, RFC 6928
# On a link slow enough that a frame takes milliseconds (the emulator's byte-scaled rates),
# a burst of a window, or acknowledgements queued behind one on the way back, delays the
# first answer by tens of frame times: the floors above would fire spurious timeouts (every
# iteration, after the compute phase). `RttEstimator.for_link` raises G, the floor and the
# initial RTO to this many frame times at the host's link rate, as Linux's 200 ms floor
# stands far above any queueing delay of a real network.
RTO_FLOOR_FRAMES = 4 * INITIAL_WINDOW
ETHERNET_FRAMING = ETH_LEN + ETHERNET_OVERHEAD    # header, and preamble + gap + FCS, beyond IP
DCTCP_G = 1 / 16              # DCTCP's EWMA gain (Alizadeh et al., SIGCOMM'10)
ECN_REACTIONS = ("dctcp", "halve", "dctcp-every-window")


class RttEstimator:
    """RFC 6298: SRTT/RTTVAR with alpha 1/8, beta 1/4, RTO = SRTT + max(G, 4 RTTVAR)
    (G = granularity_ns), clamped to [min_rto_ns, max_rto_ns]; doubled on each timeout,
    recomputed on the next sample. Every feedback echoes the send time of the exact packet it answers, so samples
    from retransmissions are unambiguous and Karn's rule is not needed."""

    def __init__(self, initial_rto_ns: int = INITIAL_RTO_NS, min_rto_ns: int = MIN_RTO_NS,
                 max_rto_ns: int = MAX_RTO_NS, granularity_ns: int = GRANULARITY_NS, pto_margin_ns: int = 0):
        if not 0 < min_rto_ns <= max_rto_ns:
            raise ValueError(f"need 0 < min_rto_ns <= max_rto_ns, got {min_rto_ns}, {max_rto_ns}")
        if pto_margin_ns < 0:
            raise ValueError(f"need pto_margin_ns >= 0, got {pto_margin_ns}")
        self.min_rto_ns = min_rto_ns
        # Added to the tail-loss probe's 2 SRTT (Linux adds its timer's least step): the most
        # an ACK may be late with nothing lost, when queued behind a burst of data frames.
        self.pto_margin_ns = pto_margin_ns
        self.max_rto_ns = max_rto_ns
        self.granularity_ns = granularity_ns
        self.srtt_ns: float | None = None
        self.rttvar_ns: float | None = None
        self.min_rtt_ns: int | None = None
        self.rto_ns = self._clamp(initial_rto_ns)

    @classmethod
    def for_link(cls, rate_bps: float, mtu: int, min_rto_ns: int = MIN_RTO_NS) -> "RttEstimator":
        """G and the floor at `min_rto_ns` (Linux's rto_min is both), raised with the initial
        RTO to `RTO_FLOOR_FRAMES` frame times (twice that before the first sample) on a link
        of `rate_bps`; the tail-loss probe waits those frame times more than 2 SRTT."""
        if not rate_bps > 0:
            raise ValueError(f"link rate must be positive, got {rate_bps!r}")
        floor = int(RTO_FLOOR_FRAMES * (mtu + ETHERNET_FRAMING) * 8e9 / rate_bps)
        return cls(initial_rto_ns=max(INITIAL_RTO_NS, 2 * floor), min_rto_ns=max(min_rto_ns, floor),
                   granularity_ns=max(min_rto_ns, floor), pto_margin_ns=floor)

    def _clamp(self, rto: float) -> int:
        return int(min(max(rto, self.min_rto_ns), self.max_rto_ns))

    def sample(self, rtt_ns: int) -> None:
        if rtt_ns < 0:
            return
        if self.srtt_ns is None:
            self.srtt_ns = float(rtt_ns)
            self.rttvar_ns = rtt_ns / 2
        else:
            self.rttvar_ns = 0.75 * self.rttvar_ns + 0.25 * abs(self.srtt_ns - rtt_ns)
            self.srtt_ns = 0.875 * self.srtt_ns + 0.125 * rtt_ns
        if self.min_rtt_ns is None or rtt_ns < self.min_rtt_ns:
            self.min_rtt_ns = rtt_ns
        self.rto_ns = self._clamp(self.srtt_ns + max(self.granularity_ns, 4 * self.rttvar_ns))

    def backoff(self) -> None:
        self.rto_ns = self._clamp(self.rto_ns * 2)


class CongestionControl:
    """Window in packets. Slow start (+1 per packet acknowledged) below ssthresh, +1/cwnd
    above. On loss (or trim) the window halves, at most once per window. On ECN echo:
    `ecn="dctcp"` (default) cuts by alpha/2, with alpha the EWMA (gain g) of the fraction
    of marked packets per window, starting at 1 so the first reaction halves like TCP;
    `ecn="halve"` halves like RFC 3168 TCP. Under both a marked ACK grows nothing, nor does
    any ACK in the window after a cut (RFC 3168, Linux's CWR state). `ecn="dctcp-every-window"`
    is htsim's DCTCP (`dctcp.cpp`) instead: every ACK grows the window, marked or not, and at
    the end of each observation window, while alpha > 0, the window is cut by alpha/2, marked
    or not; a mark ends slow start. A timeout sets ssthresh to half and cwnd to `min_window`
    (RFC 5681's loss window).

    Pacing (optional): packets leave at least srtt / (cwnd * pacing_gain) apart.
    `pulls`: NDP's receiver-paced pulls instead of the window after the first one
    (`pulls.py`): the sender reads it, the window stays as it is.
    """

    def __init__(self, initial_window: float = INITIAL_WINDOW, min_window: float = 1,
                 max_window: float = 1 << 20, ecn: str = "dctcp", dctcp_g: float = DCTCP_G,
                 pacing: bool = False, pacing_gain: float = 2.0, pulls: bool = False):
        if ecn not in ECN_REACTIONS:
            raise ValueError(f"ecn must be one of {', '.join(map(repr, ECN_REACTIONS))}, got {ecn!r}")
        if not 1 <= min_window <= initial_window <= max_window:
            raise ValueError("need 1 <= min_window <= initial_window <= max_window")
        self.cwnd = float(initial_window)
        self.ssthresh = math.inf
        self.min_window = float(min_window)
        self.max_window = float(max_window)
        self.ecn = ecn
        self._every_window = ecn == "dctcp-every-window"   # htsim's reaction (read every ACK)
        self.g = dctcp_g
        self.alpha = 1.0
        self.pacing = pacing
        self.pacing_gain = pacing_gain
        self.pulls = pulls
        self.next_seq = 0          # sequence number of the next transmission
        self._recover = -1         # last seq sent before the latest reduction
        self._alpha_end = 0        # DCTCP observation window ends when this seq is acked
        self._acked = 0
        self._marked = 0
        self.reductions = 0        # counters, for tests and reports
        self.timeouts = 0

    def on_send(self) -> int:
        """Number the next transmission."""
        seq = self.next_seq
        self.next_seq = seq + 1
        return seq

    def on_ack(self, seq: int, ce: bool, newly_acked: int) -> None:
        """Feedback for transmission `seq` (-1 if unknown) that acknowledged `newly_acked`
        packets not acknowledged before; `ce` is the echoed congestion mark."""
        every_window = self._every_window
        self._acked += 1
        if ce:
            self._marked += 1
            if every_window and self.cwnd < self.ssthresh:
                self.ssthresh = max(self.cwnd, 2.0)   # a mark ends slow start
        if seq >= self._alpha_end:
            self.alpha += self.g * (self._marked / self._acked - self.alpha)
            self._acked = self._marked = 0
            self._alpha_end = self.next_seq
            if every_window and self.alpha > 0:
                self.reductions += 1
                self.cwnd = max(self.cwnd * (1 - self.alpha / 2), self.min_window)
                self.ssthresh = max(self.cwnd, 2.0)
        if ce and not every_window:
            if seq > self._recover:
                factor = 0.5 if self.ecn == "halve" else 1 - self.alpha / 2
                self._reduce(self.cwnd * factor)
        elif newly_acked and seq > self._recover:
            if self.cwnd < self.ssthresh:
                self.cwnd = min(self.cwnd + newly_acked, max(self.ssthresh, self.cwnd))
            else:
                self.cwnd += newly_acked / self.cwnd
            if self.cwnd > self.max_window:
                self.cwnd = self.max_window

    def on_loss(self, seq: int) -> None:
        """Transmission `seq` was lost (or trimmed)."""
        if seq > self._recover:
            self._reduce(self.cwnd / 2)

    def on_timeout(self) -> None:
        self.timeouts += 1
        self.ssthresh = max(self.cwnd / 2, 2.0)
        self.cwnd = self.min_window
        self._recover = self.next_seq - 1

    def _reduce(self, cwnd: float) -> None:
        self.reductions += 1
        self.cwnd = max(cwnd, self.min_window)
        self.ssthresh = max(self.cwnd, 2.0)
        self._recover = self.next_seq - 1

    def pacing_gap_ns(self, srtt_ns: float | None) -> float:
        if not self.pacing or not srtt_ns:
            return 0.0
        return srtt_ns / (self.cwnd * self.pacing_gain)
