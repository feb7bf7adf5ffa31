"""Transformer workloads generated from the architecture, held to closed forms: parameter
counts against the published ones, data-parallel gradient bytes, ZeRO's reduce-scatter +
all-gather against the all-reduce, Megatron's tensor-parallel all-reduces per layer, the
pipeline's send/recv, expert all-to-alls, and the 1F1B bubble (p-1)/(m+p-1)."""
import numpy as np
import pytest

from workloads.llm import ZOO, Parallelism, Roofline, TransformerConfig, llm_schedule
from workloads.llm.parallelism import one_f_one_b, stage_blocks
from workloads.schedule import OpKind as K
from workloads.schedule import RankLayout, ScheduleError, TrafficClass as C
from workloads.schedule import ideal_iteration, validate

LLAMA = ZOO["llama-7b"]
# a small LLaMA-shaped model keeps the schedules small
SMALL = TransformerConfig("small", hidden=256, layers=8, heads=8, ffn=688, vocab=1000)


@pytest.mark.parametrize("name", list(ZOO))
def test_parameter_counts_match_the_published_ones(name):
    cfg = ZOO[name]
    assert cfg.params() == pytest.approx(cfg.published_params, rel=0.03)


def test_exact_counts_and_mixtral_active_parameters():
    # LLaMA-7B has 6,738,415,616 parameters (Hugging Face's count of the released weights)
    assert LLAMA.params() == 6_738_415_616
    assert ZOO["mixtral-8x7b"].active_params() == pytest.approx(12.9e9, rel=0.01)


def _dp_grad_bytes(s, rank):
    ops = s.ops_of(rank)
    m = (s.tclass[ops] == C.GRADIENT) & (s.kind[ops] != K.ALL_GATHER)
    return int(s.nbytes[ops][m].sum())


@pytest.mark.parametrize("tp,pp,dp", [(1, 1, 2), (2, 2, 2), (4, 2, 2)])
def test_dp_gradient_bytes_are_params_over_tp_times_pp(tp, pp, dp):
    par = Parallelism(dp=dp, tp=tp, pp=pp, micro_batches=2, seq_len=128)
    s = validate(llm_schedule(SMALL, par))
    lay = par.layout()
    # one replica's ranks together reduce every parameter once, plus the copies tensor
    # parallelism keeps of the replicated norms ((2 L + 1) h of them in a LLaMA)
    replica = [lay.rank(0, p, t) for p in range(pp) for t in range(tp)]
    replicated = (2 * SMALL.layers + 1) * SMALL.hidden
    assert sum(_dp_grad_bytes(s, r) for r in replica) == \
        par.grad_bytes * (SMALL.params() + (tp - 1) * replicated)
    for r in range(s.n_ranks):
        assert _dp_grad_bytes(s, r) == pytest.approx(
            par.grad_bytes * SMALL.params() / (tp * pp), rel=0.1)
    # and the group is the data-parallel one
    ops = np.flatnonzero(s.tclass == C.GRADIENT)
    assert all(s.group_names[g].startswith("dp") for g in s.group[ops])


def test_llama7b_dp_gradient_bytes_per_rank():
    par = Parallelism(dp=2, tp=8, seq_len=64)
    s = llm_schedule(LLAMA, par)
    assert _dp_grad_bytes(s, 0) == pytest.approx(2 * LLAMA.params() / 8, rel=0.001)


@pytest.mark.parametrize("zero", [1, 2])
def test_zero_reduce_scatter_plus_all_gather_equal_the_all_reduce(zero):
    base = dict(dp=4, tp=2, micro_batches=2, seq_len=128, bucket_bytes=2**20)
    ar = validate(llm_schedule(SMALL, Parallelism(**base)))
    z = validate(llm_schedule(SMALL, Parallelism(**base, zero=zero)))
    for r in range(ar.n_ranks):
        a, b = ar.ops_of(r), z.ops_of(r)
        ar_bytes = ar.nbytes[a][ar.kind[a] == K.ALL_REDUCE][ar.tclass[a][ar.kind[a] == K.ALL_REDUCE]
                                                             == C.GRADIENT].sum()
        rs = z.nbytes[b][z.kind[b] == K.REDUCE_SCATTER].sum()
        ag = z.nbytes[b][(z.kind[b] == K.ALL_GATHER) & (z.tclass[b] == C.PARAMETERS)].sum()
        assert rs == ag == ar_bytes  # the same buckets, param_bytes == grad_bytes
        # on the wire: ring RS + AG send (n-1)/n each, the all-reduce 2(n-1)/n
        n = par_n = 4
        assert (rs + ag) * (n - 1) / par_n == pytest.approx(2 * (n - 1) / n * ar_bytes)


def test_zero3_gathers_every_block_before_forward_and_backward():
    par = Parallelism(dp=2, micro_batches=3, seq_len=64, zero=3)
    s = validate(llm_schedule(SMALL, par))
    blocks = stage_blocks(SMALL, par, Roofline(), 0)
    ops = s.ops_of(0)
    ag = (s.kind[ops] == K.ALL_GATHER) & (s.tclass[ops] == C.PARAMETERS)
    assert ag.sum() == 2 * len(blocks) * par.micro_batches
    assert s.nbytes[ops][ag].sum() == 2 * par.micro_batches * par.param_bytes * sum(
        b.params for b in blocks)


def test_tensor_parallel_all_reduces_two_forward_two_backward_per_layer():
    par = Parallelism(dp=2, tp=4, pp=2, micro_batches=3, micro_batch_size=2, seq_len=128)
    s = validate(llm_schedule(SMALL, par))
    act = par.micro_batch_size * par.seq_len * SMALL.hidden * par.act_bytes
    for r in range(s.n_ranks):
        ops = s.ops_of(r)
        layer = s.layer[ops]
        tp = (s.kind[ops] == K.ALL_REDUCE) & np.isin(s.group[ops], [
            g for g, n in enumerate(s.group_names) if n.startswith("tp")])
        in_layers = tp & (layer >= 0) & (layer < SMALL.layers)
        per_stage = SMALL.layers // par.pp
        fwd = in_layers & (s.tclass[ops] == C.ACTIVATION)
        bwd = in_layers & (s.tclass[ops] == C.ACTIVATION_GRADIENT)
        assert fwd.sum() == bwd.sum() == 2 * per_stage * par.micro_batches
        assert np.all(s.nbytes[ops][tp] == act)
        assert set(np.unique(layer[in_layers])) == set(
            range(r // par.tp % par.pp * per_stage, (r // par.tp % par.pp + 1) * per_stage))


def test_pipeline_sends_activations_forward_and_their_gradients_back():
    par = Parallelism(dp=1, tp=2, pp=4, micro_batches=5, seq_len=64)
    s = validate(llm_schedule(SMALL, par))
    act = par.tokens * SMALL.hidden * par.act_bytes
    send = s.kind == K.SEND
    src, dst = s.rank[send], s.peer[send]
    fwd = s.tclass[send] == C.ACTIVATION
    assert np.all(dst[fwd] == src[fwd] + par.tp) and np.all(dst[~fwd] == src[~fwd] - par.tp)
    assert fwd.sum() == (~fwd).sum() == (par.pp - 1) * par.tp * par.micro_batches
    assert np.all(s.nbytes[send] == act)


def test_expert_parallel_all_to_alls_and_expert_gradients():
    moe = TransformerConfig("tiny-moe", hidden=128, layers=4, heads=4, ffn=256, vocab=500,
                            kv_heads=2, experts=4, top_k=2)
    par = Parallelism(dp=4, ep=2, micro_batches=2, seq_len=64, bucket_bytes=0)
    s = validate(llm_schedule(moe, par))
    ops = s.ops_of(0)
    a2a = s.kind[ops] == K.ALL_TO_ALL
    assert a2a.sum() == 4 * moe.layers * par.micro_batches  # dispatch, combine, both ways
    assert np.all(s.nbytes[ops][a2a] == par.tokens * moe.top_k * moe.hidden * par.act_bytes)
    assert np.all(s.tclass[ops][a2a] == C.ALL_TO_ALL)
    assert {s.groups[g] for g in s.group[ops][a2a]} == {(0, 1)}
    # the experts' gradients go to the replicas holding the same experts (0 and 2)
    edp = [g for g in set(s.group[ops][s.tclass[ops] == C.GRADIENT]) if s.groups[g] == (0, 2)]
    assert edp
    expert_bytes = s.nbytes[ops][np.isin(s.group[ops], edp)].sum()
    assert expert_bytes == par.grad_bytes * moe.layers * (moe.experts // par.ep) * \
        moe.expert_params()


@pytest.mark.parametrize("p,m", [(2, 4), (4, 4), (4, 12), (3, 1)])
def test_1f1b_bubble_fraction_with_an_ideal_network(p, m):
    # vocabulary 1: the head and embedding cost nothing, every stage is the same
    cfg = TransformerConfig("even", hidden=512, layers=4 * p, heads=8, ffn=1376, vocab=1)
    par = Parallelism(dp=1, tp=2, pp=p, micro_batches=m, seq_len=256)
    res = ideal_iteration(validate(llm_schedule(cfg, par)))
    per_micro = sum(b.fwd_us + b.ig_us + b.wg_us for b in stage_blocks(cfg, par, Roofline(), 1))
    assert res.iteration_us == pytest.approx((m + p - 1) * per_micro, rel=1e-3)
    assert 1 - res.busy_fraction() == pytest.approx(np.full(p * 2, (p - 1) / (m + p - 1)),
                                                    abs=1e-3)


def test_1f1b_order_keeps_at_most_p_minus_stage_micro_batches_in_flight():
    for p, m in [(4, 8), (4, 2)]:
        for stage in range(p):
            order = one_f_one_b(p, m, stage)
            assert sorted(order) == sorted([("F", j) for j in range(m)] + [("B", j) for j in range(m)])
            inflight = np.cumsum([1 if ph == "F" else -1 for ph, _ in order])
            assert inflight.max() == min(p - stage, m)


def test_compute_times_come_from_the_roofline():
    par = Parallelism(seq_len=1024, micro_batch_size=4)
    a100, h100 = Roofline("A100", 0.5), Roofline("H100", 0.5)
    ra = ideal_iteration(llm_schedule(SMALL, par, a100))
    rh = ideal_iteration(llm_schedule(SMALL, par, h100))
    assert ra.iteration_us / rh.iteration_us == pytest.approx(989 / 312)
    tokens = par.tokens
    flops = 3 * tokens * (SMALL.layers * (SMALL.attention_flops(par.seq_len) + SMALL.mlp_flops())
                          + SMALL.head_flops())
    assert ra.iteration_us == pytest.approx(flops / (312e12 * 0.5) * 1e6)
    # for a large model: 6 x params x tokens, plus the attention scores (s / 6h of it)
    big = Parallelism(seq_len=2048)
    rl = ideal_iteration(llm_schedule(LLAMA, big, a100))
    six_pt = 6 * LLAMA.params() * big.tokens / 156e12 * 1e6
    assert rl.iteration_us == pytest.approx(six_pt * (1 + 2048 / (6 * 4096)), rel=0.03)
    with pytest.raises(ValueError, match="known: .*A100"):
        Roofline("B300")


def test_rank_layout_is_megatron_order_with_tp_inside_a_server():
    lay = RankLayout(dp=4, tp=4, pp=2, ep=2, gpus_per_server=8)
    assert lay.coords(np.arange(32))[2].tolist() == [0, 1, 2, 3] * 8
    tp_groups = [g for g, n in zip(lay.groups, lay.group_names) if n.startswith("tp")]
    assert all(len({r // 8 for r in g}) == 1 for g in tp_groups)
    for kind, size in [("tp", 4), ("pp", 2), ("dp", 4), ("ep", 2), ("edp", 2)]:
        gs = [g for g, n in zip(lay.groups, lay.group_names) if n.startswith(kind + "[")]
        assert sorted(r for g in gs for r in g) == list(range(32))  # a partition
        assert {len(g) for g in gs} == {size}
    assert lay.groups[lay.group_of(5, "dp")] == (5, 13, 21, 29)  # tp 1, pp 1
    with pytest.raises(ValueError, match="ep .* must divide dp"):
        RankLayout(dp=3, ep=2)


def test_bad_parallelism_names_the_field():
    with pytest.raises(ValueError, match="zero must be 0, 1, 2 or 3"):
        Parallelism(zero=4)
    with pytest.raises(ValueError, match="unknown settings \\['sp'\\]"):
        Parallelism.from_dict({"sp": 2})
    with pytest.raises(ValueError, match="pp \\(3\\) must divide the layers"):
        llm_schedule(SMALL, Parallelism(pp=3))


@pytest.mark.slow
def test_llama7b_on_1024_gpus_builds_and_validates():
    s = llm_schedule(LLAMA, Parallelism(dp=128, tp=8, micro_batches=4, seq_len=2048))
    assert s.n_ranks == 1024
    validate(s)


def test_validation_catches_a_mismatched_collective():
    s = llm_schedule(SMALL, Parallelism(dp=2, seq_len=64))
    i = int(np.flatnonzero((s.rank == 1) & (s.tclass == C.GRADIENT))[0])
    s.nbytes[i] += 4
    with pytest.raises(ScheduleError, match="collective #0 does not match"):
        validate(s)


def test_tied_embeddings_over_a_pipeline_reduce_between_first_and_last_stage():
    gpt = TransformerConfig("tiny-gpt", hidden=128, layers=4, heads=4, ffn=512, vocab=1000,
                            gated=False, bias=True, norm_params=2, tied=True, positions=64)
    par = Parallelism(dp=2, tp=2, pp=2, seq_len=64)
    s = validate(llm_schedule(gpt, par))
    embed = [g for g, n in enumerate(s.group_names) if n.startswith("embed")]
    ops = np.flatnonzero(np.isin(s.group, embed))
    # one all-reduce on every rank of the first and last stage, of its vocabulary shard
    assert sorted(s.rank[ops].tolist()) == list(range(8))
    assert set(s.nbytes[ops]) == {gpt.vocab * gpt.hidden // par.tp * par.grad_bytes}
    assert {s.groups[g] for g in s.group[ops]} == {(0, 2), (1, 3), (4, 6), (5, 7)}
    # with one stage the head shares the embedding: no copy, no extra all-reduce
    one = validate(llm_schedule(gpt, Parallelism(dp=2, seq_len=64)))
    assert not np.isin(one.group, [g for g, n in enumerate(one.group_names)
                                   if n.startswith("embed")]).any()
    assert _dp_grad_bytes(one, 0) == par.grad_bytes * gpt.params()
