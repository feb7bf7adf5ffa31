"""Host agents replayed over an ideal message channel (fixed latency, optional zero-fill):
the collectives compute the exact sum, the timeline obeys the dependencies."""
import numpy as np
from workloads import Transfer, ds_sync_groups

from dlcp_emu.scale import Scale
import pandas as pd
import pytest

from dlcp_emu.host.agent import Worker
from dlcp_emu.host.parameter_server import ParameterServer
from dlcp_emu.host.plan import gradient, make_plan
from dlcp_emu.sim import EventLoop
from workloads import Trace, get_model
from workloads.magnitudes import draws, lognormal_layers


def small_trace(n_layers=6):
    layers = pd.DataFrame({
        "layer_id": range(n_layers), "name": [f"l{i}" for i in range(n_layers)],
        "grad_bytes": [4000 * (i + 1) for i in range(n_layers)],
        "backward_us": [2000.0] * n_layers, "forward_us": [1000.0] * n_layers,
        "mag_dist": ["lognormal"] * n_layers, "mag_mu": [-6.0] * n_layers, "mag_sigma": [1.0] * n_layers})
    return Trace("small", layers, batch_time_us=3000.0 * n_layers).validate()


def run(agents, latency_ns=50_000, drop=None):
    """Deliver every message after latency_ns; `drop(msg)` may name a byte range to zero-fill."""
    loop = EventLoop()

    def pump(rank):
        a = agents[rank]
        for m in a.take_sends():
            data, lost = m.data.copy(), []
            if drop is not None and (r := drop(rank, m)) is not None:
                data.view(np.uint8)[r[0]:r[1]] = 0
                lost = [r]
            loop.at(loop.now + latency_ns, deliver, m.dst, rank, m.iteration, m.tensor_id, data, lost)
        t = a.next_timer()
        if t is not None and getattr(a, "_armed", None) != t:
            a._armed = t
            loop.at(t, fire, rank, t)

    def fire(rank, t):
        a = agents[rank]
        if a.next_timer() == t:
            a.on_timer(loop.now)
        pump(rank)

    def deliver(dst, src, it, tid, data, lost):
        agents[dst].on_message(src, it, tid, data, lost, loop.now)
        pump(dst)

    for r, a in agents.items():
        a.start(0)
        pump(r)
    loop.run(max_events=1_000_000)
    return loop


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_ring_allreduce_gives_the_exact_sum_on_every_rank(n):
    trace = small_trace()
    plan = make_plan(trace, fusion_bytes=10_000, fusion_cycle_ms=3.0)
    workers = {r: Worker(r, n, plan, trace, "ring", iterations=2, keep_results=True) for r in range(n)}
    run(workers)
    assert all(w.done for w in workers.values())
    for it in range(2):
        for b in plan.buckets:
            expected = sum(gradient(trace, plan, b, r, it, 1).astype(np.float64) for r in range(n))
            for w in workers.values():
                got, lost = w.results[(it, b.index)]
                assert lost == []
                np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_gradients_drawn_before_the_start_are_the_ones_drawn_on_the_way():
    """`pregenerate` (what an emulated host does before the common start) changes no value:
    the same sums, bit for bit, and every drawn array is used once; past its budget it draws
    nothing."""
    trace = small_trace()
    plan = make_plan(trace, fusion_bytes=10_000, fusion_cycle_ms=3.0)
    runs = []
    for budget in (None, 1 << 30, 1):
        workers = {r: Worker(r, 3, plan, trace, "ring", iterations=2, keep_results=True) for r in range(3)}
        if budget is not None:
            drawn = [w.pregenerate(budget) for w in workers.values()]
            assert drawn == ([2 * sum(b.nbytes for b in plan.buckets)] * 3 if budget > 1 else [0] * 3)
        run(workers)
        assert all(w.done and not w.ready_gradients for w in workers.values())
        runs.append({(r, k): v[0].tobytes() for r, w in workers.items() for k, v in w.results.items()})
    assert runs[0] == runs[1] == runs[2] and len(runs[0]) == 3 * 2 * len(plan.buckets)


def test_parameter_server_gives_the_exact_sum():
    trace = small_trace()
    plan = make_plan(trace)
    n, ps = 3, (3, 4)
    agents = {r: Worker(r, n, plan, trace, "ps", iterations=2, ps_ranks=ps, keep_results=True) for r in range(n)}
    agents.update({p: ParameterServer(p, range(n), ps, plan, iterations=2) for p in ps})
    run(agents)
    assert all(a.done for a in agents.values())
    for b in plan.buckets:
        expected = sum(gradient(trace, plan, b, r, 1, 1) for r in range(n))
        for r in range(n):
            np.testing.assert_allclose(agents[r].results[(1, b.index)][0], expected, rtol=1e-5, atol=1e-6)


def test_ds_sync_sums_within_each_group_and_groups_change():
    trace = small_trace()
    plan = make_plan(trace)
    n, g = 4, 2
    workers = {r: Worker(r, n, plan, trace, "ds-sync", iterations=3, group_size=g, keep_results=True)
               for r in range(n)}
    run(workers)
    groups_seen = set()
    for it in range(3):
        groups = {r: next(grp for grp in ds_sync_groups(n, g, it, 1) if r in grp) for r in range(n)}
        groups_seen.add(tuple(sorted(set(groups.values()))))
        for r, group in groups.items():
            for b in plan.buckets:
                expected = sum(gradient(trace, plan, b, m, it, 1) for m in group)
                np.testing.assert_allclose(workers[r].results[(it, b.index)][0], expected, rtol=1e-5, atol=1e-6)
    assert len(groups_seen) > 1


def test_zero_filled_bytes_are_accounted_and_the_rest_is_exact():
    trace = small_trace()
    plan = make_plan(trace, fusion_bytes=0)
    n = 3

    def drop(src, m):   # lose 8 bytes of every reduce-scatter message from rank 1
        return (4, 12) if src == 1 and (m.tensor_id >> 15 & 1) == 0 and m.data.nbytes >= 12 else None

    workers = {r: Worker(r, n, plan, trace, "ring", iterations=1, keep_results=True) for r in range(n)}
    run(workers, drop=drop)
    for b in plan.buckets:
        expected = sum(gradient(trace, plan, b, r, 0, 1) for r in range(n))
        lost_anywhere = np.zeros(b.nbytes // 4, bool)
        for w in workers.values():
            for a, z in w.results[(0, b.index)][1]:
                lost_anywhere[a // 4:z // 4] = True
        assert lost_anywhere.any()
        for w in workers.values():
            got = w.results[(0, b.index)][0]
            np.testing.assert_allclose(got[~lost_anywhere], expected[~lost_anywhere], rtol=1e-5, atol=1e-6)
        rec = [t for w in workers.values() for t in w.tensors if t.bucket == b.index]
        assert sum(t.lost_bytes for t in rec) == 8 * sum(
            1 for w in workers.values() for a, z in w.results[(0, b.index)][1])


def test_timeline_overlaps_backward_and_waits_for_updates():
    trace = small_trace()
    plan = make_plan(trace, Scale(dilation=2.0), fusion_bytes=0)
    workers = {r: Worker(r, 2, plan, trace, "ring", iterations=3) for r in range(2)}
    run(workers, latency_ns=3_000_000)    # slow network: communication shows in the iteration
    w = workers[0]
    its = w.iteration_records
    assert [i.iteration for i in its] == [0, 1, 2]
    assert plan.compute_ns == 2 * 6 * 3_000_000
    for a, b in zip(its, its[1:]):
        assert b.start_ns - a.start_ns >= plan.compute_ns        # compute is a floor
    # Iteration 1 waits for iteration 0's updates (front layers' bucket is synchronised last),
    # so the network shows between the starts of iterations 1 and 2.
    assert its[2].start_ns - its[1].start_ns > plan.compute_ns
    # The first bucket (last layers) is ready before backward ends: communication overlaps.
    first = min(w.tensors, key=lambda t: t.ready_ns)
    assert first.ready_ns < its[0].backward_end_ns
    assert all(t.done_ns >= t.ready_ns for t in w.tensors)


def test_real_trace_plan_keeps_bucket_structure_when_scaled():
    trace = get_model("resnet50")
    full, small = make_plan(trace), make_plan(trace, Scale(byte_scale=0.01))
    assert [b.layer_ids for b in full.buckets] == [b.layer_ids for b in small.buckets]
    assert small.bytes_per_iteration == pytest.approx(full.bytes_per_iteration * 0.01, rel=0.01)


@pytest.mark.parametrize("n, nbytes", [(2, 4000), (3, 4004), (5, 12), (8, 4 * 1001)])
def test_each_ranks_ring_steps_are_its_share_of_the_schedule(n, nbytes):
    """The steps a worker runs are the ring's, as the textbook gives them: in reduce-scatter
    step s rank r sends chunk (r - s) mod n to r + 1 and receives chunk (r - 1 - s) mod n from
    r - 1; in all-gather step s it sends chunk (r + 1 - s) mod n and receives (r - s) mod n."""
    from dlcp_emu.host.plan import BucketPlan
    from workloads import split_ranges
    trace = small_trace()
    plan = make_plan(trace)
    bucket = BucketPlan(0, 0, (0,), (nbytes,), nbytes, 0)
    chunks = split_ranges(nbytes, n)
    for r in range(n):
        w = Worker(r, n, plan, trace)
        mine = w.pattern.steps(r, bucket.nbytes, workers=n)
        assert len(mine) == 2 * (n - 1)
        for k, (phase, step, send, recv) in enumerate(mine):
            s_ = k if k < n - 1 else k - (n - 1)
            c_send = (r - s_) % n if k < n - 1 else (r + 1 - s_) % n
            c_recv = (c_send - 1) % n
            assert (phase, step) == (0 if k < n - 1 else 1, k)
            live = {c for c, (a, b) in enumerate(chunks) if b > a}
            assert send == (Transfer(r, (r + 1) % n, c_send, *chunks[c_send]) if c_send in live else None)
            assert recv == (Transfer((r - 1) % n, r, c_recv, *chunks[c_recv]) if c_recv in live else None)


def test_gradients_follow_the_traces_magnitude_model():
    """Each layer's values: |g| drawn from the layer's distribution (log|g| ~ N(mu, sigma) for
    lognormal ones), signs balanced, float32; the same (seed, rank, iteration, bucket) gives
    the same values, another rank others."""
    trace = get_model("resnet50")
    plan = make_plan(trace, Scale(byte_scale=0.1), fusion_bytes=1 << 40, fusion_cycle_ms=1e6)
    (bucket,) = plan.buckets
    g = gradient(trace, plan, bucket, 0, 0, 1)
    assert g.dtype == np.float32 and g.nbytes == bucket.nbytes
    assert np.array_equal(g, gradient(trace, plan, bucket, 0, 0, 1))
    assert not np.array_equal(g, gradient(trace, plan, bucket, 1, 0, 1))
    assert abs(np.mean(g > 0) - 0.5) < 0.01
    layers = trace.layers.set_index("layer_id")
    start = 0
    for lid, size in zip(bucket.layer_ids, bucket.sizes):
        n = size // 4
        if n >= 20_000 and layers.loc[lid, "mag_dist"] == "lognormal":
            logs = np.log(np.abs(g[start:start + n]).astype(np.float64))
            mu, sigma = layers.loc[lid, "mag_mu"], layers.loc[lid, "mag_sigma"]
            assert abs(logs.mean() - mu) < 0.05 * max(1, abs(mu)), lid
            assert abs(logs.std() - sigma) < 0.05 * sigma, lid
        start += n
    assert start == g.size


def test_gradients_of_normal_and_uniform_layers():
    layers = pd.DataFrame({
        "layer_id": range(3), "name": ["a", "b", "c"], "grad_bytes": [400_000] * 3,
        "backward_us": [2000.0] * 3, "forward_us": [1000.0] * 3,
        "mag_dist": ["lognormal", "normal", "uniform"], "mag_mu": [-6.0, 0.01, 0.02],
        "mag_sigma": [1.0, 0.002, 0.005]})
    trace = Trace("mixed", layers, batch_time_us=9000.0).validate()
    plan = make_plan(trace, fusion_bytes=1 << 40, fusion_cycle_ms=1e6)
    (bucket,) = plan.buckets
    g = np.abs(gradient(trace, plan, bucket, 0, 0, 1).astype(np.float64)).reshape(3, -1)
    by_layer = dict(zip(bucket.layer_ids, g))
    assert abs(np.log(by_layer[0]).mean() + 6.0) < 0.05
    assert abs(by_layer[1].mean() - 0.01) < 0.0005 and abs(by_layer[1].std() - 0.002) < 0.0002
    half = 0.005 * np.sqrt(3)
    assert by_layer[2].min() >= 0.02 - half - 1e-6 and by_layer[2].max() <= 0.02 + half + 1e-6
    assert abs(by_layer[2].mean() - 0.02) < 0.0005


def test_lognormal_layers_are_drawn_as_the_general_path_draws_them():
    """A bucket whose layers are all lognormal takes a path with each layer's parameters on
    its slice: the very values (bit for bit) the general path draws from the same stream."""
    rng = np.random.default_rng(11)
    for _ in range(20):
        k = int(rng.integers(1, 12))
        counts = rng.integers(0, 3000, k)
        mu = rng.normal(-4, 2, k).astype(np.float32)
        sigma = rng.uniform(0.1, 2, k).astype(np.float32)
        seed = int(rng.integers(1 << 30))
        fast = lognormal_layers(mu, sigma, counts, np.random.default_rng(seed))
        general = draws(np.zeros(int(counts.sum()), np.int64), np.repeat(mu, counts),
                       np.repeat(sigma, counts), np.random.default_rng(seed))
        assert fast.dtype == np.float32 and fast.tobytes() == general.tobytes()
