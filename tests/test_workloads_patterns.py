"""Communication schedules: ring all-reduce, parameter server, DS-Sync groups."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from workloads.patterns import (
    ds_sync_groups,
    execute_ps,
    execute_ring_allreduce,
    parameter_server,
    ring_allreduce,
    split_ranges,
)


def arrays(n, length, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(length).astype(np.float32) for _ in range(n)]


def assert_sum(results, inputs):
    expected = np.sum(np.stack(inputs), axis=0, dtype=np.float32)
    scale = np.abs(np.stack(inputs)).sum(axis=0).max(initial=1.0)
    for r in results:
        assert r.dtype == np.float32 and r.shape == expected.shape
        np.testing.assert_allclose(r, expected, rtol=1e-5, atol=1e-6 * scale)


@pytest.mark.parametrize("n", range(1, 9))
@pytest.mark.parametrize("length", [0, 1, 7, 13, 64, 1001])
def test_ring_allreduce_sums(n, length):
    inputs = arrays(n, length, seed=n * 1000 + length)
    out = execute_ring_allreduce(inputs)
    assert_sum(out, inputs)
    for r in out[1:]:  # all-gather copies: every rank holds the very same bits
        assert np.array_equal(r, out[0])


@pytest.mark.parametrize("n", range(1, 9))
@pytest.mark.parametrize("n_ps", [1, 2, 3, 5])
@pytest.mark.parametrize("length", [1, 13, 1001])
def test_ps_sums(n, n_ps, length):
    inputs = arrays(n, length, seed=7 * n + n_ps + length)
    assert_sum(execute_ps(inputs, n_ps), inputs)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 8), length=st.integers(0, 300), n_ps=st.integers(1, 4),
       seed=st.integers(0, 2**32 - 1))
def test_executors_sum_property(n, length, n_ps, seed):
    inputs = arrays(n, length, seed)
    assert_sum(execute_ring_allreduce(inputs), inputs)
    assert_sum(execute_ps(inputs, n_ps), inputs)


def test_executors_keep_shape_and_inputs():
    inputs = [np.arange(12, dtype=np.float32).reshape(3, 4) for _ in range(3)]
    out = execute_ring_allreduce(inputs)
    assert out[0].shape == (3, 4) and np.array_equal(inputs[0], np.arange(12).reshape(3, 4))
    assert np.array_equal(execute_ps(inputs, 2)[2], 3 * inputs[0])


@given(nbytes=st.integers(0, 10**6), parts=st.integers(1, 16),
       align=st.sampled_from([1, 2, 4, 8]))
def test_split_ranges_tile_the_tensor(nbytes, parts, align):
    ranges = split_ranges(nbytes, parts, align)
    assert len(ranges) == parts and ranges[0][0] == 0 and ranges[-1][1] == nbytes
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    assert all(start % align == 0 for start, _ in ranges)
    sizes = [stop - start for start, stop in ranges[:-1]]
    if sizes:
        assert max(sizes) - min(sizes) <= align


def test_ring_schedule_structure():
    n, nbytes = 4, 1000
    s = ring_allreduce(n, nbytes)
    assert len(s.reduce_scatter) == n - 1 and len(s.all_gather) == n - 1
    assert s.chunks == ((0, 252), (252, 504), (504, 752), (752, 1000))  # 63,63,62,62 floats
    for phase, _, step in s.steps():
        assert len(step) == n
        assert sorted(t.src for t in step) == list(range(n))  # every rank sends once a step
        assert all(t.dst == (t.src + 1) % n for t in step)
        assert all((t.start, t.stop) == s.chunks[t.chunk] for t in step)
    # reduce-scatter step s: rank r sends chunk (r - s) mod n
    assert [(t.src, t.chunk) for t in s.reduce_scatter[1]] == [(0, 3), (1, 0), (2, 1), (3, 2)]
    # all-gather starts from the chunk each rank owns: (r + 1) mod n
    assert [(t.src, t.chunk) for t in s.all_gather[0]] == [(0, 1), (1, 2), (2, 3), (3, 0)]
    # each rank sends 2 (n-1)/n of the tensor in total
    sent = sum(t.nbytes for _, _, step in s.steps() for t in step)
    assert sent == 2 * (n - 1) * nbytes


def test_ring_single_rank_and_tiny_tensor():
    assert list(ring_allreduce(1, 100).steps()) == []
    tiny = ring_allreduce(4, 8)  # 2 floats over 4 ranks: two chunks are empty
    assert all(t.nbytes > 0 for _, _, step in tiny.steps() for t in step)
    with pytest.raises(ValueError):
        ring_allreduce(0, 10)


def test_ps_schedule_structure():
    s = parameter_server([0, 1, 2], [10, 11], 100)
    assert s.shards == ((0, 52), (52, 100))
    assert len(s.push) == 6 and len(s.pull) == 6
    assert {(t.src, t.dst, t.chunk) for t in s.push} == {(w, 10 + k, k) for w in range(3)
                                                        for k in range(2)}
    assert {(t.src, t.dst) for t in s.pull} == {(10 + k, w) for w in range(3) for k in range(2)}
    assert [(a.ps, a.start, a.stop, a.sources) for a in s.aggregate] == [
        (10, 0, 52, (0, 1, 2)), (11, 52, 100, (0, 1, 2))]
    counts = parameter_server(2, 3, 64)
    assert counts.workers == (0, 1) and counts.ps_ranks == (2, 3, 4)
    colocated = parameter_server([0, 1], [0, 1], 64)  # each rank is also a PS
    assert sum(t.src == t.dst for t in colocated.push) == 2
    with pytest.raises(ValueError, match="distinct"):
        parameter_server([0, 0], [1], 8)


def test_ds_sync_groups_partition_and_shuffle():
    g0 = ds_sync_groups(12, 4, iteration=0, seed=3)
    assert len(g0) == 3 and all(len(g) == 4 for g in g0)
    assert sorted(w for g in g0 for w in g) == list(range(12))
    assert ds_sync_groups(12, 4, 0, 3) == g0  # deterministic
    rounds = {tuple(ds_sync_groups(12, 4, i, 3)) for i in range(10)}
    assert len(rounds) > 1  # reshuffled across iterations
    assert ds_sync_groups(12, 4, 0, 4) != g0 or ds_sync_groups(12, 4, 1, 4) != g0


@given(n=st.integers(1, 40), g=st.integers(1, 40), it=st.integers(0, 1000),
       seed=st.integers(0, 2**31))
def test_ds_sync_remainder(n, g, it, seed):
    if g > n:
        with pytest.raises(ValueError):
            ds_sync_groups(n, g, it, seed)
        return
    groups = ds_sync_groups(n, g, it, seed)
    assert sorted(w for grp in groups for w in grp) == list(range(n))
    assert [len(grp) for grp in groups[:-1]] == [g] * (len(groups) - 1)
    assert len(groups[-1]) == (n % g or g)
