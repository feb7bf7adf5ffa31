"""The chunk plan of a message (magnitude classes, droppable chunks, the loss bound) as the
core makes it for the native senders (`dlcp_native.transport.plan_chunks`) is
`MagnitudePolicy.plan`'s, bit for bit: ties (a stable sort), the last short chunk, fixed class
edges, no room to drop. So are the chunks' magnitudes it starts from
(`dlcp_native.transport.chunk_magnitudes`, numpy's float32 means)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dlcp_native.transport as compiled

from dlcp_emu.transport.message import MagnitudePolicy, chunk_magnitudes
from dlcp_emu.transport.native import planner

CHUNK = st.sampled_from([4, 64, 1424, 8948])
# Few distinct magnitudes make ties, which only a stable sort orders as numpy's does.
MAGS = st.lists(st.sampled_from([0.0, 1e-9, 0.5, 1.0, 3.0]) | st.floats(0, 1e3, allow_nan=False),
                min_size=1, max_size=300)
BOUND = st.floats(0, 0.05) | st.floats(0, 1)     # small bounds cut inside the candidates
EDGES = st.none() | st.lists(st.floats(0, 10, allow_nan=False), min_size=7, max_size=7).map(sorted)


@settings(max_examples=600, deadline=None)
@given(MAGS, CHUNK, st.integers(0, 3), st.floats(0, 1), BOUND, st.booleans(), EDGES, st.booleans())
def test_the_core_plans_chunks_as_the_policy_does(mags, chunk, short, fraction, bound, allowed, edges, f32):
    n = len(mags)
    total = n * chunk - min(short * 4, chunk - 4)      # the last chunk may be short
    policy = MagnitudePolicy(droppable_fraction=fraction, loss_bound=bound, class_edges=edges)
    m = np.asarray(mags, dtype=np.float32 if f32 else np.float64)
    want = policy.plan(m, total, chunk, droppable_allowed=allowed)
    got = planner(policy)(m, total, chunk, droppable_allowed=allowed)
    assert got == want


@pytest.mark.parametrize("n", [17, 100, 1000])
def test_ties_are_taken_in_chunk_order_as_a_stable_sort_takes_them(n):
    policy = MagnitudePolicy(droppable_fraction=0.5, loss_bound=0.2)
    m = np.ones(n)
    m[::7] = 0.5
    want = policy.plan(m, n * 1424, 1424)
    assert want.droppable != bytes(n) and want.droppable != bytes([1]) * n   # the cut falls among ties
    assert planner(policy)(m, n * 1424, 1424) == want


def test_a_wrong_number_of_magnitudes_is_refused_as_python_refuses_it():
    plan = planner(MagnitudePolicy())
    with pytest.raises(ValueError, match=r"need one magnitude per chunk \(2 chunks of 1424 bytes\), got shape \(3,\)"):
        plan(np.ones(3), 2000, 1424)


def test_a_random_drop_order_keeps_the_policys_own_plan():
    policy = MagnitudePolicy(drop_order="random", seed=3)
    assert planner(policy) == policy.plan


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 40_000), st.integers(1, 16_364).map(lambda k: 4 * k), st.integers(-30, 30),
       st.integers(0, 2**32 - 1))
def test_the_core_measures_chunks_as_numpy_does(n, chunk, exponent, seed):
    """Every size around numpy's summation blocks (8 values, 128, halves above) and the last
    short chunk; values of either sign over a wide range, zeros among them."""
    rng = np.random.default_rng(seed)
    data = (rng.standard_normal(n) * 2.0 ** exponent).astype(np.float32)
    data[rng.random(n) < 0.05] = 0
    want = chunk_magnitudes(data, chunk)
    got = compiled.chunk_magnitudes(data, chunk)
    assert got.dtype == np.float64 and got.tobytes() == want.tobytes()


def test_the_core_refuses_what_it_cannot_measure():
    with pytest.raises(TypeError):
        compiled.chunk_magnitudes(np.ones(8, dtype=np.float64), 16)
    with pytest.raises(ValueError, match="chunk_size"):
        compiled.chunk_magnitudes(np.ones(8, dtype=np.float32), 2)
