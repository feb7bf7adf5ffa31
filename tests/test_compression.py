"""Top-k sparsification and DC2's delay-aware ratio control: the pieces directly, then in the
agents' collectives over an ideal channel (compared with a plain numpy top-k)."""
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from dlcp_emu.host.agent import Worker
from dlcp_emu.host.parameter_server import ParameterServer
from dlcp_emu.host.compression import (
    CompressionSpec,
    Dc2Controller,
    qsgd_pack,
    randomk_pack,
    sparse_pays,
    topk_pack,
    unpack_into,
    wire_ns_per_byte,
)
from dlcp_emu.host.plan import gradient, make_plan
from test_agent import run, small_trace
from workloads import split_ranges
from tiers import examples


def topk_dense(x, ratio):
    """Reference: x with all but its ceil(ratio n) largest |values| set to zero."""
    k = min(x.size, max(1, math.ceil(ratio * x.size)))
    out = np.zeros_like(x)
    keep = np.argsort(-np.abs(x), kind="stable")[:k]
    out[keep] = x[keep]
    return out


@settings(max_examples=examples(300), deadline=None)
@given(st.integers(1, 2000), st.integers(0, 2**32 - 1), st.floats(0.0005, 1.0),
       st.sampled_from([1e-8, 1.0, 1e4]))
def test_topk_keeps_exactly_the_largest_values(n, seed, ratio, scale):
    # Heavy-tailed values of both signs, like gradients; no two of the same magnitude.
    rng = np.random.default_rng(seed)
    x = (rng.standard_cauchy(n) * scale).astype(np.float32)
    assume(np.unique(np.abs(x)).size == n)
    msg, kept, total = topk_pack(x, ratio)
    region = np.full_like(x, 7.0)
    if msg is None:
        # Not worth it (8 bytes a kept value): sent dense, whole.
        assert not sparse_pays(x.size, ratio)
        np.testing.assert_array_equal(region, 7.0)
        assert kept == total
        return
    assert msg.nbytes < x.nbytes
    unpack_into(region, msg, add=False)
    np.testing.assert_array_equal(region, topk_dense(x, ratio))
    assert kept == pytest.approx(float(np.dot(region, region)), rel=1e-4, abs=1e-6)
    assert total == pytest.approx(float(np.dot(x, x)), rel=1e-4, abs=1e-6)
    # Added in, it adds the kept values and leaves the rest.
    acc = np.ones_like(x)
    unpack_into(acc, msg, add=True)
    np.testing.assert_allclose(acc, 1.0 + topk_dense(x, ratio))


def test_sparse_only_below_half():
    assert sparse_pays(1000, 0.1) and sparse_pays(1000, 0.49)
    assert not sparse_pays(1000, 0.5) and not sparse_pays(1000, 1.0) and not sparse_pays(1, 0.1)


def test_a_message_of_the_wrong_shape_is_refused():
    region = np.zeros(100, dtype=np.float32)
    with pytest.raises(ValueError, match="neither dense nor sparse"):
        unpack_into(region, np.zeros(10, dtype=np.float32), add=True)
    msg, _, _ = topk_pack(np.arange(200, dtype=np.float32), 0.1)
    with pytest.raises(ValueError, match="neither dense nor sparse"):
        unpack_into(region, msg, add=True)        # made for 200 values, not 100
    bad = msg.copy()
    bad.view(np.int32)[1] = 500
    with pytest.raises(ValueError, match="outside"):
        unpack_into(np.zeros(200, dtype=np.float32), bad, add=True)


def test_dc2_cuts_on_delay_and_grows_back():
    spec = CompressionSpec("dc2", min_ratio=0.05, target_delay_ns=1000, increase=0.1, decrease=0.5)
    c = Dc2Controller(spec)
    assert c.ratio == 1.0
    c.on_sample(2000, 0)                          # twice the target: cut by 0.5 * (1 - 1/2)
    assert c.ratio == pytest.approx(0.75)
    for _ in range(50):
        c.on_sample(1e9, 0)
    assert c.ratio == 0.05                        # never below min_ratio
    c.on_sample(500, 0)
    assert c.ratio == pytest.approx(0.15)
    for _ in range(20):
        c.on_sample(0, 0)
    assert c.ratio == 1.0                         # never above 1


def test_delay_is_beyond_serialisation_at_the_link_rate():
    per_byte = wire_ns_per_byte(10e9, 1500)
    # 1424 gradient bytes a 1500-byte packet, 1538 bytes on the wire: 1230.4 ns at 10 Gbit/s.
    assert per_byte * 1424 == pytest.approx(1230.4)
    c = Dc2Controller(CompressionSpec("dc2", target_delay_ns=1e6), per_byte)
    assert c.on_sample(2e6, 1424 * 1000) == pytest.approx(2e6 - 1230.4e3)
    assert c.ratio == 1.0                         # under the target


def test_fixed_and_none_never_move():
    for spec, ratio in ((CompressionSpec("fixed", ratio=0.2), 0.2), (CompressionSpec(), 1.0),
                        (CompressionSpec("fixed", ratio=0.2, method="qsgd"), 1.0)):
        c = Dc2Controller(spec)
        for d in (0, 1e12, 5):
            c.on_sample(d, 0)
        assert c.ratio == ratio


@pytest.mark.parametrize("kw, field", [(dict(mode="zip"), "mode"), (dict(ratio=0.0), "ratio"),
                                       (dict(min_ratio=2.0), "min_ratio"),
                                       (dict(target_delay_ns=0), "target_delay_ns")])
def test_bad_settings_name_the_field(kw, field):
    with pytest.raises(ValueError, match=field):
        CompressionSpec(**kw)


# -- in the collectives ---------------------------------------------------------------------

def _plan():
    trace = small_trace()
    return trace, make_plan(trace, fusion_bytes=10_000, fusion_cycle_ms=3.0)


def test_ring_of_two_reduces_the_topk_of_the_topk():
    """Rank 0 owns chunk 1 after reduce-scatter: top-k(g0 + top-k(g1)) over chunk 1, which it
    then sends to rank 1; chunk 0 the other way round. Both end with the same buffer."""
    trace, plan = _plan()
    spec = CompressionSpec("fixed", ratio=0.1)
    workers = {r: Worker(r, 2, plan, trace, "ring", iterations=2, keep_results=True,
                         compression=spec) for r in range(2)}
    run(workers)
    assert all(w.done for w in workers.values())
    for it in range(2):
        for b in plan.buckets:
            g = [gradient(trace, plan, b, r, it, 1) for r in range(2)]
            half = b.nbytes // 8                       # chunk 0: floats [0, half)
            expected = np.concatenate([
                topk_dense(g[1][:half] + topk_dense(g[0][:half], 0.1), 0.1),
                topk_dense(g[0][half:] + topk_dense(g[1][half:], 0.1), 0.1)])
            for w in workers.values():
                got, lost = w.results[(it, b.index)]
                assert lost == []
                np.testing.assert_allclose(got, expected, rtol=1e-6)
    for w in workers.values():
        for t in w.tensors:
            assert t.ratio == 0.1
            assert t.sent_bytes < 0.25 * t.dense_bytes      # 8 bytes for 10% of 4-byte values
            assert 0 < t.energy_kept < 1


def test_parameter_server_answers_at_the_ratio_pushed():
    trace, plan = _plan()
    n, ps = 3, (3,)
    spec = CompressionSpec("fixed", ratio=0.2)
    agents = {r: Worker(r, n, plan, trace, "ps", iterations=1, ps_ranks=ps, keep_results=True,
                        compression=spec) for r in range(n)}
    agents[3] = ParameterServer(3, range(n), ps, plan, iterations=1)
    run(agents)
    assert all(a.done for a in agents.values())
    for b in plan.buckets:
        pushed = sum(topk_dense(gradient(trace, plan, b, r, 0, 1), 0.2) for r in range(n))
        # The server infers the ratio from k/n of what it got: ceil(0.2 n)/n, the same k.
        expected = topk_dense(pushed, 0.2)
        for r in range(n):
            got, _ = agents[r].results[(0, b.index)]
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("latency_ns, low", [(20_000, False), (400_000, True)])
def test_dc2_compresses_when_the_network_is_slow(latency_ns, low):
    """Same target, two channel latencies: above the target every bucket's ring delay cuts the
    ratio, to min_ratio; under it the ratio stays at 1 (no compression)."""
    trace, plan = _plan()
    spec = CompressionSpec("dc2", min_ratio=0.05, target_delay_ns=1e6)
    workers = {r: Worker(r, 4, plan, trace, "ring", iterations=3, compression=spec)
               for r in range(4)}
    run(workers, latency_ns=latency_ns)
    assert all(w.done for w in workers.values())
    for w in workers.values():
        delays = [t.delay_ns for t in w.tensors]
        assert all(d >= 6 * latency_ns for d in delays)      # 6 ring steps, each a latency
        last = w.tensors[-1]
        if low:
            assert last.ratio == 0.05 and last.sent_bytes < last.dense_bytes
        else:
            assert all(t.ratio == 1.0 and t.sent_bytes == t.dense_bytes for t in w.tensors)


def test_randomk_keeps_k_values_where_they_were():
    x = np.random.default_rng(1).standard_normal(1000).astype(np.float32)
    msg, kept, total = randomk_pack(x, 0.05, np.random.default_rng(7))
    region = np.zeros_like(x)
    unpack_into(region, msg, add=False)
    nz = np.flatnonzero(region)
    assert nz.size == 50 and np.array_equal(region[nz], x[nz])
    assert kept == pytest.approx(float(np.dot(x[nz], x[nz])), rel=1e-5)
    other, _, _ = randomk_pack(x, 0.05, np.random.default_rng(8))
    assert not np.array_equal(other, msg)                      # another draw, other values
    top, _, _ = topk_pack(x, 0.05)
    assert kept < float(np.dot(top[51:], top[51:]))            # top-k keeps more energy


def test_qsgd_is_unbiased_within_one_level_and_a_quarter_of_the_bytes():
    x = (np.random.default_rng(2).standard_cauchy(4001) * 1e-3).astype(np.float32)
    scale = float(np.abs(x).max())
    draws = []
    for seed in range(400):
        msg, kept, total = qsgd_pack(x, np.random.default_rng(seed))
        assert msg.size == 2 + 1001 and msg.nbytes < 0.26 * x.nbytes
        region = np.zeros_like(x)
        unpack_into(region, msg, add=False)
        assert np.abs(region - x).max() <= scale / 127 * 1.0001   # rounded to a neighbouring level
        assert 0.9 < kept / total <= 1.0
        draws.append(region)
    mean = np.mean(draws, axis=0)
    # the mean of 400 draws is within a few standard errors (level / 2 / sqrt(400)) of x
    assert np.abs(mean - x).max() < 4 * scale / 127 / 2 / 20
    acc = np.ones_like(x)
    unpack_into(acc, msg, add=True)
    np.testing.assert_allclose(acc, 1.0 + region, rtol=1e-6)
    with pytest.raises(ValueError, match="quantised message"):
        unpack_into(np.zeros(4000, dtype=np.float32), msg, add=True)


def test_error_feedback_sends_next_time_what_was_left_out():
    """Ring of two with top-k and error feedback: each rank adds to a range what its last
    message for that range left out (reduce-scatter sender and all-gather owner alike)."""
    trace, plan = _plan()
    spec = CompressionSpec("fixed", ratio=0.1, error_feedback=True)
    workers = {r: Worker(r, 2, plan, trace, "ring", iterations=3, keep_results=True,
                         compression=spec) for r in range(2)}
    run(workers)
    assert all(w.done for w in workers.values())
    for b in plan.buckets:
        half = b.nbytes // 8
        # residuals: what rank r's reduce-scatter send (e) and all-gather send (E) left out
        e = {0: np.zeros(half, np.float32), 1: np.zeros(b.nbytes // 4 - half, np.float32)}
        E = {1: np.zeros(half, np.float32), 0: np.zeros(b.nbytes // 4 - half, np.float32)}
        for it in range(3):
            g = [gradient(trace, plan, b, r, it, 1) for r in range(2)]
            parts = []
            for sender, owner, rng in ((0, 1, slice(0, half)), (1, 0, slice(half, None))):
                s = g[sender][rng] + e[sender]
                sent = topk_dense(s, 0.1)
                e[sender] = s - sent
                v = g[owner][rng] + sent + E[owner]
                out = topk_dense(v, 0.1)
                E[owner] = v - out
                parts.append(out)
            expected = np.concatenate(parts)
            for w in workers.values():
                got, _ = w.results[(it, b.index)]
                np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-9)


def test_error_feedback_is_kept_by_the_owner_of_a_range_not_by_its_forwarders():
    """Ring of three, rank 1 keeping 5% where the others keep 10%: when it forwards another
    rank's reduced range in all-gather it cuts it further, but that cut is not its to send
    again later; its all-gather memory covers only the range it owns (chunk 2)."""
    trace, plan = _plan()
    specs = {r: CompressionSpec("fixed", ratio=0.05 if r == 1 else 0.1, error_feedback=True)
             for r in range(3)}
    workers = {r: Worker(r, 3, plan, trace, "ring", iterations=2, compression=specs[r])
               for r in range(3)}
    run(workers)
    assert all(w.done for w in workers.values())
    for b in plan.buckets:
        start, stop = (x // 4 for x in split_ranges(b.nbytes, 3)[2])
        memory = workers[1].residuals[(b.index, 1)]
        assert np.any(memory[start:stop])
        assert not np.any(memory[:start]) and not np.any(memory[stop:])
