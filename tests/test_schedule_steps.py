"""A schedule's collectives expanded a shape at a time (`host.schedule_steps`) give the steps
each instance expanded on its own gives (`workloads.schedule.steps`): groups of one size whose
members sit in other orders, broadcasts rooted at other places, hierarchical collectives over
other server layouts."""
import numpy as np
import pytest

from workloads.schedule import OpKind, TrafficClass, collectives, steps, validate
from workloads.schedule.ops import RankOps, assemble

from dlcp_emu.host.schedule_steps import collective_steps

GROUPS = [(0, 1, 2, 3), (4, 5, 6, 7), (7, 5, 6, 4), (2, 0, 3, 1), (0, 4, 1, 5), (0, 1, 4, 5)]
AR, BC = OpKind.ALL_REDUCE, OpKind.BROADCAST
COLLECTIVES = [(g, AR, 4000, -1) for g in range(len(GROUPS))] + \
    [(0, BC, 999, 0), (1, BC, 999, 6), (2, BC, 999, 6), (3, BC, 999, 3), (5, AR, 4000, -1)]


def schedule():
    labels, per_rank = {}, []
    for r in range(8):
        ops, prev = RankOps(labels), -1
        for n, (g, kind, nbytes, root) in enumerate(COLLECTIVES):
            if r in GROUPS[g]:
                prev = ops.add(kind, f"c{n}", [prev], nbytes=nbytes, group=g, peer=root,
                               tclass=TrafficClass.GRADIENT)
        per_rank.append(ops.arrays())
    return validate(assemble(8, per_rank, GROUPS, [f"g[{g}]" for g in range(len(GROUPS))], labels))


@pytest.mark.parametrize("algorithms,servers", [
    (None, None),
    ({"all-reduce": "halving-doubling", "broadcast": "ring"}, None),
    ({"all-reduce": "hierarchical"}, [0, 0, 1, 1, 2, 2, 3, 3]),
    ({"all-reduce": "hierarchical"}, [3, 3, 2, 2, 1, 1, 0, 0]),   # servers numbered against the ranks
    ({"all-reduce": "hierarchical"}, [0, 1, 0, 1, 2, 3, 2, 3]),   # (0, 1, 2, 3) on two servers, (0, 1, 4, 5) on four
])
def test_each_shape_expanded_once_is_each_instance_expanded(algorithms, servers):
    s = schedule()
    server_of = None if servers is None else servers.__getitem__
    want = [steps(s, row, algorithms, server_of) for _, row in collectives(s).iterrows()]
    got = list(collective_steps(s, algorithms, server_of))
    assert len(got) == len(want) == len(COLLECTIVES)
    for (row, g), w in zip(got, want):
        for field in ("src", "dst", "nbytes", "round", "dep"):
            assert np.array_equal(getattr(g, field), getattr(w, field)), (row, field)
        assert g.tclass == w.tclass

