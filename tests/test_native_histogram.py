"""The compiled switch loop bins lateness and ring waits itself (histogram.hpp): the same
values give the same histogram as `Lateness.add`, bin for bin, at the edges too."""
import numpy as np
from hypothesis import given, settings, strategies as st

import dlcp_native.datapath as compiled
from dlcp_emu.emu.datapath.lateness import Lateness

EDGES = Lateness().edges
# Values on and beside every edge, and across the whole range (negative: a frame early).
NEAR_EDGES = st.sampled_from(EDGES.astype(np.int64)).flatmap(lambda e: st.sampled_from([e - 1, e, e + 1]))
VALUES = st.lists(st.one_of(NEAR_EDGES, st.integers(-10**6, 10**13), st.integers(0, 10**5)), max_size=300)


def both(values, threshold):
    python, native = Lateness(), compiled.Histogram(EDGES.tolist())
    python.threshold = native.threshold = threshold
    python.add(np.asarray(values, dtype=np.int64))
    native.add(values)
    merged = Lateness()
    merged.threshold = threshold
    merged.merge(*native.take())
    return python, merged, native


@settings(max_examples=150, deadline=None)
@given(VALUES, st.integers(0, 10**7))
def test_the_loops_histogram_is_lateness_add(values, threshold):
    python, merged, _ = both(values, threshold)
    assert merged.counts.tolist() == python.counts.tolist()
    assert (merged.n, merged.total, merged.max) == (python.n, python.total, python.max)
    assert merged.above == python.above
    assert merged.summary() == python.summary()


def test_take_starts_afresh_and_merges_add_up():
    _, merged, native = both([5, 100, 150, 10**9], 100)
    assert merged.n == 4 and merged.above == 2      # above: later than the threshold
    counts, n, total, largest, above = native.take()
    assert n == total == largest == above == 0 and not counts.any()
    native.add([7])
    merged.merge(*native.take())
    assert merged.n == 5 and merged.total == 5 + 100 + 150 + 10**9 + 7 and merged.counts[0] == 2
