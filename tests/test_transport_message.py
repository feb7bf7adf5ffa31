"""Chunking and the sender-side magnitude policy (dlcp_emu.transport.message)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dlcp_emu.transport import MagnitudePolicy, chunk_magnitudes, chunk_payload_size, layer_priority
from dlcp_emu.transport import feedback as fb


def test_chunk_payload_size_from_mtu():
    assert chunk_payload_size() == 1424 == 1500 - 20 - 8 - 48
    assert chunk_payload_size(9000) == 8924
    assert chunk_payload_size(1499) == 1420  # rounded down to whole float32 values
    assert chunk_payload_size(80) == 4
    for bad in (0, 79, 70000, 1500.0):
        with pytest.raises(ValueError):
            chunk_payload_size(bad)


def test_layer_priority_front_layers_first():
    prios = [layer_priority(i, 50) for i in range(50)]
    assert prios[0] == 0 and prios[-1] == 7 and prios == sorted(prios)
    with pytest.raises(ValueError):
        layer_priority(50, 50)


def test_chunk_magnitudes_mean_abs_per_chunk():
    data = np.arange(-10, 11, dtype=np.float32)  # 21 values, chunks of 4 values
    got = chunk_magnitudes(data, 16)
    want = [np.abs(data[i:i + 4]).mean() for i in range(0, 21, 4)]
    np.testing.assert_allclose(got, want)


@settings(max_examples=150, deadline=None)
@given(n_values=st.integers(1, 5000), cs=st.sampled_from([4, 64, 1424]),
       frac=st.floats(0, 1), bound=st.floats(0, 0.5), seed=st.integers(0, 2**32 - 1))
def test_droppable_bytes_never_exceed_the_bound(n_values, cs, frac, bound, seed):
    total = 4 * n_values
    n = -(-total // cs)
    mags = np.random.default_rng(seed).lognormal(0, 2, n)
    pol = MagnitudePolicy(droppable_fraction=frac, loss_bound=bound)
    plan = pol.plan(mags, total, cs)
    drop = np.frombuffer(plan.droppable, np.uint8).astype(bool)
    sizes = np.full(n, cs)
    sizes[-1] = total - (n - 1) * cs
    assert plan.bound_bytes == int(bound * total)
    assert sizes[drop].sum() <= plan.bound_bytes
    assert drop.sum() <= int(frac * n)
    if drop.any() and (~drop).any():  # droppable chunks are the smallest ones
        assert mags[drop].max() <= mags[~drop].min()
    cls = np.frombuffer(plan.mag_class, np.uint8)
    assert cls.max() <= 7
    order = np.argsort(mags, kind="stable")
    assert (np.diff(cls[order].astype(int)) >= 0).all()  # larger magnitude, class never lower


def test_policy_defaults_mark_the_smallest_one_percent():
    mags = np.arange(1000, dtype=float)[::-1]
    plan = MagnitudePolicy().plan(mags, 1000 * 1424, 1424)
    drop = np.flatnonzero(np.frombuffer(plan.droppable, np.uint8))
    assert list(drop) == list(range(990, 1000))  # the 10 smallest of 1000 equal-size chunks
    cls = np.frombuffer(plan.mag_class, np.uint8)
    assert np.bincount(cls).tolist() == [125] * 8  # octiles of the tensor
    assert plan.droppable == bytes(MagnitudePolicy().plan(mags, 1000 * 1424, 1424).droppable)


def test_random_drop_order_gives_up_as_many_bytes_blind_to_magnitude():
    """The ablation: the same droppable bytes and class histogram, chunks and classes at
    random; the same message always gets the same shuffle, another message another."""
    mags = np.arange(1000, dtype=float)[::-1]
    blind = MagnitudePolicy(loss_bound=0.1, drop_order="random", seed=4)
    aware = MagnitudePolicy(loss_bound=0.1)
    a = aware.plan(mags, 1000 * 1424, 1424, salt=(0, 1, 2))
    b = blind.plan(mags, 1000 * 1424, 1424, salt=(0, 1, 2))
    drop_a = np.frombuffer(a.droppable, np.uint8).astype(bool)
    drop_b = np.frombuffer(b.droppable, np.uint8).astype(bool)
    assert drop_a.sum() == drop_b.sum() == 100
    assert mags[drop_a].max() < 100            # magnitude-aware: the 100 smallest
    assert mags[drop_b].mean() > 300           # blind: about the mean of all (499.5)
    cls_b = np.frombuffer(b.mag_class, np.uint8)
    assert np.bincount(cls_b).tolist() == [125] * 8
    assert abs(np.corrcoef(cls_b, mags)[0, 1]) < 0.2
    assert b == blind.plan(mags, 1000 * 1424, 1424, salt=(0, 1, 2))
    assert b.droppable != blind.plan(mags, 1000 * 1424, 1424, salt=(0, 1, 3)).droppable
    with pytest.raises(ValueError, match="drop_order must be one of magnitude, random"):
        MagnitudePolicy(drop_order="largest")


def test_absolute_class_edges():
    pol = MagnitudePolicy(class_edges=[1, 2, 3, 4, 5, 6, 7])
    assert list(pol.classes(np.array([0.5, 1.5, 3.0, 100]))) == [0, 1, 2, 7]
    with pytest.raises(ValueError):
        MagnitudePolicy(class_edges=[3, 2, 1, 0, 0, 0, 0])
    with pytest.raises(ValueError):
        MagnitudePolicy(loss_bound=1.5)


def test_probe_and_bitmap_payloads_round_trip():
    drop = bytes([0, 1, 0, 1] * 1000)
    mags = bytes([3, 2, 1, 0] * 1000)
    segs = fb.encode_probes(4000 * 1424, 1424, 9999, drop, mags, 1424)
    entries = []
    for i, p in enumerate(segs):
        total, cs, bound, n_drop, seg, nseg, e = fb.decode_probe(p)
        assert (total, cs, bound, n_drop, seg, nseg) == (4000 * 1424, 1424, 9999, 2000, i, len(segs))
        assert len(p) <= 1424
        entries += e.tolist()
    assert [x & fb.PROBE_CHUNK_MASK for x in entries] == list(range(1, 4000, 2))
    assert {x >> fb.PROBE_ENTRY_SHIFT for x in entries} == {2, 0}

    got = bytearray(np.random.default_rng(0).integers(0, 2, 30000, dtype=np.uint8).tobytes())
    pkts = fb.encode_bitmaps(got, 7, 123, fb.FB_NEED_PROBE, 1424)
    seen = bytearray(30000)
    for base, p in pkts:
        assert len(p) <= 1424
        echo, cum, fl, b, bits = fb.decode_bitmap(p)
        assert (echo, cum, fl, b) == (123, 7, fb.FB_NEED_PROBE, base)
        seen[b:b + len(bits)] = bits.tobytes()
    assert seen[7:] == got[7:]
