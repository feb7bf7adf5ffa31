"""The schedule's data model: validation names what is wrong, and the ideal evaluator runs
dependencies, collectives and eager sends as its doc says."""
import numpy as np
import pytest

from workloads.schedule import FixedBandwidth, OpKind as K, RankOps, ScheduleError
from workloads.schedule import TrafficClass as C
from workloads.schedule import assemble, ideal_iteration, validate


def build(per_rank_ops, groups=((0, 1),)):
    labels = {}
    per = []
    for fill in per_rank_ops:
        ops = RankOps(labels)
        fill(ops)
        per.append(ops.arrays())
    return assemble(len(per), per, groups, [f"g{i}" for i in range(len(groups))], labels)


def two_ranks_all_reduce(nbytes=(1000, 1000), durations=(10.0, 30.0)):
    def rank(i):
        def fill(ops):
            c = ops.add(K.COMPUTE, "c", duration_us=durations[i])
            ops.add(K.ALL_REDUCE, "ar", [c], group=0, nbytes=nbytes[i], tclass=C.GRADIENT)
        return fill
    return build([rank(0), rank(1)])


def test_a_collective_starts_when_the_last_member_arrives():
    s = validate(two_ranks_all_reduce())
    res = ideal_iteration(s, FixedBandwidth(1e9, 1e-6))
    # ring all-reduce of 2 ranks: 2 rounds of 500 B at 1 GB/s + 1 us
    assert res.iteration_us == pytest.approx(30 + 2 * (1 + 0.5))
    assert res.start_us[[1, 3]].tolist() == [30, 30]
    assert ideal_iteration(s).iteration_us == 30
    assert res.busy_fraction().tolist() == pytest.approx([10 / 33, 30 / 33])


def test_fixed_bandwidth_uses_the_named_algorithm_and_intra_server_links():
    def rank(i):
        return lambda ops: ops.add(K.ALL_REDUCE, "ar", group=0, nbytes=8000, tclass=C.GRADIENT)
    s = validate(build([rank(i) for i in range(8)], groups=(tuple(range(8)),)))
    ring = ideal_iteration(s, FixedBandwidth(1e9)).iteration_us
    hd = ideal_iteration(s, FixedBandwidth(1e9, algorithms={"all-reduce": "halving-doubling"}))
    assert ring == pytest.approx(2 * 7 * 1.0)  # 14 rounds of 1000 B
    assert hd.iteration_us == pytest.approx(ring)  # same bytes on the critical path, no latency
    hier = FixedBandwidth(1e9, intra_bytes_per_s=1e10, gpus_per_server=4,
                          algorithms={"all-reduce": "hierarchical"})
    # inside: 2 x 3 rounds of 2000 B at 10 GB/s; across: 2 x 1 round of 1000 B at 1 GB/s
    assert ideal_iteration(s, hier).iteration_us == pytest.approx(6 * 0.2 + 2 * 1.0)


def test_deadlock_is_reported_with_the_waiting_op():
    def rank(i):
        def fill(ops):
            ops.add(K.RECV, "r", peer=1 - i, tag=0, nbytes=10, tclass=C.ACTIVATION)
            ops.add(K.SEND, "s", [0], peer=1 - i, tag=0, nbytes=10, tclass=C.ACTIVATION)
        return fill
    s = validate(build([rank(0), rank(1)]))
    with pytest.raises(ScheduleError, match="deadlocks: 2 ranks cannot go on; rank 0 op 0 "
                                            "\\(recv 'r'\\)"):
        ideal_iteration(s)


def test_validation_names_the_op_and_what_is_allowed():
    s = two_ranks_all_reduce(nbytes=(1000, 999))
    with pytest.raises(ScheduleError, match="collective #0 does not match across members "
                                            "\\(rank 0: all-reduce 1000 B, rank 1: all-reduce 999 B"):
        validate(s)
    s = two_ranks_all_reduce()
    s.dep_idx[0] = 1  # rank 0's all-reduce waits for itself
    with pytest.raises(ScheduleError, match="rank 0 op 1 \\(all-reduce 'ar'\\): dependency 1 "
                                            "is not an earlier op"):
        validate(s)
    s = two_ranks_all_reduce()
    s.tclass[1] = C.NONE
    with pytest.raises(ScheduleError, match="needs a traffic class \\(gradient, activation"):
        validate(s)
    s = two_ranks_all_reduce()
    s.kind[0] = 9
    with pytest.raises(ScheduleError, match="kind 9 unknown; allowed: 0 \\(compute\\)"):
        validate(s)
    lone = build([lambda ops: ops.add(K.SEND, "s", peer=1, tag=3, nbytes=5, tclass=C.ACTIVATION),
                  lambda ops: None])
    with pytest.raises(ScheduleError, match="no matching recv at rank 1 with tag 3"):
        validate(lone)
    outsider = build([lambda ops: None, lambda ops: None,
                      lambda ops: ops.add(K.ALL_GATHER, "ag", group=0, nbytes=4,
                                          tclass=C.PARAMETERS)])
    with pytest.raises(ScheduleError, match="rank 2 is not in group 0"):
        validate(outsider)


def test_table_reads_kinds_and_classes():
    df = two_ranks_all_reduce().table()
    assert df["kind"].tolist() == ["compute", "all-reduce"] * 2
    assert df["tclass"].tolist() == ["none", "gradient"] * 2
    assert df["op"].tolist() == [0, 1, 0, 1]
    assert np.array_equal(two_ranks_all_reduce().sent_bytes(), [1000, 1000])
