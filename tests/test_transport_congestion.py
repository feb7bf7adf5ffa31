"""Congestion window and RTO (dlcp_emu.transport.congestion), Python's and the core's
(`impl`)."""

from __future__ import annotations

import math
from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlcp_emu.transport import CongestionControl as PyCongestionControl
from dlcp_emu.transport import RttEstimator as PyRttEstimator
from dlcp_emu.transport import native

US = 1000
IMPLS = {"python": (PyCongestionControl, PyRttEstimator),
         "native": (native.CongestionControl, native.RttEstimator)}
each_impl = pytest.mark.parametrize("impl", list(IMPLS))


@each_impl
def test_rto_follows_rfc6298(impl):
    CongestionControl, RttEstimator = IMPLS[impl]
    r = RttEstimator(initial_rto_ns=50_000 * US, min_rto_ns=1, max_rto_ns=10**12, granularity_ns=1)
    assert r.rto_ns == 50_000 * US and r.srtt_ns is None
    r.sample(100 * US)  # first: SRTT = R, RTTVAR = R/2, RTO = SRTT + 4 RTTVAR
    assert (r.srtt_ns, r.rttvar_ns, r.rto_ns) == (100 * US, 50 * US, 300 * US)
    r.sample(200 * US)  # RTTVAR = 3/4 50 + 1/4 |100 - 200|, SRTT = 7/8 100 + 1/8 200
    assert r.rttvar_ns == pytest.approx(62.5 * US)
    assert r.srtt_ns == pytest.approx(112.5 * US)
    assert r.rto_ns == int(112.5 * US + 4 * 62.5 * US)


@settings(max_examples=100, deadline=None)
@given(samples=st.lists(st.integers(1, 10**8), min_size=1, max_size=50))
@each_impl
def test_rto_matches_reference_and_stays_in_bounds(samples, impl):
    CongestionControl, RttEstimator = IMPLS[impl]
    lo, hi, g = 1_000 * US, 500_000 * US, 1_000 * US
    r = RttEstimator(min_rto_ns=lo, max_rto_ns=hi, granularity_ns=g)
    srtt = var = None
    for s in samples:
        r.sample(s)
        if srtt is None:
            srtt, var = s, s / 2
        else:
            var = 0.75 * var + 0.25 * abs(srtt - s)
            srtt = 0.875 * srtt + 0.125 * s
        want = min(max(srtt + max(g, 4 * var), lo), hi)
        assert r.rto_ns == pytest.approx(want, rel=1e-9, abs=1)
        assert lo <= r.rto_ns <= hi


@each_impl
def test_rto_floor_backoff_and_cap(impl):
    CongestionControl, RttEstimator = IMPLS[impl]
    r = RttEstimator(min_rto_ns=1_000 * US, max_rto_ns=8_000 * US, granularity_ns=1)
    r.sample(10 * US)  # sub-ms RTT: the floor wins
    assert r.rto_ns == 1_000 * US
    for want in (2_000, 4_000, 8_000, 8_000):
        r.backoff()
        assert r.rto_ns == want * US
    r.sample(10 * US)  # a new sample undoes the backoff
    assert r.rto_ns == 1_000 * US


@each_impl
def test_identical_samples_keep_a_margin_over_srtt(impl):
    CongestionControl, RttEstimator = IMPLS[impl]
    r = RttEstimator()
    for _ in range(200):
        r.sample(3_000 * US)  # RTTVAR decays towards 0
    assert r.rto_ns >= 3_000 * US + r.granularity_ns


def ack_all(cc, n, ce=False):
    """One round trip: send n packets, then their acks arrive."""
    for s in [cc.on_send() for _ in range(n)]:
        cc.on_ack(s, ce, 1)


@each_impl
def test_slow_start_then_congestion_avoidance(impl):
    CongestionControl, RttEstimator = IMPLS[impl]
    cc = CongestionControl(initial_window=10)
    ack_all(cc, 10)
    assert cc.cwnd == 20  # +1 per packet acknowledged: doubles per round trip
    cc.ssthresh = 20
    ack_all(cc, 20)
    assert cc.cwnd == pytest.approx(21, abs=0.05)  # +1 per window


@each_impl
def test_loss_halves_once_per_window(impl):
    CongestionControl, RttEstimator = IMPLS[impl]
    cc = CongestionControl(initial_window=40)
    seqs = [cc.on_send() for _ in range(40)]
    for s in seqs[:5]:  # five losses of one window: one congestion event
        cc.on_loss(s)
    assert cc.cwnd == 20 and cc.ssthresh == 20 and cc.reductions == 1
    for s in seqs[10:]:
        cc.on_ack(s, False, 1)  # acks of packets sent before the cut do not grow the window
    assert cc.cwnd == 20
    later = cc.on_send()
    cc.on_loss(later)  # a loss in the next window halves again
    assert cc.cwnd == 10 and cc.reductions == 2


@each_impl
def test_ecn_halve_mode_halves_once_per_window(impl):
    CongestionControl, RttEstimator = IMPLS[impl]
    cc = CongestionControl(initial_window=32, ecn="halve")
    seqs = [cc.on_send() for _ in range(32)]
    for s in seqs:
        cc.on_ack(s, True, 1)
    assert cc.cwnd == 16 and cc.reductions == 1


def ack_clocked(cc, n_acks, marked=lambda i: False):
    """A steady pipe: each ack releases new packets up to the window."""
    pipe = deque(cc.on_send() for _ in range(int(cc.cwnd)))
    for i in range(n_acks):
        cc.on_ack(pipe.popleft(), marked(i), 1)
        while len(pipe) < int(cc.cwnd):
            pipe.append(cc.on_send())


@each_impl
def test_dctcp_first_mark_halves_then_alpha_decays(impl):
    CongestionControl, RttEstimator = IMPLS[impl]
    cc = CongestionControl(initial_window=32, max_window=32)
    assert cc.alpha == 1.0
    cc.on_ack(cc.on_send(), True, 1)
    assert cc.cwnd == 16  # alpha starts at 1: the first reaction is a halving
    ack_clocked(cc, 5000)  # ~200 windows without marks: alpha decays by (1 - g) per window
    assert cc.alpha < 0.01 and cc.cwnd == 32
    ack_clocked(cc, 1, marked=lambda i: True)
    assert cc.cwnd == pytest.approx(32 * (1 - cc.alpha / 2), rel=1e-3)
    assert cc.cwnd > 0.99 * 32  # a light mark rate cuts the window only a little


@each_impl
def test_dctcp_alpha_converges_to_mark_fraction(impl):
    CongestionControl, RttEstimator = IMPLS[impl]
    cc = CongestionControl(initial_window=20, min_window=20, max_window=20)
    ack_clocked(cc, 20 * 400, marked=lambda i: i % 4 == 0)  # 25% of the packets marked
    assert cc.alpha == pytest.approx(0.25, abs=0.03)


@each_impl
def test_every_marked_window_only_shrinks_under_rfc8257_but_holds_under_htsims_rule(impl):
    """Every ACK marked, at a steady alpha of 0.2 (an incast flow on a congested link): RFC 8257
    (as Linux) cuts each window by alpha/2 and grows on no marked ACK, so the window only
    shrinks; htsim's DCTCP (dctcp.cpp) also cuts each window but grows by one packet a window
    on every ACK, marked or not, so it settles where the two balance, 1 / (alpha/2) = 10."""
    CongestionControl, RttEstimator = IMPLS[impl]
    ends = {}
    for ecn in ("dctcp", "dctcp-every-window"):
        cc = CongestionControl(initial_window=10, ecn=ecn, dctcp_g=0.0)   # g = 0: alpha stays put
        cc.ssthresh = 10                                                   # congestion avoidance
        cc.alpha = 0.2
        ack_clocked(cc, 400, marked=lambda i: True)
        ends[ecn] = cc.cwnd
    assert ends["dctcp"] == 1                                     # 10 * 0.9 ** n down to the floor
    assert ends["dctcp-every-window"] == pytest.approx(10, abs=1)


@each_impl
def test_htsims_rule_cuts_every_window_while_alpha_is_above_zero(impl):
    """htsim's DCTCP cuts at the end of each observation window while alpha > 0, marked or not
    (alpha decays by 1 - g a window); RFC 8257's leaves an unmarked window alone. A mark ends
    slow start under htsim's rule, where RFC 8257's cuts the window instead."""
    CongestionControl, RttEstimator = IMPLS[impl]
    ends = {}
    for ecn in ("dctcp", "dctcp-every-window"):
        cc = CongestionControl(initial_window=20, max_window=20, ecn=ecn)   # alpha from 1
        cc.ssthresh = 20
        ack_clocked(cc, 200)                      # ten windows, no mark
        ends[ecn] = (cc.cwnd, cc.reductions)
    assert ends["dctcp"] == (20, 0)
    assert ends["dctcp-every-window"][0] < 12 and ends["dctcp-every-window"][1] >= 9
    cc = CongestionControl(initial_window=10, ecn="dctcp-every-window")
    cc.alpha = 0.0                                # htsim's alpha starts at 0
    seqs = [cc.on_send() for _ in range(3)]
    cc.on_ack(seqs[0], False, 1)                  # ends the first window: alpha stays 0, no cut
    assert cc.cwnd == 11 and math.isinf(cc.ssthresh)      # slow start
    cc.on_ack(seqs[1], True, 1)                   # a mark mid-window: slow start ends, no cut
    assert cc.ssthresh == 11 and cc.cwnd == pytest.approx(11 + 1 / 11) and cc.reductions == 0


@each_impl
def test_timeout_collapses_window(impl):
    CongestionControl, RttEstimator = IMPLS[impl]
    cc = CongestionControl(initial_window=30)
    cc.on_timeout()
    assert cc.cwnd == 1 and cc.ssthresh == 15 and cc.timeouts == 1
    ack_all(cc, 14)  # slow start again up to ssthresh
    assert cc.cwnd == 15
    ack_all(cc, 15)
    assert cc.cwnd == pytest.approx(16, abs=0.1)


@each_impl
def test_pacing_gap(impl):
    CongestionControl, RttEstimator = IMPLS[impl]
    assert CongestionControl().pacing_gap_ns(100_000) == 0
    cc = CongestionControl(initial_window=10, pacing=True, pacing_gain=2)
    assert cc.pacing_gap_ns(None) == 0
    assert cc.pacing_gap_ns(100_000) == pytest.approx(5_000)


@each_impl
def test_invalid_settings(impl):
    CongestionControl, RttEstimator = IMPLS[impl]
    with pytest.raises(ValueError):
        CongestionControl(ecn="reno")
    with pytest.raises(ValueError):
        CongestionControl(initial_window=0.5)
    with pytest.raises(ValueError):
        RttEstimator(min_rto_ns=0)
    assert math.isinf(CongestionControl().ssthresh)


def test_rto_floors_scale_with_a_slow_link():
    RttEstimator = PyRttEstimator
    """At a real 10 Gbit/s a frame takes 1.2 us and the defaults stand; at the emulator's
    byte-scaled 5 Mbit/s it takes 2.5 ms, and G, the floor and the initial RTO become
    RTO_FLOOR_FRAMES frame times (twice that before the first sample)."""
    from dlcp_emu.transport.congestion import (
        ETHERNET_FRAMING,
        GRANULARITY_NS,
        INITIAL_RTO_NS,
        MIN_RTO_NS,
        RTO_FLOOR_FRAMES,
    )
    fast = RttEstimator.for_link(10e9, 1500)
    assert (fast.min_rto_ns, fast.granularity_ns, fast.rto_ns) == (MIN_RTO_NS, GRANULARITY_NS, INITIAL_RTO_NS)
    slow = RttEstimator.for_link(5e6, 1500)
    frame_ns = (1500 + ETHERNET_FRAMING) * 8e9 / 5e6
    assert slow.min_rto_ns == slow.granularity_ns == slow.pto_margin_ns == int(RTO_FLOOR_FRAMES * frame_ns)
    assert slow.rto_ns == 2 * slow.min_rto_ns
    assert fast.pto_margin_ns == int(RTO_FLOOR_FRAMES * (1500 + ETHERNET_FRAMING) * 8e9 / 10e9)
    # The spec's floor below the link's gives way to it; above it, it stands.
    assert RttEstimator.for_link(5e6, 1500, min_rto_ns=200_000).min_rto_ns == slow.min_rto_ns
    assert RttEstimator.for_link(10e9, 1500, min_rto_ns=200_000).granularity_ns == 200_000
    slow.sample(3_000_000)             # one small-message RTT: the floor still holds
    assert slow.rto_ns >= slow.min_rto_ns
    with pytest.raises(ValueError, match="link rate"):
        RttEstimator.for_link(0, 1500)
