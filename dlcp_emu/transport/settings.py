"""The settings of a run's packet transport (the spec's [transport] `congestion` and
`min_rto_us`): one place that makes each sender's congestion control and RTT estimator from
them, for both backends and both engines, and says in the summary what the transport was.

- `congestion = "newreno"` (default): NewReno with SACK-like recovery: slow start from 10
  packets with ssthresh infinite, +1/cwnd above it; a loss (RACK, a NACKed trim, or a repaired
  tail-loss probe) or an ECN echo halves the window once per window of data (RFC 5681/6582,
  RFC 3168 for the echo).
- `congestion = "dctcp"`: the same, but an ECN echo cuts the window by alpha/2, alpha the
  moving average (g = 1/16) of the fraction of marked packets per window (RFC 8257). It needs
  a switch that marks (queue_manager = "ecn"); the spec refuses it otherwise.
- `congestion = "ndp"`: NDP's receiver-paced pulls (`pulls.py`, htsim's NDP): the first
  window (`initial_window`, one BDP for NDP) goes out unasked, then one packet per PULL, which
  each receiver paces at 99% of its link for all the flows into it; no window reduction, no
  RACK or tail-loss probe (a NACKed trim is resent on the next pull; the RTO stays the last
  resort). It needs a switch that trims (queue_manager = "trim"): a dropped packet asks for
  no pull.
- `initial_ssthresh`: slow start's threshold before the first loss, in packets ("infinite",
  RFC 5681's, by default; htsim's TCP and DCTCP programs set 10). `dctcp_alpha`: DCTCP's alpha
  before the first window is measured (1 by default, as Linux: the first reaction halves;
  htsim starts at 0). `dctcp_reaction`: "on-mark" (default, RFC 8257 and Linux: a marked
  window is cut once by alpha/2, and neither a marked ACK nor the window after a cut grows
  it) or "every-window" (htsim's `dctcp.cpp`, which its DCTCP incast runs: every ACK grows
  the window, and every window is cut by alpha/2 while alpha > 0; `study/htsim_dctcp.py`).
- `initial_window`: the window a sender starts with, in packets (10, RFC 6928's, by default).
  NDP starts every flow at one bandwidth-delay product (htsim's `-cwnd`), which is what the
  htsim agreement runs of the NDP-trimming preset set (`study/baselines.py`).
- `min_rto_us`: the RTO's floor, and its least margin over SRTT (as Linux's rto_min):
  RTO = max(min_rto, SRTT + max(min_rto, 4 RTTVAR)), doubled on each timeout up to 1 s.
  Default 1 ms: far above the microseconds RTTs of a data centre (Linux's 200 ms would stall
  a training iteration, and the RTO is the last resort: RACK and the tail-loss probe recover
  losses in an RTT or two), short against an iteration. On a slow link it is raised to 40
  frame times (`RttEstimator.for_link`).
"""
import math
from dataclasses import dataclass

from dlcp_emu.transport.congestion import (
    DCTCP_G, INITIAL_WINDOW, MAX_RTO_NS, MIN_RTO_NS, CongestionControl, RttEstimator,
)
from dlcp_emu.transport.pulls import PULL_RATE, pull_gap_ns

CONGESTION = {"newreno": "halve", "dctcp": "dctcp", "ndp": "halve"}   # name -> CongestionControl's ECN reaction
DEFAULT_CONGESTION = "newreno"
DEFAULT_MIN_RTO_US = MIN_RTO_NS / 1000
MAX_INITIAL_WINDOW = 1 << 20      # CongestionControl's max_window
# dctcp_reaction -> CongestionControl's ECN reaction under congestion = "dctcp"
DCTCP_REACTIONS = {"on-mark": "dctcp", "every-window": "dctcp-every-window"}


@dataclass(frozen=True)
class TransportSettings:
    congestion: str = DEFAULT_CONGESTION
    min_rto_ns: int = MIN_RTO_NS
    initial_ssthresh: float = math.inf
    dctcp_alpha: float = 1.0
    initial_window: float = INITIAL_WINDOW
    dctcp_reaction: str = "on-mark"

    def __post_init__(self):
        if not 1 <= self.initial_window <= MAX_INITIAL_WINDOW:
            raise ValueError(f"initial_window must be 1..{MAX_INITIAL_WINDOW} packets, got {self.initial_window!r}")
        if not 2 <= self.initial_ssthresh:
            raise ValueError(f"initial_ssthresh must be at least 2 packets, got {self.initial_ssthresh!r}")
        if not 0 <= self.dctcp_alpha <= 1:
            raise ValueError(f"dctcp_alpha must be in 0..1, got {self.dctcp_alpha!r}")
        if self.dctcp_reaction not in DCTCP_REACTIONS:
            raise ValueError(f"dctcp_reaction must be one of {', '.join(DCTCP_REACTIONS)}, got {self.dctcp_reaction!r}")
        if self.congestion not in CONGESTION:
            raise ValueError(f"congestion must be one of {', '.join(CONGESTION)}, got {self.congestion!r}")
        if not 0 < self.min_rto_ns <= MAX_RTO_NS:
            raise ValueError(f"min_rto_ns must be in 1..{MAX_RTO_NS}, got {self.min_rto_ns!r}")

    def cc(self) -> CongestionControl:
        ecn = DCTCP_REACTIONS[self.dctcp_reaction] if self.congestion == "dctcp" else CONGESTION[self.congestion]
        cc = CongestionControl(initial_window=self.initial_window, ecn=ecn, pulls=self.pulls)
        cc.ssthresh, cc.alpha = float(self.initial_ssthresh), float(self.dctcp_alpha)  # the native twin reads both
        return cc

    @property
    def pulls(self) -> bool:
        """Whether senders are paced by their receivers' pulls (NDP)."""
        return self.congestion == "ndp"

    def pull_gap_ns(self, link_rate_bps, mtu=1500) -> int | None:
        """What a receiver on a link of `link_rate_bps` paces its pulls at (None: it paces none)."""
        if not self.pulls:
            return None
        if link_rate_bps is None:
            raise ValueError("congestion ndp: a receiver paces pulls at its link's rate, and none was given")
        return pull_gap_ns(link_rate_bps, mtu)

    def rtt(self, link_rate_bps=None, mtu=1500) -> RttEstimator:
        if link_rate_bps is None:
            return RttEstimator(min_rto_ns=self.min_rto_ns, granularity_ns=self.min_rto_ns)
        return RttEstimator.for_link(link_rate_bps, mtu, min_rto_ns=self.min_rto_ns)

    def describe(self, dilation=1.0) -> dict:
        """What the summary says of the transport (times in real-world units)."""
        ssthresh = "infinite" if math.isinf(self.initial_ssthresh) else self.initial_ssthresh
        if self.pulls:
            return {"congestion": self.congestion, "initial_window": self.initial_window,
                    "pacing": f"receiver-paced pulls at {PULL_RATE:g} of the receiver's link, round robin",
                    "loss_detection": "NACK of a trimmed packet; the RTO", "loss_reaction": "none",
                    "min_rto_us": self.min_rto_ns / dilation / 1000, "max_rto_s": MAX_RTO_NS / dilation / 1e9}
        return {"congestion": self.congestion, "initial_window": self.initial_window, "initial_ssthresh": ssthresh,
                "loss_detection": "RACK per lane (reordering window SRTT/4), tail-loss probe at 2 SRTT "
                                  "+ 40 frame times of the host link",
                "loss_reaction": "halve once per window",
                "ecn_reaction": (f"alpha/2, g = {DCTCP_G}, alpha from {self.dctcp_alpha:g}"
                                 + ("" if self.dctcp_reaction == "on-mark"
                                    else ", every window while alpha > 0, growth on every ACK (htsim's)")
                                 if self.congestion == "dctcp" else "halve once per window"),
                "min_rto_us": self.min_rto_ns / dilation / 1000, "max_rto_s": MAX_RTO_NS / dilation / 1e9}
