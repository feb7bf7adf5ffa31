"""The native transport endpoints against the Python ones: the same messages over the same
seeded impairments (loss, trims, CE marks, duplicates, reordering, a rate-limited queue),
and at every call identical packets (every header field, payload bytes), identical
`next_timeout()`, counters, congestion window and RTT estimator, identical completions and
deliveries (data, lost chunks and bytes by class). The Python endpoints are the oracle.

How: `transport_twins.Twin` gives every call to both and compares the answers; the channel
carries the Python endpoint's packets, so both receivers see the same input.
"""
import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dlcp_emu.transport import CongestionControl, MagnitudePolicy, Message, RttEstimator
from dlcp_emu.transport import chunk_magnitudes, chunk_payload_size
from dlcp_emu.transport import feedback as fb
from dlcp_emu.transport import native
from dlcp_emu.transport import sender as py_sender
from dlcp_emu.wire import DlcpHeader, Flags, PacketType
from transport_channel import ChannelStuck, LossyChannel, run_pair
from transport_helpers import tensor
from transport_twins import Twin, endpoints

MTUS = (1500, 9000, 300, 576)


@st.composite
def channels(draw, forward=True):
    rate = draw(st.sampled_from([None, None, 1e9, 10e9]))
    return dict(
        seed=draw(st.integers(0, 2**31)),
        loss=draw(st.sampled_from([0, 0, 0.01, 0.05]) | st.floats(0, 0.2)),
        trim=draw(st.sampled_from([0, 0, 0.05, 0.2])) if forward else 0,
        ecn=draw(st.sampled_from([0, 0, 0.05, 0.3])),
        duplicate=draw(st.sampled_from([0, 0, 0.05]) | st.floats(0, 0.1)),
        reorder=draw(st.sampled_from([0, 0, 0.1]) | st.floats(0, 0.3)),
        jitter_ns=draw(st.sampled_from([0, 3_000])),
        delay_ns=draw(st.sampled_from([20_000, 5_000, 200_000])),
        rate_bps=rate,
        queue_packets=draw(st.sampled_from([1 << 30, 64, 16])) if rate else 1 << 30,
    )


@st.composite
def scenarios(draw, max_values=40_000, max_messages=6):
    transport = draw(st.sampled_from(["reliable", "dlcp"]))
    mtu = draw(st.sampled_from(MTUS))
    policy = MagnitudePolicy(
        droppable_fraction=draw(st.sampled_from([0.5, 0.1, 1.0, 0.0]) | st.floats(0, 1)),
        loss_bound=draw(st.sampled_from([0.01, 0.05, 0.2, 0.0]) | st.floats(0, 0.5)),
        drop_order=draw(st.sampled_from(["magnitude", "magnitude", "random"])),
        seed=draw(st.integers(0, 2**16)))
    n = draw(st.integers(1, max_messages))
    messages = []
    for i in range(n):
        size = draw(st.sampled_from([1, 356, 357, 2231]) | st.integers(1, max_values))
        explicit = draw(st.sampled_from([None, None, None, "exact", "all-droppable"]))
        messages.append(dict(
            values=size, seed=draw(st.integers(0, 2**16)), priority=draw(st.integers(0, 7)),
            at=draw(st.sampled_from([0, 0]) | st.integers(0, 3_000_000)),
            iteration=draw(st.integers(0, 3)), tensor_id=i * 7 + draw(st.integers(0, 6)),
            explicit=explicit))
    pull_gap_ns = draw(st.sampled_from([None, None, None, 124, 1_000, 20_000]))   # NDP's pulls
    cc = dict(ecn=draw(st.sampled_from(["dctcp", "halve", "dctcp-every-window"])), pacing=draw(st.booleans()),
              initial_window=draw(st.sampled_from([10, 10, 1, 4, 64])), pulls=pull_gap_ns is not None)
    return dict(transport=transport, mtu=mtu, policy=policy, messages=messages, cc=cc, pull_gap_ns=pull_gap_ns,
                rtt=draw(st.sampled_from(["default", "default", "link", "tight"])),
                reorder_fraction=draw(st.sampled_from([0.25, 0.25, 0.1, 0.3, 0.0])),
                remember=draw(st.sampled_from([4096, 4096, 1])),
                fwd=draw(channels()), back=draw(channels(forward=False)))


def _message(m, mtu):
    data = tensor(m["values"], m["seed"])
    count = -(-data.nbytes // chunk_payload_size(mtu))
    extra = {}
    if m["explicit"] == "exact":
        extra = dict(mag_class=7, droppable=False)
    elif m["explicit"] == "all-droppable":
        extra = dict(droppable=np.ones(count, bool), mag_class=np.arange(count) % 8)
    return Message(data, iteration=m["iteration"], tensor_id=m["tensor_id"], priority=m["priority"],
                   src_rank=0, dst_rank=1, **extra)


def _rtt(kind, mtu):
    if kind == "link":
        return RttEstimator.for_link(1e9, mtu)
    if kind == "tight":  # RTOs that fire during the transfer
        return RttEstimator(initial_rto_ns=200_000, min_rto_ns=50_000, granularity_ns=10_000)
    return RttEstimator()


def run_twins(sc, payload_free=False, max_events=400_000, stalled=None):
    """Both pairs over the scenario; returns the twins (their results are the Python ones).
    stalled: a function of (the ChannelStuck, the twins) that checks a stall and returns
    normally if it is allowed; without it a stall raises."""
    S_py, R_py = endpoints("python", sc["transport"])
    S_nat, R_nat = endpoints("native", sc["transport"])
    mtu = sc["mtu"]

    def sender(cls):
        return cls(0, 1, mtu=mtu, cc=CongestionControl(**sc["cc"]), rtt=_rtt(sc["rtt"], mtu),
                   policy=sc["policy"], reorder_fraction=sc["reorder_fraction"])

    s = Twin(sender(S_py), sender(S_nat), "sender", payload_free=payload_free)
    gap = sc.get("pull_gap_ns")
    r = Twin(R_py(1, mtu=mtu, remember=sc["remember"], pull_gap_ns=gap),
             R_nat(1, mtu=mtu, remember=sc["remember"], store=not payload_free, pull_gap_ns=gap), "receiver",
             payload_free=payload_free)
    sends = sorted(((m["at"], _message(m, mtu)) for m in sc["messages"]), key=lambda x: x[0])
    try:
        run_pair(s, r, LossyChannel(**sc["fwd"]), LossyChannel(**sc["back"]), sends=sends,
                 max_events=max_events)
    except ChannelStuck as stuck:
        if stalled is None:
            raise
        stalled(stuck, s, r)
    return s, r


def check_outcome(sc, s, r):
    keys = sorted((m["iteration"], m["tensor_id"]) for m in sc["messages"])
    assert sorted((x.iteration, x.tensor_id) for x in s.results) == keys
    assert {(d.iteration, d.tensor_id) for d in r.results} == set(keys)
    assert s.calls > 0 and r.calls > 0


def check_stranded(sc, stuck, s, r):
    """A stall allowed only where a receiver remembers fewer completed tensors than there are
    messages: it forgets a tensor whose last ACK was lost and takes its retransmission for a
    new one, which strands the sender. Then every tensor the sender still holds is one the
    receiver delivered, and both twins stall alike: the same state, counters and timers."""
    if sc["remember"] >= len(sc["messages"]):
        raise stuck
    s.check("the stall")
    r.check("the stall")
    keys = {(m["iteration"], m["tensor_id"]) for m in sc["messages"]}
    stranded = keys - {(x.iteration, x.tensor_id) for x in s.results}
    delivered = {(d.iteration, d.tensor_id) for d in r.results}
    assert stranded and s.py.pending == s.nat.pending == len(stranded), (stranded, s.py.pending)
    assert stranded <= delivered, f"{stuck}: stalled on {sorted(stranded - delivered)}, never delivered"


def run_and_check(sc, max_events=400_000):
    """The twins answer alike at every call (Twin checks each), and every message arrives,
    or the run stalls as `check_stranded` allows. Returns the twins and whether they stalled."""
    stalls = []

    def stranded(stuck, s, r):
        check_stranded(sc, stuck, s, r)
        stalls.append(stuck)

    s, r = run_twins(sc, max_events=max_events, stalled=stranded)
    if not stalls:
        check_outcome(sc, s, r)
    return s, r, bool(stalls)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(sc=scenarios())
def test_native_endpoints_answer_as_the_python_ones(sc):
    run_and_check(sc)


@settings(max_examples=40, deadline=None)
@given(sc=scenarios(max_values=8_000, max_messages=3))
def test_native_endpoints_answer_as_the_python_ones_quick(sc):
    run_and_check(sc)


@settings(max_examples=30, deadline=None)
@given(sc=scenarios(max_values=20_000, max_messages=3))
def test_payload_free_endpoints_send_the_same_headers(sc):
    """Sizes only (no bytes sent, none kept): the same headers, timers and losses."""
    s, r = run_twins(sc, payload_free=True)
    check_outcome(sc, s, r)


def test_every_kind_of_packet_and_event_is_compared():
    """One lossy dlcp run with trims, marks, duplicates and timeouts: the twins compared DATA
    (new and resent), PROBE (several rounds), ACK, BITMAP and NACK, tail-loss probes were
    sent and RTOs fired."""
    sc = dict(transport="dlcp", mtu=1500, policy=MagnitudePolicy(loss_bound=0.05),
              messages=[dict(values=60_000, seed=i, priority=i % 8, at=i * 100_000, iteration=1,
                             tensor_id=i, explicit=None) for i in range(4)],
              cc=dict(ecn="dctcp", pacing=False, initial_window=10), rtt="tight",
              reorder_fraction=0.25, remember=4096,
              fwd=dict(seed=3, loss=0.1, trim=0.05, ecn=0.05, duplicate=0.05, reorder=0.1, jitter_ns=3_000),
              back=dict(seed=4, loss=0.1, duplicate=0.05))
    s, r = run_twins(sc)
    check_outcome(sc, s, r)
    seen = {h.type for h, _ in s.seen + r.seen}
    assert seen == set(PacketType)
    assert any(h.flags & 0x02 for h, _ in s.seen if h.type == PacketType.DATA)
    assert s.py.timeouts > 0 and s.py.losses > 0 and sum(d.lost_bytes for d in r.results) > 0
    assert s.py.tail_probes > 0


def test_missing_bytes_exactly_at_the_bound_complete():
    """100 chunks of 1424 bytes with a 1% bound: the one droppable chunk is the bound to the
    byte. Every droppable packet is lost; both pairs give it up and complete at once."""
    sc = dict(transport="dlcp", mtu=1500, policy=MagnitudePolicy(),
              messages=[dict(values=356 * 100, seed=1, priority=3, at=0, iteration=0, tensor_id=0,
                             explicit=None),
                        dict(values=356 * 300, seed=2, priority=3, at=0, iteration=0, tensor_id=1,
                             explicit=None)],
              cc=dict(ecn="dctcp", pacing=False, initial_window=10), rtt="default",
              reorder_fraction=0.25, remember=4096,
              fwd=dict(seed=1, drop=lambda h: h.type == PacketType.DATA and bool(h.flags & 0x01)),
              back=dict(seed=2))
    s, r = run_twins(sc)
    check_outcome(sc, s, r)
    assert [(d.lost_bytes, d.bound_bytes) for d in r.results] == [(1424, 1424), (3 * 1424, 3 * 1424)]
    assert s.py.timeouts == 0


def _stranding(remember):
    """Tensor 0 loses every droppable chunk; the receiver completes it at the sender's probe,
    and the BITMAP that says so is lost. Tensor 1 completes meanwhile: a receiver that
    remembers one tensor forgets tensor 0 and takes the sender's next probe for a new one."""
    lost = []

    def first_bitmap_of_tensor_0(h):
        if h.type == PacketType.BITMAP and h.tensor_id == 0 and not lost:
            lost.append(h)
            return True
        return False

    return dict(transport="dlcp", mtu=1500, policy=MagnitudePolicy(loss_bound=0.5),
                messages=[dict(values=356 * 20, seed=1, priority=3, at=0, iteration=0, tensor_id=0,
                               explicit=None),
                          dict(values=356 * 4, seed=2, priority=3, at=0, iteration=0, tensor_id=1,
                               explicit=None)],
                cc=dict(ecn="dctcp", pacing=False, initial_window=10), rtt="default",
                reorder_fraction=0.25, remember=remember,
                fwd=dict(seed=1, drop=lambda h: h.type == PacketType.DATA and h.tensor_id == 0
                         and bool(h.flags & Flags.DROPPABLE)),
                back=dict(seed=2, drop=first_bitmap_of_tensor_0))


def test_a_receiver_that_forgets_strands_both_senders_alike():
    """The stall `run_and_check` allows, made on purpose: with remember=1 both twins stall
    on tensor 0, which the receiver delivered (`check_stranded`); remembering both tensors,
    the same run completes."""
    s, r, stalled = run_and_check(_stranding(remember=1), max_events=3_000)
    assert stalled and [x.tensor_id for x in s.results] == [1]
    assert sorted(d.tensor_id for d in r.results) == [0, 1]
    assert not run_and_check(_stranding(remember=2), max_events=3_000)[2]


def _feedback(ptype, tensor_id, payload, now):
    return DlcpHeader(ptype, Flags(0), 0, 7, 0, 1, 0, len(payload), 0, tensor_id, 0, 1, 0, now), payload


def test_rack_takes_a_later_send_time_as_evidence():
    """RACK's time criterion, which only a late original copy exercises: Y (tensor 1) is sent
    at 0, X (tensor 2, same lane) at 50 us; X is NACKed and resent, then X's original copy
    turns out to have arrived. That copy's send time (50 us) says Y, sent before it and a
    reordering window overdue, is lost, although no later sequence number was acknowledged."""
    s = Twin(py_sender.ReliableSender(0, 1), native.ReliableSender(0, 1), "sender")
    for t, tensor_id in ((0, 1), (50_000, 2)):
        s.send(Message(tensor(100, tensor_id), tensor_id=tensor_id, priority=3, mag_class=7,
                       src_rank=0, dst_rank=1), t)
        (h, _), = s.poll(t)
        assert (h.tensor_id, h.send_ts_ns) == (tensor_id, t)
    s.receive(*_feedback(PacketType.BITMAP, 2, fb.encode_nack(50_000, 0, 0), 80_000), 80_000)
    (h, _), = s.poll(80_000)
    assert h.tensor_id == 2 and h.flags & Flags.RETRANSMISSION and s.py.losses == 1
    s.receive(*_feedback(PacketType.ACK, 2, fb.encode_ack(50_000, 1, 0, ()), 100_000), 100_000)
    assert s.py.spurious == 1 and s.py.losses == 2 and [x.tensor_id for x in s.results] == [2]
    (h, _), = s.poll(100_000)
    assert (h.tensor_id, bool(h.flags & Flags.RETRANSMISSION)) == (1, True)


def test_bad_messages_are_refused_alike():
    for impl in ("python", "native"):
        S, _ = endpoints(impl, "dlcp")
        s = S(0, 1)
        s.send(Message(tensor(10), tensor_id=1, src_rank=0, dst_rank=1), 0)
        for msg, error, text in [
                (Message(tensor(10), tensor_id=1, src_rank=0, dst_rank=1), ValueError, "already being sent"),
                (Message(tensor(10), tensor_id=2, src_rank=0, dst_rank=2), ValueError, "this sender"),
                (Message(np.zeros(10), tensor_id=3, src_rank=0, dst_rank=1), TypeError, "float32"),
                (Message(tensor(0), tensor_id=4, src_rank=0, dst_rank=1), ValueError, "1 byte"),
                (Message(tensor(10), tensor_id=5, priority=8, src_rank=0, dst_rank=1), ValueError, "priority"),
                (Message(tensor(10), tensor_id=6, src_rank=0, dst_rank=1, mag_class=9), ValueError, "mag_class")]:
            with pytest.raises(error, match=text):
                s.send(msg, 0)
    with pytest.raises(ValueError, match="payload-free message .* is for the native senders"):
        endpoints("python", "dlcp")[0](0, 1).send(Message(None, src_rank=0, dst_rank=1), 0)
    s = native.DlcpSender(0, 1)
    with pytest.raises(ValueError, match="iteration must be in 0..4294967295"):
        s.send(Message(tensor(10), iteration=2**32, src_rank=0, dst_rank=1), 0)
    with pytest.raises(ValueError, match="payload-free message needs chunk_magnitudes"):
        s.send(Message(None, src_rank=0, dst_rank=1), 0, nbytes=400)
    with pytest.raises(ValueError, match="needs nbytes"):
        s.send(Message(None, src_rank=0, dst_rank=1, mag_class=1, droppable=False), 0)
    with pytest.raises(ValueError, match="fresh CongestionControl"):
        cc = CongestionControl()
        cc.on_send()
        native.ReliableSender(0, 1, cc=cc)
    with pytest.raises(ValueError, match="src_rank must be in 0..65535"):
        native.ReliableSender(70_000, 1)
    with pytest.raises(ValueError, match="mtu 100 is too small"):
        native.DlcpReceiver(1, mtu=100)


def test_sender_keeps_the_callers_array_without_a_copy():
    data = tensor(10_000)
    s, r = native.ReliableSender(0, 1), native.ReliableReceiver(1)
    s.send(Message(data, src_rank=0, dst_rank=1), 0)
    (h, p), *_ = s.poll(0)
    assert isinstance(p, memoryview) and np.shares_memory(np.frombuffer(p, np.uint8), data)
    run_pair(s, r, LossyChannel(seed=1, loss=0.1), LossyChannel(seed=2))
    d, = r.take_delivered()
    assert np.array_equal(d.data, data) and d.data.flags.owndata is False  # the receiver's buffer
    assert d.data.flags.writeable  # as the Python receiver's


def test_chunk_magnitudes_given_or_measured_plan_alike():
    data = tensor(30_000, 5)
    mags = chunk_magnitudes(data, chunk_payload_size())
    for given_mags in (None, mags):
        sc_msg = Message(data, src_rank=0, dst_rank=1, chunk_magnitudes=given_mags)
        a, b = endpoints("python", "dlcp")[0](0, 1), native.DlcpSender(0, 1)
        a.send(sc_msg, 0)
        b.send(dataclasses.replace(sc_msg), 0)
        pa, pb = a.poll(0), b.poll(0)
        assert [native.fields(h) for h, _ in pa] == [native.fields(h) for h, _ in pb]


CC_OPS = st.lists(st.one_of(
    st.tuples(st.just("send"), st.integers(1, 20)),
    st.tuples(st.just("ack"), st.integers(1, 60), st.booleans(), st.integers(0, 4)),  # seq back from next
    st.tuples(st.just("ack"), st.just(None), st.booleans(), st.integers(0, 4)),       # seq unknown (-1)
    st.tuples(st.just("loss"), st.integers(1, 60)),
    st.tuples(st.just("timeout"))), max_size=300)


@settings(max_examples=300, deadline=None)
@given(ops=CC_OPS, initial=st.sampled_from([10, 1, 2, 64]) | st.floats(1, 100),
       ecn=st.sampled_from(["dctcp", "halve", "dctcp-every-window"]), g=st.sampled_from([1 / 16, 0.3]) | st.floats(0, 1),
       max_window=st.sampled_from([1 << 20, 100]), srtt=st.none() | st.floats(0, 1e7))
def test_congestion_control_is_the_python_one_to_the_bit(ops, initial, ecn, g, max_window, srtt):
    kw = dict(initial_window=initial, ecn=ecn, dctcp_g=g, max_window=max(max_window, initial), pacing=True)
    a, b = CongestionControl(**kw), native.CongestionControl(**kw)
    for op in ops:
        for cc in (a, b):
            if op[0] == "send":
                for _ in range(op[1]):
                    cc.on_send()
            elif op[0] == "ack":
                cc.on_ack(-1 if op[1] is None else cc.next_seq - op[1], op[2], op[3])
            elif op[0] == "loss":
                cc.on_loss(cc.next_seq - op[1])
            else:
                cc.on_timeout()
        assert ((a.cwnd, a.ssthresh, a.alpha, a.next_seq, a.reductions, a.timeouts, a._recover,
                 a._alpha_end, a.pacing_gap_ns(srtt))
                == (b.cwnd, b.ssthresh, b.alpha, b.next_seq, b.reductions, b.timeouts, b.recover,
                    b.alpha_end, b.pacing_gap_ns(srtt))), op


@settings(max_examples=300, deadline=None)
@given(samples=st.lists(st.integers(-5, 10**10) | st.just("backoff"), max_size=80),
       settings_=st.sampled_from([{}, dict(initial_rto_ns=50_000, min_rto_ns=1, max_rto_ns=10**12,
                                          granularity_ns=1), dict(min_rto_ns=3, granularity_ns=7)]))
def test_rtt_estimator_is_the_python_one_to_the_bit(samples, settings_):
    a, b = RttEstimator(**settings_), native.RttEstimator(**settings_)
    for s in samples:
        for r in (a, b):
            r.backoff() if s == "backoff" else r.sample(s)
        assert (a.srtt_ns, a.rttvar_ns, a.min_rtt_ns, a.rto_ns) == (b.srtt_ns, b.rttvar_ns, b.min_rtt_ns, b.rto_ns)

