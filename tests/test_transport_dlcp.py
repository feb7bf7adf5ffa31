"""The `dlcp` bounded-loss transport over a seeded lossy channel in virtual time. Each test
runs the Python endpoints and the native ones (`impl`)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workloads
from dlcp_emu.transport import (
    MagnitudePolicy,
    Message,
    chunk_magnitudes,
    chunk_payload_size,
)
from dlcp_emu.transport import feedback as fb
from transport_channel import LossyChannel
from dlcp_emu.wire import Flags, PacketType
from transport_helpers import run_transfer, tensor
from transport_twins import IMPLS, endpoints

DATA, PROBE, ACK, BITMAP = PacketType.DATA, PacketType.PROBE, PacketType.ACK, PacketType.BITMAP


def transfer(msgs, fwd=None, back=None, mtu=1500, max_events=300_000, policy=None, impl="python", **kw):
    S, R = endpoints(impl, "dlcp")
    return run_transfer(S(0, 1, mtu=mtu, policy=policy, **kw), R(1, mtu=mtu), msgs, fwd, back, max_events)


each_impl = pytest.mark.parametrize("impl", IMPLS)


def check_delivery(d, msg, droppable, cs):
    """The delivered tensor is the original with exactly the accounted ranges zeroed; only
    droppable chunks are missing, within the bound."""
    sent = msg.data.view(np.uint8)
    got = d.data.view(np.uint8)
    assert got.shape == sent.shape
    want = sent.copy()
    zero = np.zeros(sent.size, bool)
    for a, b in d.lost_ranges:
        want[a:b] = 0
        zero[a:b] = True
    assert np.array_equal(got, want)
    assert d.lost_bytes == zero.sum() == sum(b - a for a, b in d.lost_ranges)
    lost = set(d.lost_chunks.tolist())
    assert lost == {i // cs for i in np.flatnonzero(zero)}
    assert all(droppable.get(c, False) for c in lost), "a non-droppable chunk went missing"
    assert d.lost_bytes <= d.bound_bytes
    if msg.droppable is None:  # 0 if it completed, nothing lost, before any probe arrived
        assert d.bound_bytes in (0, int(0.01 * sent.size))
    assert sum(d.lost_bytes_by_class.values()) == d.lost_bytes
    assert sum(d.lost_chunks_by_class.values()) == len(lost)
    assert -1 not in d.lost_bytes_by_class  # every lost chunk's class is known


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**31), loss=st.floats(0, 0.2), dup=st.floats(0, 0.2),
       reorder=st.floats(0, 0.3), trim=st.sampled_from([0, 0, 0.05, 0.2]),
       sizes=st.lists(st.integers(1, 150_000), min_size=1, max_size=3),
       mtu=st.sampled_from([1500, 9000, 300]))
@each_impl
def test_bounded_loss_under_impairments(seed, loss, dup, reorder, trim, sizes, mtu, impl):
    msgs = [Message(tensor(n, seed + i), iteration=2, tensor_id=i, priority=(3 * i) % 8,
                    src_rank=0, dst_rank=1) for i, n in enumerate(sizes)]
    chan = dict(loss=loss, duplicate=dup, reorder=reorder, jitter_ns=3_000)
    s, r, rec, _ = transfer(msgs, LossyChannel(seed=seed, trim=trim, **chan),
                            LossyChannel(seed=seed + 1, **chan), mtu=mtu, impl=impl)
    got = {d.tensor_id: d for d in r.take_delivered()}
    assert sorted(got) == list(range(len(msgs)))
    drop = rec.droppable()
    for m in msgs:
        check_delivery(got[m.tensor_id], m, drop[m.tensor_id], chunk_payload_size(mtu))
    assert s.pending == 0 and r.pending == 0 and s.inflight == 0


@each_impl
def test_header_fields_as_promised(impl):
    data = tensor(200_000)
    cs = chunk_payload_size()
    msg = Message(data, iteration=4, tensor_id=3, priority=5, src_rank=0, dst_rank=1)
    s, r, rec, _ = transfer([msg], LossyChannel(seed=7, loss=0.1), LossyChannel(seed=8, loss=0.1), impl=impl)
    check_delivery(r.take_delivered()[0], msg, rec.droppable()[3], cs)
    plan = MagnitudePolicy().plan(chunk_magnitudes(data, cs), data.nbytes, cs)
    assert sum(plan.droppable) > 0
    sent = set()
    for now, h, p in rec.of(DATA):
        c = h.chunk_index
        assert h.priority == 5 and h.send_ts_ns == now and h.mag_class == plan.mag_class[c]
        assert bool(h.flags & Flags.DROPPABLE) == bool(plan.droppable[c])
        assert bool(h.flags & Flags.RETRANSMISSION) == (c in sent)
        sent.add(c)
    # Droppable chunks are the smallest gradients, and none is ever retransmitted.
    mags = chunk_magnitudes(data, cs)
    drop = np.frombuffer(plan.droppable, np.uint8).astype(bool)
    assert mags[drop].max() <= mags[~drop].min()
    resent = {h.chunk_index for _, h, _ in rec.of(DATA) if h.flags & Flags.RETRANSMISSION}
    assert resent and not any(drop[c] for c in resent)
    # The first probe follows the last chunk's first transmission at once.
    first_probe = rec.of(PROBE)[0]
    last_chunk = next(t for t, h, _ in rec.of(DATA) if h.flags & Flags.LAST_CHUNK)
    assert first_probe[0] == last_chunk and first_probe[1].priority == 5
    assert not first_probe[1].flags & Flags.RETRANSMISSION


@each_impl
def test_lost_droppable_chunks_are_zero_filled_and_accounted_by_class(impl):
    data = tensor(300_000)
    cs = chunk_payload_size()
    plan = MagnitudePolicy().plan(chunk_magnitudes(data, cs), data.nbytes, cs)
    droppable = np.flatnonzero(np.frombuffer(plan.droppable, np.uint8))
    fwd = LossyChannel(seed=1, drop=lambda h: h.type == DATA and plan.droppable[h.chunk_index])
    s, r, rec, _ = transfer([Message(data, src_rank=0, dst_rank=1)], fwd, impl=impl)
    d, = r.take_delivered()
    assert sorted(d.lost_chunks.tolist()) == droppable.tolist()  # every droppable one lost
    assert d.lost_bytes == len(droppable) * cs <= d.bound_bytes
    want = {}
    for c in droppable:
        want[plan.mag_class[c]] = want.get(plan.mag_class[c], 0) + cs
    assert d.lost_bytes_by_class == want
    restored = data.copy()
    for c in droppable:
        restored.view(np.uint8)[c * cs:(c + 1) * cs] = 0
    assert np.array_equal(d.data, restored)
    assert not [h for _, h, _ in rec.of(DATA) if h.flags & Flags.RETRANSMISSION]


@each_impl
def test_trimmed_non_droppable_chunk_is_nacked_at_once(impl):
    data = tensor(50_000)
    cs = chunk_payload_size()
    plan = MagnitudePolicy().plan(chunk_magnitudes(data, cs), data.nbytes, cs)
    victim = next(c for c in range(5, 30) if not plan.droppable[c])
    done = []

    def trim_once(h):
        if h.type == DATA and h.chunk_index == victim and not done:
            done.append(1)
            return True
        return False

    s, r, rec, _ = transfer([Message(data, src_rank=0, dst_rank=1)], LossyChannel(seed=1, trim_if=trim_once), impl=impl)
    d, = r.take_delivered()
    assert np.array_equal(d.data, data) and d.trimmed == 1
    nack_t, nack_h, nack_p = next(x for x in rec.of(BITMAP) if fb.decode_bitmap(x[2])[2] & fb.FB_NACK)
    assert nack_h.chunk_index == victim
    resend = [t for t, h, _ in rec.of(DATA) if h.chunk_index == victim and h.flags & Flags.RETRANSMISSION]
    assert len(resend) == 1 and resend[0] - nack_t <= 25_000 and s.timeouts == 0


@each_impl
def test_trimmed_droppable_chunk_is_lost_with_its_class(impl):
    data = tensor(50_000)
    cs = chunk_payload_size()
    plan = MagnitudePolicy().plan(chunk_magnitudes(data, cs), data.nbytes, cs)
    victim = int(np.flatnonzero(np.frombuffer(plan.droppable, np.uint8))[0])
    fwd = LossyChannel(seed=1, trim_if=lambda h: h.type == DATA and h.chunk_index == victim)
    s, r, rec, _ = transfer([Message(data, src_rank=0, dst_rank=1)], fwd, impl=impl)
    d, = r.take_delivered()
    assert d.lost_chunks.tolist() == [victim]
    assert d.lost_bytes_by_class == {plan.mag_class[victim]: cs}
    assert not [h for _, h, _ in rec.of(DATA) if h.flags & Flags.RETRANSMISSION]
    assert s.timeouts == 0


@each_impl
def test_probe_and_bitmap_loss_are_recovered_by_timeout(impl):
    data = tensor(80_000)
    cs = chunk_payload_size()
    plan = MagnitudePolicy().plan(chunk_magnitudes(data, cs), data.nbytes, cs)
    probes_seen = []

    def drop_fwd(h):  # lose every droppable chunk and the first two probe rounds
        if h.type == PROBE:
            probes_seen.append(h.send_ts_ns)
            return len(set(probes_seen)) <= 2
        return h.type == DATA and bool(plan.droppable[h.chunk_index])

    back = LossyChannel(seed=2, drop=lambda h: h.type == BITMAP and h.send_ts_ns < 8_000_000)
    s, r, rec, stats = transfer([Message(data, src_rank=0, dst_rank=1)],
                                LossyChannel(seed=1, drop=drop_fwd), back, impl=impl)
    d, = r.take_delivered()
    assert d.lost_bytes > 0 and d.lost_bytes <= d.bound_bytes
    rounds = {h.send_ts_ns for _, h, _ in rec.of(PROBE)}
    assert len(rounds) >= 3 and s.timeouts >= 2
    assert all(h.flags & Flags.RETRANSMISSION for _, h, _ in rec.of(PROBE)[1:])


@each_impl
def test_multi_packet_probe_and_trimmed_probe(impl):
    # Every chunk droppable by an explicit mask, a 10% bound, small MTU: the droppable
    # list needs several probe packets; the first probe round is trimmed.
    data = tensor(30_000)
    cs = chunk_payload_size(300)
    n = -(-data.nbytes // cs)
    msg = Message(data, src_rank=0, dst_rank=1, droppable=np.ones(n, bool))
    first = []

    def trim_first_probe(h):
        if h.type == PROBE and (not first or first[0] == h.send_ts_ns):
            first[:] = [h.send_ts_ns]
            return True
        return False

    fwd = LossyChannel(seed=3, loss=0.3, trim_if=trim_first_probe)
    s, r, rec, _ = transfer([msg], fwd, mtu=300, policy=MagnitudePolicy(loss_bound=0.1), impl=impl)
    d, = r.take_delivered()
    assert len(rec.of(PROBE)) > 2 * len({h.send_ts_ns for _, h, _ in rec.of(PROBE)}) - 1
    assert 0 < d.lost_bytes <= d.bound_bytes == int(0.1 * data.nbytes)
    # Droppable beyond the bound: some droppable chunks had to be resent.
    assert any(h.flags & Flags.RETRANSMISSION and h.flags & Flags.DROPPABLE for _, h, _ in rec.of(DATA))
    check_delivery(d, msg, {c: True for c in range(n)}, cs)


@each_impl
def test_receiver_waits_while_more_than_the_bound_is_missing(impl):
    """Every chunk droppable (an explicit mask), 10% may be lost: nine chunks (12816 B, over
    the 12000 B bound) are lost just before the probe. The receiver must not complete with
    all nine missing; the sender gives up eight and resends the ninth."""
    data = tensor(30_000)                   # 120000 B: 84 chunks of 1424 B and one of 384 B
    cs, n = chunk_payload_size(), 85
    msg = Message(data, src_rank=0, dst_rank=1, droppable=np.ones(n, bool))
    victims, seen = set(range(n - 10, n - 1)), set()

    def first_copy_of_a_victim(h):
        if h.type == DATA and h.chunk_index in victims and h.chunk_index not in seen:
            seen.add(h.chunk_index)
            return True
        return False

    s, r, rec, _ = transfer([msg], LossyChannel(seed=1, drop=first_copy_of_a_victim),
                            policy=MagnitudePolicy(loss_bound=0.1), impl=impl)
    d, = r.take_delivered()
    assert d.bound_bytes == 12_000 and d.lost_bytes == 8 * cs
    assert set(d.lost_chunks.tolist()) < victims
    resent = [h.chunk_index for _, h, _ in rec.of(DATA) if h.flags & Flags.RETRANSMISSION]
    assert len(resent) == 1 and resent[0] in victims and resent[0] not in d.lost_chunks
    check_delivery(d, msg, {c: True for c in range(n)}, cs)


@each_impl
def test_trace_magnitudes_drive_classes(impl):
    trace = workloads.get_model("resnet50")
    layer = int(trace.layers.layer_id.iloc[-1])
    nbytes = int(trace.layers.grad_bytes.iloc[-1])
    cs = chunk_payload_size()
    mags = trace.chunk_magnitudes(layer, cs, np.random.default_rng(0))
    data = tensor(nbytes // 4)
    msg = Message(data, tensor_id=layer, priority=7, src_rank=0, dst_rank=1, chunk_magnitudes=mags)
    s, r, rec, _ = transfer([msg], LossyChannel(seed=4, loss=0.05), impl=impl)
    plan = MagnitudePolicy().plan(mags, data.nbytes, cs)
    assert all(h.mag_class == plan.mag_class[h.chunk_index] for _, h, _ in rec.of(DATA))
    check_delivery(r.take_delivered()[0], msg, rec.droppable()[layer], cs)


@each_impl
def test_one_flag_and_class_for_every_chunk_makes_a_message_exact(impl):
    """A sparse (compressed) message is sent with droppable=False and mag_class=7 as single
    values: every chunk goes non-droppable in class 7, and under loss it arrives whole."""
    data = tensor(50_000, seed=3)
    msg = Message(data, iteration=1, tensor_id=9, src_rank=0, dst_rank=1, droppable=False,
                  mag_class=7)
    s, r, rec, _ = transfer([msg], LossyChannel(seed=5, loss=0.2), LossyChannel(seed=6, loss=0.1), impl=impl)
    (d,) = r.take_delivered()
    assert d.lost_bytes == 0 and np.array_equal(np.asarray(d.data, dtype=np.float32).ravel(), data)
    heads = [h for _, h, _ in rec.of(DATA)]
    assert heads and all(h.mag_class == 7 and not h.flags & Flags.DROPPABLE for h in heads)
    assert any(h.flags & Flags.RETRANSMISSION for h in heads)     # the loss was repaired
