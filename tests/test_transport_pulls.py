"""NDP's receiver-paced pulls (`transport.congestion = "ndp"`, dlcp_emu/transport/pulls.py),
driven on the sans-I/O endpoints of both twins: the receiver's pacer (one pull a gap, round
robin over its senders, shared by all of them, dropped once a sender has nothing under way),
the sender (its first window unasked, then one packet a pull, a NACKed chunk first, nothing
read from reordering), and the settings that choose it."""
import pytest

from dlcp_emu.experiment.spec import SpecError, parse_spec
from dlcp_emu.transport import CongestionControl, Message, ReliableReceiver, ReliableSender
from dlcp_emu.transport import feedback as fb
from dlcp_emu.transport import native
from dlcp_emu.transport.message import chunk_payload_size
from dlcp_emu.transport.pulls import pull_gap_ns, pull_number
from dlcp_emu.transport.settings import TransportSettings
from dlcp_emu.wire import DlcpHeader, Flags, PacketType
from test_spec import GOOD
from transport_helpers import tensor

CS = chunk_payload_size(1500)
GAP = 100
TWINS = [pytest.param((ReliableSender, ReliableReceiver), id="python"),
         pytest.param((native.ReliableSender, native.ReliableReceiver), id="native")]


def _data(src, chunk, count=8, tensor_id=1, now=0, trimmed=False):
    h = DlcpHeader(PacketType.DATA, Flags.TRIMMED if trimmed else Flags(0), 7, 0, 0, src, 0, CS, 0, tensor_id,
                   chunk, count, chunk * CS, now)
    return h, b"" if trimmed else bytes(CS)


def _pulls(out):
    """(to whom, pull number) of the PULLs among a receiver's packets."""
    return [(h.dst_rank, pull_number(p)) for h, p in out if h.type == PacketType.ACK and p[12] & fb.FB_PULL]


@pytest.mark.parametrize("twin", TWINS)
def test_the_receiver_releases_one_pull_a_gap_round_robin(twin):
    """Sender 1 sends 4 packets, then sender 2 two, all at once: the first rides on its ACK at
    once, the other five leave one a gap, taking turns (FIFO would give 1, 1, 1, 2, 2)."""
    r = twin[1](0, pull_gap_ns=GAP)
    for src, chunk in [(1, 0), (1, 1), (1, 2), (1, 3), (2, 0), (2, 1)]:
        r.receive(*_data(src, chunk), 0)
    acks = r.poll(0)
    assert [(h.dst_rank, pull_number(p)) for h, p in acks] == [(1, 1)] * 4 + [(2, 0)] * 2
    assert not _pulls(acks)
    released = []
    for t in range(GAP, 6 * GAP, GAP):
        assert r.next_timeout() == t
        assert r.poll(t - 1) == []
        released += _pulls(r.poll(t))
    assert released == [(1, 2), (2, 1), (1, 3), (2, 2), (1, 4)]
    assert r.next_timeout() is None


@pytest.mark.parametrize("twin", TWINS)
def test_a_trimmed_header_asks_for_a_pull_and_its_nack_carries_the_number(twin):
    r = twin[1](0, pull_gap_ns=GAP)
    r.receive(*_data(1, 0), 0)
    r.receive(*_data(1, 1, trimmed=True), 500)     # a gap later: released at once
    (_, ack), (nh, nack) = r.poll(500)
    assert (pull_number(ack), nh.type, pull_number(nack)) == (1, PacketType.BITMAP, 2)
    assert nack[12] & fb.FB_NACK


@pytest.mark.parametrize("twin", TWINS)
def test_a_sender_with_nothing_under_way_is_pulled_no_more(twin):
    """Its 2-chunk tensor complete, sender 1's waiting request is dropped; sender 2's, with a
    tensor still under way, stays."""
    r = twin[1](0, pull_gap_ns=GAP)
    r.receive(*_data(1, 0, count=2), 0)
    r.receive(*_data(2, 0, count=2), 0)
    r.receive(*_data(1, 1, count=2), 0)
    r.poll(0)
    assert [d.src_rank for d in r.take_delivered()] == [1]
    assert r.next_timeout() == GAP
    assert _pulls(r.poll(GAP)) == [(2, 1)]
    assert r.next_timeout() is None


@pytest.mark.parametrize("twin", TWINS)
def test_a_receiver_that_paces_none_leaves_the_answers_as_they_were(twin):
    r = twin[1](0)
    r.receive(*_data(1, 0), 0)
    r.receive(*_data(1, 1), 0)
    assert [pull_number(p) for _, p in r.poll(0)] == [0, 0] and r.next_timeout() is None


def _ack(chunk, echo, pull, count=10, flags=0):
    p = fb.encode_ack(echo, 0, flags, (), pull)
    return DlcpHeader(PacketType.ACK, Flags(0), 0, 7, 0, 1, 0, len(p), 0, 1, chunk, count, 0, 0), p


@pytest.mark.parametrize("twin", TWINS)
def test_the_sender_sends_its_first_window_then_one_packet_a_pull(twin):
    s = twin[0](0, 1, cc=CongestionControl(initial_window=4, pulls=True))
    s.send(Message(tensor(10 * CS // 4), tensor_id=1, src_rank=0, dst_rank=1, mag_class=7), 0)   # one lane
    first = s.poll(0)
    assert [h.chunk_index for h, _ in first] == [0, 1, 2, 3] and s.poll(1) == []
    s.receive(*_ack(0, 0, pull=0), 1000)           # an ACK that releases no pull
    assert s.poll(1000) == []
    s.receive(*_ack(0, 0, pull=2, flags=fb.FB_PULL), 1100)    # a PULL worth two
    assert [h.chunk_index for h, _ in s.poll(1100)] == [4, 5]
    s.receive(*_ack(0, 0, pull=1, flags=fb.FB_PULL), 1200)    # an older number: nothing
    assert s.poll(1200) == []
    # A NACK for chunk 2 (trimmed), carrying pull 3: its resend goes first.
    nack = fb.encode_nack(first[2][0].send_ts_ns, 0, 2, pull=3)
    s.receive(DlcpHeader(PacketType.BITMAP, Flags(0), 0, 7, 0, 1, 0, len(nack), 0, 1, 2, 10, 0, 0), nack, 1300)
    (h, _), = s.poll(1300)
    assert (h.chunk_index, bool(h.flags & Flags.RETRANSMISSION)) == (2, True)


@pytest.mark.parametrize("twin", TWINS)
def test_the_sender_reads_nothing_from_reordering(twin):
    """Chunks 1 and 3 answered, 0 and 2 not: with a window RACK would resend them a reordering
    window later; under pulls nothing is resent and no tail-loss probe is armed (the RTO is all
    that is left)."""
    s = twin[0](0, 1, cc=CongestionControl(initial_window=4, pulls=True))
    s.send(Message(tensor(10 * CS // 4), tensor_id=1, src_rank=0, dst_rank=1, mag_class=7), 0)   # one lane
    s.poll(0)
    s.receive(*_ack(1, 0, pull=0), 10_000)
    s.receive(*_ack(3, 0, pull=0), 10_000)
    rto = s.next_timeout()
    assert rto == 10_000 + s.rtt.rto_ns
    assert s.poll(rto - 1) == [] and s.losses == 0 and s.tail_probes == 0


def test_ndp_is_a_congestion_setting_that_needs_a_trimming_switch():
    ndp = TransportSettings(congestion="ndp", initial_window=35)
    assert ndp.cc().pulls and not TransportSettings().cc().pulls
    assert ndp.pull_gap_ns(100e9) == pull_gap_ns(100e9, 1500) == 124   # 1538 bytes at 99 Gbit/s
    assert TransportSettings().pull_gap_ns(100e9) is None
    with pytest.raises(ValueError, match="congestion ndp: a receiver paces pulls at its link's rate"):
        ndp.pull_gap_ns(None)
    with pytest.raises(ValueError, match="congestion must be one of newreno, dctcp, ndp, got 'ndpp'"):
        TransportSettings(congestion="ndpp")
    spec = parse_spec({**GOOD, "transport": {"congestion": "ndp"}, "switch": {"preset": "ndp"}})
    assert spec.transport["congestion"] == "ndp"
    with pytest.raises(SpecError, match="transport.congestion: ndp's pulls are asked by every packet that "
                                        "arrives, whole or trimmed, and the switch's queue manager 'dlcp' drops"):
        parse_spec({**GOOD, "transport": {"congestion": "ndp"}})
    with pytest.raises(ValueError, match="pull_gap_ns must be a positive integer of ns, got 0"):
        native.ReliableReceiver(0, pull_gap_ns=0)


@pytest.mark.parametrize("twin", TWINS)
def test_a_paced_sender_without_pulls_left_waits_for_one(twin):
    """Pacing on as well: with no pull to send on, the pacing clock is no reason to poll again
    (it had asked for a poll at a time already past, again and again)."""
    s = twin[0](0, 1, cc=CongestionControl(initial_window=2, pulls=True, pacing=True))
    s.send(Message(tensor(10 * CS // 4), tensor_id=1, src_rank=0, dst_rank=1, mag_class=7), 0)
    assert len(s.poll(0)) == 2
    s.receive(*_ack(0, 0, pull=0), 10_000)
    assert s.poll(10_000) == [] and s.next_timeout() == 10_000 + s.rtt.rto_ns
