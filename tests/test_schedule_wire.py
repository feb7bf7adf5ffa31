"""A generated schedule's collectives matched across ranks and expanded by their algorithms:
the bytes each rank puts on the wire per iteration, against the closed forms per parallelism."""
import numpy as np
import pytest

from workloads.llm import Parallelism, TransformerConfig, llm_schedule
from workloads.schedule import OpKind as K, TrafficClass as C, validate
from workloads.schedule.matching import collectives, messages, steps, wire_bytes

SMALL = TransformerConfig("small", hidden=256, layers=4, heads=8, ffn=688, vocab=1000)


def _named(s, rank, tclass):
    ops = s.ops_of(rank)
    m = (s.tclass[ops] == tclass) & (s.kind[ops] != K.SEND) & (s.kind[ops] != K.RECV)
    return int(s.nbytes[ops][m].sum()), int(m.sum())


@pytest.mark.parametrize("algo", ["ring", "halving-doubling"])
def test_dp_gradients_cost_2_n_minus_1_over_n_and_tp_activations_too(algo):
    par = Parallelism(dp=4, tp=2, pp=2, micro_batches=3, seq_len=64, bucket_bytes=2**18)
    s = validate(llm_schedule(SMALL, par))
    algos = {"all-reduce": algo}
    grad = wire_bytes(s, algos, mask=lambda row: row["tclass"] == C.GRADIENT)
    act = wire_bytes(s, algos, mask=lambda row: row["tclass"] in (C.ACTIVATION,
                                                                  C.ACTIVATION_GRADIENT))
    for r in range(s.n_ranks):
        g, ng = _named(s, r, C.GRADIENT)
        assert grad[r] == pytest.approx(2 * (par.dp - 1) / par.dp * g, abs=2 * par.dp * ng)
        a = sum(_named(s, r, c)[0] for c in (C.ACTIVATION, C.ACTIVATION_GRADIENT))
        assert act[r] == pytest.approx(2 * (par.tp - 1) / par.tp * a, abs=1)


def test_zero1_puts_the_same_bytes_on_the_wire_as_zero0():
    base = dict(dp=4, micro_batches=2, seq_len=64, bucket_bytes=2**18)
    z0 = wire_bytes(validate(llm_schedule(SMALL, Parallelism(**base))))
    z1 = wire_bytes(validate(llm_schedule(SMALL, Parallelism(**base, zero=1))))
    assert z1 == pytest.approx(z0, abs=64)


def test_instances_and_messages_match_across_ranks():
    par = Parallelism(dp=2, tp=2, pp=2, micro_batches=2, seq_len=64)
    s = validate(llm_schedule(SMALL, par))
    inst = collectives(s)
    for _, row in inst.iterrows():
        ops = row["ops"]
        assert s.rank[ops].tolist() == list(s.groups[row["group"]])
        assert set(s.nbytes[ops]) == {row["nbytes"]}
        st = steps(s, row)
        assert np.all(st.tclass == row["tclass"])
    m = messages(s)
    assert len(m) == (s.kind == K.SEND).sum() == (s.kind == K.RECV).sum()
    assert np.all(s.rank[m["recv_op"]] == m["dst"]) and np.all(s.peer[m["recv_op"]] == m["src"])


def test_instance_members_follow_the_group_ring_order():
    from workloads.schedule import RankOps, assemble
    labels, per = {}, []
    for _ in range(3):
        ops = RankOps(labels)
        ops.add(K.ALL_GATHER, "ag", group=0, nbytes=300, tclass=C.PARAMETERS)
        per.append(ops.arrays())
    s = validate(assemble(3, per, [(2, 0, 1)], ["ring"], labels))
    row = collectives(s).iloc[0]
    assert s.rank[row["ops"]].tolist() == [2, 0, 1]
    st = steps(s, row)
    assert set(zip(st.src.tolist(), st.dst.tolist())) == {(2, 0), (0, 1), (1, 2)}
