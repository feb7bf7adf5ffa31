"""Tensor fusion: exact bucket boundaries, conservation, ordering, thresholds."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workloads.fusion import DEFAULT_FUSION_BYTES, fuse, fuse_ready
from workloads.trace import Trace
from workloads.zoo import get_model


def trace_from(ready):
    """Trace whose backward produces (layer_id, bytes, ready_us) in the given order."""
    ids = [r[0] for r in ready]
    gaps = np.diff([0.0] + [r[2] for r in ready])
    df = pd.DataFrame({"layer_id": ids, "name": [f"l{i}" for i in ids],
                       "grad_bytes": [r[1] for r in ready], "backward_us": gaps,
                       "forward_us": 0.0, "mag_dist": "lognormal", "mag_mu": -7.0,
                       "mag_sigma": 1.0})
    return Trace("hand", df, float(sum(gaps)) + 1.0).validate()


def summary(buckets):
    return [(b.ready_us, b.nbytes, b.layer_ids) for b in buckets]


SIZE_CASE = [(5, 40, 0.0), (4, 40, 10.0), (3, 40, 20.0), (2, 60, 30.0), (1, 150, 40.0),
             (0, 10, 50.0)]


def test_size_threshold_boundaries():
    buckets = fuse(trace_from(SIZE_CASE), fusion_bytes=100, cycle_ms=5.0)
    assert summary(buckets) == [
        (20.0, 80, (5, 4)),  # layer 3 would overflow 100 bytes: flush when it arrives
        (30.0, 100, (3, 2)),  # exactly full: flush at once
        (40.0, 150, (1,)),  # bigger than the threshold: alone
        (50.0, 10, (0,)),  # end of backward
    ]
    assert buckets[1].ranges == ((0, 40), (40, 100))
    assert [b.index for b in buckets] == [0, 1, 2, 3]


def test_cycle_boundaries():
    ready = [(5, 10, 0.0), (4, 10, 500.0), (3, 10, 1000.0), (2, 10, 1001.0), (1, 10, 2500.0),
             (0, 10, 2600.0)]
    buckets = fuse(trace_from(ready), fusion_bytes=10**9, cycle_ms=1.0)
    assert summary(buckets) == [
        (1000.0, 30, (5, 4, 3)),  # ready exactly at the deadline: still joins
        (2001.0, 10, (2,)),  # flushed by its cycle, before layer 1 arrives
        (2600.0, 20, (1, 0)),  # end of backward comes before its cycle ends
    ]


def test_fusion_disabled():
    buckets = fuse(trace_from(SIZE_CASE), fusion_bytes=0)
    assert summary(buckets) == [(r[2], r[1], (r[0],)) for r in SIZE_CASE]


def test_end_of_backward_flushes_last_bucket():
    buckets = fuse_ready([(1, 10, 0.0), (0, 10, 100.0)], fusion_bytes=1000, cycle_ms=5.0,
                         end_us=300.0)
    assert summary(buckets) == [(300.0, 20, (1, 0))]


def test_rejects_bad_input():
    with pytest.raises(ValueError):
        fuse_ready([(0, 1, 0.0)], fusion_bytes=-1)
    with pytest.raises(ValueError, match="must not decrease"):
        fuse_ready([(1, 1, 5.0), (0, 1, 4.0)])


def test_defaults_on_resnet50():
    t = get_model("resnet50")
    buckets = fuse(t)
    assert sum(b.nbytes for b in buckets) == t.total_bytes
    assert all(b.nbytes <= DEFAULT_FUSION_BYTES for b in buckets)
    assert buckets[-1].ready_us == pytest.approx(t.backward_total_us)


@st.composite
def ready_lists(draw):
    n = draw(st.integers(1, 30))
    sizes = draw(st.lists(st.integers(1, 5000), min_size=n, max_size=n))
    gaps = draw(st.lists(st.sampled_from([0.0, 100.0, 999.0, 1000.0, 2500.0]),
                         min_size=n, max_size=n))
    times = np.cumsum(gaps).tolist()
    return [(n - 1 - i, sizes[i], times[i]) for i in range(n)]


@settings(max_examples=150, deadline=None)
@given(ready=ready_lists(), fusion_bytes=st.integers(0, 12000),
       cycle_ms=st.sampled_from([0.0, 1.0, 5.0]))
def test_fusion_invariants(ready, fusion_bytes, cycle_ms):
    buckets = fuse_ready(ready, fusion_bytes, cycle_ms)
    sizes = {lid: nb for lid, nb, _ in ready}
    when = {lid: t for lid, _, t in ready}
    # every tensor exactly once, in backward order
    assert [lid for b in buckets for lid in b.layer_ids] == [r[0] for r in ready]
    assert sum(b.nbytes for b in buckets) == sum(sizes.values())
    for b in buckets:
        starts = [0] + [stop for _, stop in b.ranges[:-1]]
        assert [s for s, _ in b.ranges] == starts
        assert [stop - s for s, stop in b.ranges] == [sizes[l] for l in b.layer_ids]
        assert b.ranges[-1][1] == b.nbytes
        assert b.nbytes <= fusion_bytes or len(b.layer_ids) == 1
        assert max(when[l] for l in b.layer_ids) <= b.ready_us
        assert b.ready_us <= when[b.layer_ids[0]] + cycle_ms * 1000
    assert [b.ready_us for b in buckets] == sorted(b.ready_us for b in buckets)
    # a bucket closes only for a reason: full, next would overflow, or its cycle ran out
    for b, nxt in zip(buckets, buckets[1:]):
        first_next = nxt.layer_ids[0]
        assert (b.nbytes >= fusion_bytes or b.nbytes + sizes[first_next] > fusion_bytes
                or when[first_next] > when[b.layer_ids[0]] + cycle_ms * 1000)
