"""How a sender recovers, on the sans-I/O endpoints over a channel in virtual time (each test
runs the Python endpoints and the native ones): a loss with later packets delivered is found
by RACK and resent at once, a lost tail by the tail-loss probe, losses of one window halve
the window once, and the RTO (at the configured floor, backing off) only when everything is
lost. Every message here is one lane (one priority, one magnitude class), as a TCP flow is."""
import numpy as np
import pytest

from dlcp_emu.transport import Message, RttEstimator
from dlcp_emu.transport.settings import TransportSettings
from dlcp_emu.wire import Flags, PacketType
from transport_channel import LossyChannel, run_pair
from transport_helpers import Recorder, tensor
from transport_twins import IMPLS, endpoints

DATA = PacketType.DATA
RETX = Flags.RETRANSMISSION
CHUNK_VALUES = 356          # 1424-byte chunks at MTU 1500
MIN_RTO_NS = 300_000        # the RTO's floor here (and its margin over SRTT)
each_impl = pytest.mark.parametrize("impl", IMPLS)


def message(chunks, tensor_id=0):
    return Message(tensor(chunks * CHUNK_VALUES, tensor_id), tensor_id=tensor_id, priority=3, src_rank=0,
                   dst_rank=1, mag_class=np.zeros(chunks, np.uint8))


def first_copy(*chunks, tensor_id=0):
    """Drop the first transmission of these chunks of tensor `tensor_id`."""
    return lambda h: (h.type == DATA and h.tensor_id == tensor_id and h.chunk_index in chunks
                      and not h.flags & RETX)


def run(impl, sends, drop, congestion="newreno", rtt=None):
    """The sender's messages over a 10 Gbit/s channel (20 us each way) that drops `drop`;
    returns (sender, recorder, the time the last message completed)."""
    S, R = endpoints(impl, "reliable")
    settings = TransportSettings(congestion, MIN_RTO_NS)
    s, r = S(0, 1, cc=settings.cc(), rtt=rtt or settings.rtt()), R(1)
    rec = Recorder()
    run_pair(s, r, LossyChannel(seed=1, rate_bps=10e9, drop=drop), LossyChannel(seed=2),
             sends=sends, on_packet=rec)
    done = s.take_completed()
    assert len(done) == len(sends) and len(r.take_delivered()) == len(sends)
    return s, rec, max(d.done_ns for d in done)


def clean_end(impl, chunks=40):
    """When the same message completes with nothing lost."""
    return run(impl, [(0, message(chunks))], lambda h: False)[2]


def resent(rec):
    return [(t, h.chunk_index) for t, h, _ in rec.of(DATA) if h.flags & RETX]


@each_impl
def test_a_loss_mid_window_is_resent_at_once_without_timeout(impl):
    s, rec, end = run(impl, [(0, message(40))], first_copy(12))
    assert [c for _, c in resent(rec)] == [12]
    assert (s.losses, s.cc.reductions, s.timeouts, s.tail_probes) == (1, 1, 0, 0)
    assert end - clean_end(impl) < MIN_RTO_NS   # an RTO would cost SRTT + the floor


@each_impl
def test_a_lost_tail_is_probed_and_repaired_without_timeout(impl):
    s, rec, end = run(impl, [(0, message(40))], first_copy(39))
    assert [c for _, c in resent(rec)] == [39]   # the probe, which repairs the tail itself
    assert (s.tail_probes, s.timeouts) == (1, 0)
    # The probe's ACK without the original's is a loss: the window halves once.
    assert (s.losses, s.cc.reductions) == (1, 1)
    assert end - clean_end(impl) < MIN_RTO_NS   # an RTO would cost SRTT + the floor


@each_impl
def test_the_probe_waits_the_estimators_margin_more(impl):
    """On a slow link ACKs may queue behind frames of data: the probe then waits that margin
    more than 2 SRTT (RttEstimator.for_link sets it to 40 frame times)."""
    def probe_time(margin):
        rtt = RttEstimator(min_rto_ns=MIN_RTO_NS, granularity_ns=MIN_RTO_NS, pto_margin_ns=margin)
        _, rec, _ = run(impl, [(0, message(40))], first_copy(39), rtt=rtt)
        return [t for t, _ in resent(rec)]
    assert [b - a for a, b in zip(probe_time(0), probe_time(50_000))] == [50_000]


@each_impl
def test_a_lost_tail_of_several_packets_is_found_by_the_probe(impl):
    s, rec, end = run(impl, [(0, message(40))], first_copy(36, 37, 38, 39))
    assert sorted(c for _, c in resent(rec)) == [36, 37, 38, 39]
    assert (s.tail_probes, s.timeouts, s.cc.reductions) == (1, 0, 1)
    assert end - clean_end(impl) < MIN_RTO_NS   # an RTO would cost SRTT + the floor


@each_impl
def test_losses_of_one_window_halve_it_once(impl):
    s, rec, _ = run(impl, [(0, message(40))], first_copy(12, 15, 17))
    assert sorted(c for _, c in resent(rec)) == [12, 15, 17]
    assert (s.losses, s.cc.reductions, s.timeouts) == (3, 1, 0)


@each_impl
def test_when_everything_is_lost_the_rto_fires_at_the_floor_and_backs_off(impl):
    """A first message gives an RTT sample; everything of the second, sent at 1 ms, is lost
    until 4 ms: one tail-loss probe, then timeouts at RTO = SRTT + floor after its first
    packet, doubling each time, each resending one chunk (the window is 1)."""
    blackout = 4_000_000
    s, rec, _ = run(impl, [(0, message(1, 0)), (1_000_000, message(4, 1))],
                    lambda h: h.type == DATA and h.tensor_id == 1 and h.send_ts_ns < blackout)
    resends = [(t, h.chunk_index) for t, h, _ in rec.of(DATA)
               if h.tensor_id == 1 and h.flags & RETX and t < blackout]
    probe, *timeouts = resends
    assert probe == (pytest.approx(1_000_000, abs=200_000), 3)   # the latest sent, ~2 SRTT on
    times = [t for t, _ in timeouts]
    rto = times[0] - 1_000_000
    assert MIN_RTO_NS < rto < MIN_RTO_NS + 100_000
    assert [b - a for a, b in zip(times, times[1:])] == [2 * rto, 4 * rto]
    assert (s.tail_probes, s.timeouts) == (1, 4)   # the 4th after the blackout


@each_impl
def test_dctcp_cuts_by_half_the_marked_fraction_where_newreno_halves(impl):
    """The same marks (a quarter of the packets, seeded) on both: DCTCP's alpha settles near
    the marked fraction and its window cuts are small, NewReno halves at each marked window."""
    chan = dict(seed=1, rate_bps=1e9, ecn=0.25)
    windows = {}
    for congestion in ("dctcp", "newreno"):
        S, R = endpoints(impl, "reliable")
        settings = TransportSettings(congestion, MIN_RTO_NS)
        s, r = S(0, 1, cc=settings.cc(), rtt=settings.rtt()), R(1)
        cwnds = []
        run_pair(s, r, LossyChannel(**chan), LossyChannel(seed=2), sends=[(0, message(3000))],
                 on_packet=lambda now, h, p: cwnds.append(s.cc.cwnd))
        windows[congestion] = (s.cc.alpha, np.mean(cwnds[len(cwnds) // 2:]))
        assert s.timeouts == 0 and s.losses == 0
    alpha, dctcp_cwnd = windows["dctcp"]
    assert 0.1 < alpha < 0.4
    assert dctcp_cwnd > 1.5 * windows["newreno"][1]


@each_impl
def test_an_initial_ssthresh_ends_slow_start_there(impl):
    """Slow start doubles the window each RTT up to the threshold, then it grows by one a
    window: a 200-packet message with nothing lost ends with a window near 200 from an infinite
    threshold, near 10 + 200 / 10 from one of 10 (htsim's)."""
    windows = {}
    for ssthresh in (float("inf"), 10):
        S, R = endpoints(impl, "reliable")
        settings = TransportSettings("newreno", MIN_RTO_NS, ssthresh)
        s, r = S(0, 1, cc=settings.cc(), rtt=settings.rtt()), R(1)
        run_pair(s, r, LossyChannel(seed=1, rate_bps=10e9), LossyChannel(seed=2), sends=[(0, message(200))])
        windows[ssthresh] = s.cc.cwnd
    assert windows[float("inf")] == 10 + 199   # +1 a packet; the last ACK completes, no growth
    assert 10 < windows[10] < 10 + 200 / 10 + 2


@each_impl
def test_an_initial_window_is_what_the_first_poll_sends(impl):
    """NDP's first window of one BDP (htsim's -cwnd, study/baselines.py): the sender's first
    poll puts exactly so many packets on the wire, and the summary says so."""
    for window in (10, 35, 104):
        S, _ = endpoints(impl, "reliable")
        settings = TransportSettings("newreno", MIN_RTO_NS, initial_window=window)
        s = S(0, 1, cc=settings.cc(), rtt=settings.rtt())
        s.send(message(200), 0)
        assert len(s.poll(0)) == window
        assert settings.describe()["initial_window"] == window
    with pytest.raises(ValueError, match="initial_window must be 1..1048576 packets, got 0"):
        TransportSettings(initial_window=0)


def test_dctcps_reaction_is_a_setting_the_summary_names():
    """RFC 8257's reaction by default; htsim's on request, named in the summary; a reaction
    that is neither is refused by name. Only dctcp reads it (newreno halves either way)."""
    assert TransportSettings("dctcp").cc().ecn == "dctcp"
    htsims = TransportSettings("dctcp", dctcp_reaction="every-window")
    assert htsims.cc().ecn == "dctcp-every-window"
    assert htsims.describe()["ecn_reaction"].endswith("every window while alpha > 0, growth on every ACK (htsim's)")
    assert TransportSettings("dctcp").describe()["ecn_reaction"] == "alpha/2, g = 0.0625, alpha from 1"
    assert TransportSettings("newreno", dctcp_reaction="every-window").cc().ecn == "halve"
    with pytest.raises(ValueError, match="dctcp_reaction must be one of on-mark, every-window, got 'rfc'"):
        TransportSettings("dctcp", dctcp_reaction="rfc")
