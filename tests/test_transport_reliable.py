"""The `reliable` transport over a seeded lossy channel in virtual time: every byte arrives.
Each test runs the Python endpoints and the native ones (`impl`)."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlcp_emu.transport import (
    CongestionControl,
    MagnitudePolicy,
    Message,
    chunk_magnitudes,
    chunk_payload_size,
)
from dlcp_emu.transport import feedback as fb
from transport_channel import LossyChannel, run_pair
from dlcp_emu.wire import Flags, PacketType
from transport_helpers import Recorder, run_transfer, tensor
from transport_twins import IMPLS, endpoints

DATA, ACK, BITMAP = PacketType.DATA, PacketType.ACK, PacketType.BITMAP


def transfer(msgs, fwd=None, back=None, mtu=1500, max_events=200_000, impl="python", **kw):
    S, R = endpoints(impl, "reliable")
    return run_transfer(S(0, 1, mtu=mtu, **kw), R(1, mtu=mtu), msgs, fwd, back, max_events)


each_impl = pytest.mark.parametrize("impl", IMPLS)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**31), loss=st.floats(0, 0.2), dup=st.floats(0, 0.2),
       reorder=st.floats(0, 0.3), trim=st.sampled_from([0, 0, 0.05]), ecn=st.sampled_from([0, 0.05]),
       sizes=st.lists(st.integers(1, 150_000), min_size=1, max_size=3),
       mtu=st.sampled_from([1500, 9000, 300]))
@each_impl
def test_every_byte_arrives_exactly_under_impairments(seed, loss, dup, reorder, trim, ecn, sizes, mtu, impl):
    msgs = [Message(tensor(n, seed + i), iteration=7, tensor_id=i, priority=i % 8,
                    src_rank=0, dst_rank=1) for i, n in enumerate(sizes)]
    chan = dict(loss=loss, duplicate=dup, reorder=reorder, jitter_ns=3_000, trim=trim, ecn=ecn)
    s, r, rec, stats = transfer(msgs, LossyChannel(seed=seed, **chan),
                                LossyChannel(seed=seed + 1, **chan), mtu=mtu, impl=impl)
    got = {d.tensor_id: d for d in r.take_delivered()}
    assert sorted(got) == list(range(len(msgs)))
    for m in msgs:
        d = got[m.tensor_id]
        assert np.array_equal(d.data, m.data)
        assert d.lost_bytes == 0 and d.lost_ranges == [] and len(d.lost_chunks) == 0
    assert s.pending == 0 and r.pending == 0 and s.inflight == 0
    done = s.take_completed()
    assert sorted(x.tensor_id for x in done) == list(range(len(msgs)))


@each_impl
def test_header_fields_as_promised(impl):
    data = tensor(100_000)
    cs = chunk_payload_size()
    msg = Message(data, iteration=3, tensor_id=9, priority=2, job=5, src_rank=0, dst_rank=1)
    S, R = endpoints(impl, "reliable")
    s, r = S(0, 1, job=5), R(1)
    s.send(msg, 0)
    rec = Recorder()
    run_pair(s, r, LossyChannel(seed=3, loss=0.1, reorder=0.2),
             LossyChannel(seed=4, loss=0.1), on_packet=rec)
    assert np.array_equal(r.take_delivered()[0].data, data)
    want_cls = MagnitudePolicy().plan(chunk_magnitudes(data, cs), data.nbytes, cs).mag_class
    count = -(-data.nbytes // cs)
    sent = set()
    retx = 0
    for now, h, p in rec.of(DATA):
        c = h.chunk_index
        assert (h.priority, h.job, h.src_rank, h.dst_rank, h.iteration, h.tensor_id) == (2, 5, 0, 1, 3, 9)
        assert h.mag_class == want_cls[c]
        assert h.send_ts_ns == now
        assert (h.chunk_count, h.offset, h.payload_len) == (count, c * cs, len(p))
        assert p == data.tobytes()[c * cs:(c + 1) * cs]
        assert not h.flags & Flags.DROPPABLE  # reliable never lets a chunk go
        assert bool(h.flags & Flags.LAST_CHUNK) == (c == count - 1)
        assert bool(h.flags & Flags.RETRANSMISSION) == (c in sent)
        retx += c in sent
        sent.add(c)
    assert retx > 0 and sent == set(range(count))
    acks = rec.of(ACK)
    assert acks and all(h.priority == 0 and h.src_rank == 1 and h.dst_rank == 0 for _, h, _ in acks)


@each_impl
def test_trimmed_packet_is_nacked_and_resent_at_once(impl):
    data = tensor(20_000)
    trimmed_once = set()

    def trim_chunk_5(h):
        if h.type == DATA and h.chunk_index == 5 and 5 not in trimmed_once:
            trimmed_once.add(5)
            return True
        return False

    s, r, rec, _ = transfer([Message(data, src_rank=0, dst_rank=1)],
                            LossyChannel(seed=1, trim_if=trim_chunk_5), impl=impl)
    assert np.array_equal(r.take_delivered()[0].data, data)
    nacks = [(t, h, p) for t, h, p in rec.of(BITMAP) if fb.decode_bitmap(p)[2] & fb.FB_NACK]
    assert len(nacks) == 1 and nacks[0][1].chunk_index == 5
    resent = [t for t, h, _ in rec.of(DATA) if h.chunk_index == 5 and h.flags & Flags.RETRANSMISSION]
    assert len(resent) == 1
    assert resent[0] - nacks[0][0] <= 25_000  # one channel delay later, not an RTO
    assert s.timeouts == 0 and s.cc.reductions == 1  # a trim is a congestion signal


@each_impl
def test_ack_blackout_recovers_by_timeout(impl):
    data = tensor(50_000)
    back = LossyChannel(seed=2, drop=lambda h: h.send_ts_ns < 3_000_000)  # no ACK for 3 ms
    s, r, _, stats = transfer([Message(data, src_rank=0, dst_rank=1)], back=back, impl=impl)
    assert np.array_equal(r.take_delivered()[0].data, data)
    assert s.timeouts >= 1 and stats.end_ns > 3_000_000


@each_impl
def test_higher_priority_tensor_goes_first(impl):
    low = Message(tensor(50_000, 1), tensor_id=40, priority=7, src_rank=0, dst_rank=1)
    high = Message(tensor(50_000, 2), tensor_id=0, priority=0, src_rank=0, dst_rank=1)
    s, r, rec, _ = transfer([low, high], impl=impl)
    first_tx = [h.tensor_id for _, h, _ in rec.of(DATA)]
    n_high = first_tx.count(0)
    assert set(first_tx[:n_high]) == {0}  # all of the urgent tensor before any of the other
    done = [x.tensor_id for x in s.take_completed()]
    assert done == [0, 40]


@each_impl
def test_ecn_marks_shrink_the_window_but_lose_nothing(impl):
    data = tensor(200_000)
    s, r, _, _ = transfer([Message(data, src_rank=0, dst_rank=1)], LossyChannel(seed=5, ecn=0.2),
                          cc=CongestionControl(ecn="halve"), impl=impl)
    assert np.array_equal(r.take_delivered()[0].data, data)
    assert s.cc.reductions > 3 and s.losses == 0


@each_impl
def test_pacing_spaces_packets(impl):
    data = tensor(200_000)
    s, r, rec, _ = transfer([Message(data, src_rank=0, dst_rank=1)], cc=CongestionControl(pacing=True), impl=impl)
    assert np.array_equal(r.take_delivered()[0].data, data)
    times = [t for t, _, _ in rec.of(DATA)]
    later = np.diff(times[20:])  # once an RTT is known, no two packets leave at once
    assert (later > 0).all()


@each_impl
def test_bad_messages_are_refused(impl):
    s = endpoints(impl, "reliable")[0](0, 1)
    s.send(Message(tensor(10), tensor_id=1, src_rank=0, dst_rank=1), 0)
    with pytest.raises(ValueError):
        s.send(Message(tensor(10), tensor_id=1, src_rank=0, dst_rank=1), 0)  # same tensor twice
    with pytest.raises(ValueError):
        s.send(Message(tensor(10), tensor_id=2, src_rank=0, dst_rank=2), 0)  # other peer
    with pytest.raises(TypeError):
        s.send(Message(np.zeros(10), tensor_id=3, src_rank=0, dst_rank=1), 0)  # float64
    with pytest.raises(ValueError):
        s.send(Message(tensor(0), tensor_id=4, src_rank=0, dst_rank=1), 0)  # empty
    with pytest.raises(ValueError):
        s.send(Message(tensor(10), tensor_id=5, priority=8, src_rank=0, dst_rank=1), 0)


@each_impl
def test_late_duplicates_after_completion_are_answered_not_redelivered(impl):
    data = tensor(5_000)
    s, r, rec, _ = transfer([Message(data, src_rank=0, dst_rank=1)], impl=impl)
    assert len(r.take_delivered()) == 1
    _, h, p = rec.of(DATA)[0]
    r.receive(h, p, 10**9)  # a copy that wandered in the network
    (ah, ap), = r.poll(10**9)
    assert ah.type == ACK and fb.decode_ack(ap)[2] & fb.FB_COMPLETE
    assert r.take_delivered() == [] and r.pending == 0


@each_impl
def test_reordering_across_magnitude_lanes_is_not_loss(impl):
    # A switch that serves large gradients first holds small ones back for 300 us (far more
    # than the 40 us RTT): loss detection must not take that for loss.
    data = tensor(300_000)
    fwd = LossyChannel(seed=1, extra_delay=lambda h: 300_000 if h.mag_class < 4 else 0)
    s, r, rec, _ = transfer([Message(data, src_rank=0, dst_rank=1)], fwd, impl=impl)
    assert np.array_equal(r.take_delivered()[0].data, data)
    assert s.losses == 0 and s.timeouts == 0
    assert not [h for _, h, _ in rec.of(DATA) if h.flags & Flags.RETRANSMISSION]


@pytest.mark.parametrize("kind", ["reliable", "dlcp"])
def test_a_sender_keeps_nothing_of_a_finished_message(kind):
    """A long run sends message after message: once the sender knows one complete, nothing
    of it stays (its loss-detection lanes kept every one-chunk message, answered by the
    completion alone, and all sent behind it: a soak's agents grew by megabytes a minute)."""
    from dlcp_emu.transport.outbound import _Outbound
    sender, receiver = endpoints("python", kind)   # the Python objects; the core frees its own
    msgs = [Message(tensor(n, seed=i), tensor_id=i, priority=i % 8, src_rank=0, dst_rank=1)
            for i, n in enumerate([10, 10, 3000, 10, 20_000] * 40)]
    s, r, _, _ = run_transfer(sender(0, 1), receiver(1), msgs)
    assert len(r.take_delivered()) == len(msgs) and s.pending == 0
    gc.collect()
    assert sum(isinstance(o, _Outbound) for o in gc.get_objects()) == 0
