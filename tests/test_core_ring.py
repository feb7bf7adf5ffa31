"""A payload-free ring's collective steps in the core (dlcp_native/src/host/worker_collectives.cpp,
sim/core_ring.py) against the Python worker that is its oracle (`host.agent.Worker`, stepping
every message), run for run over the same core endpoints: the same summaries and tables,
packet header by packet header, for fifo and dlcp (bounded loss acting), 2 to 16 workers,
several buckets, background flows and DS-Sync groups; and the core calls Python once a
collective and per compute timer, not once a message."""
import collections

import pytest

from dlcp_emu.experiment.engine import choose_ring_collectives
from dlcp_emu.experiment.spec import load_spec
from dlcp_emu.sim.native import NativeSimNetwork

from agent_twins import assert_core_runs_as_python, simulate

TABLES = ("iterations", "tensors", "deliveries", "ports", "queues", "background", "packets")
# A loss bound of 20%: bounded loss gives up chunks of these small messages (1% of one would be
# less than a chunk), so the chunks' drawn magnitudes decide what is lost.
LOSSY = {"transport.loss_bound": 0.2}
DEFAULT = {"byte_scale": 0.01, "workload.iterations": 2, **LOSSY}   # 4 buckets, background flows on
FAT_TREE = {"byte_scale": 0.002, "mtu": 1500, "workload.workers": 16, "topology.k": 4, "workload.iterations": 2,
            "workload.fusion_bytes": 25_000_000, "workload.fusion_cycle_ms": 5.0, **LOSSY}
CASES = {   # (example, preset, fields)
    "2-workers-dlcp": ("examples/default.toml", "dlcp", {**DEFAULT, "workload.workers": 2}),
    "4-workers-fifo": ("examples/default.toml", "fifo", DEFAULT),
    "6-workers-dlcp": ("examples/default.toml", "dlcp", {**DEFAULT, "workload.workers": 6}),
    "ds-sync-dlcp": ("examples/default.toml", "dlcp", {**DEFAULT, "workload.workers": 6,
                                                        "workload.pattern": "ds-sync", "workload.group_size": 3}),
    "16-workers-dlcp": ("examples/fat-tree-1024-sim.toml", "dlcp", FAT_TREE),
    "16-workers-fifo": ("examples/fat-tree-1024-sim.toml", "fifo", FAT_TREE),
}


def spec_of(path, fields):
    spec = load_spec(path).with_field("payload", "sizes").with_field("packet_records", True)
    for name, value in fields.items():
        spec = spec.with_field(name, value)
    return spec


# The fat tree's 16 ranks and fifo are compared in `make test`; the fast tier compares 2 and 6 ranks
# and DS-Sync's groups under dlcp, and runs the fat tree's in the core
# (test_the_core_calls_python_once_a_collective_not_once_a_message).
SLOW = {"16-workers-dlcp", "16-workers-fifo", "4-workers-fifo"}


@pytest.mark.parametrize("path,preset,fields", [
    pytest.param(*case, id=name, marks=[pytest.mark.slow] * (name in SLOW)) for name, case in CASES.items()])
def test_the_core_collectives_give_the_python_workers_run(path, preset, fields, tmp_path):
    assert_core_runs_as_python(spec_of(path, fields), preset, tmp_path, "ring collectives", TABLES)


def test_the_cases_lose_bytes_over_several_buckets(tmp_path):
    """The comparison above is not of quiet runs: bounded loss gives up gradient bytes (so the
    chunks' drawn classes and droppable flags decide what is lost), over several buckets a
    rank, with background flows sharing the links."""
    path, preset, fields = CASES["6-workers-dlcp"]
    s, f = simulate(spec_of(path, fields), preset, tmp_path, "core")
    assert f["tensors"]["lost_bytes"].sum() > 0
    assert f["packets"]["drop_reason"].notna().any()
    assert f["tensors"].groupby(["rank", "iteration"]).size().min() >= 2
    assert len(f["background"]) > 0


def test_the_core_calls_python_once_a_collective_not_once_a_message(tmp_path, monkeypatch):
    """Count the core's calls of the workers' Python (the AGENT entries its loop hands out): with
    the collectives in the core, at most one a collective and one a compute timer of each rank;
    with the Python worker, one or more a message delivered."""
    calls = collections.Counter()
    on_agent = NativeSimNetwork.on_agent

    def counting(self, sid, turn):
        def counted(now):
            calls[sid] += 1
            return turn(now)
        on_agent(self, sid, counted)

    monkeypatch.setattr(NativeSimNetwork, "on_agent", counting)
    path, preset, fields = CASES["16-workers-dlcp"]
    spec = spec_of(path, {**fields, "workload.iterations": 1})
    s, f = simulate(spec, preset, tmp_path, "core")
    ranks, tensors = spec.workload["workers"], len(f["tensors"])
    messages = len(f["deliveries"])
    assert s["completed"] and messages == tensors * 2 * (ranks - 1)
    # per rank: a call when each collective ends, and one per compute timer (forward, each
    # bucket's release, the end of backward): a few a bucket, far below 30 messages a bucket
    assert sum(calls.values()) <= 3 * tensors + 2 * ranks
    calls.clear()
    simulate(spec, preset, tmp_path, "python")
    assert sum(calls.values()) >= messages


def test_where_the_collectives_run_is_chosen_and_said():
    auto = {"endpoints_in_core": True, "payload": "sizes", "drop_order": "magnitude"}
    assert choose_ring_collectives("auto", **auto) == ("core", "ring collectives in the core")
    assert choose_ring_collectives("python", **auto) == ("python", "ring collectives in Python (asked for)")
    assert choose_ring_collectives("auto", **(auto | {"payload": "values"})) == \
        ("python", "ring collectives in Python (payload 'values': the worker sums, compresses or trains on what arrives)")
    assert choose_ring_collectives("auto", **(auto | {"drop_order": "random"}))[0] == "python"
    assert choose_ring_collectives("auto", **(auto | {"endpoints_in_core": False}))[0] == "python"
    assert choose_ring_collectives("auto", **auto, jobs=2)[0] == "python"
    with pytest.raises(ValueError, match="agents: 'core' cannot run here: payload 'values'"):
        choose_ring_collectives("core", **(auto | {"payload": "values"}))


def test_the_benchmark_runs_the_ring_both_ways_alike():
    from dlcp_emu.tools import bench_sim
    r = bench_sim.ring(k=4, byte_scale=0.01)
    assert r["identical"] and r["core"]["packet_hops"] == r["python"]["packet_hops"] > 0 and r["ratio"] > 0


def test_a_collective_that_does_not_fit_is_refused_naming_what(tmp_path):
    """What the core is handed is checked: each step's magnitudes, its byte ranges, a sender
    made for each destination, one collective at a time."""
    import numpy as np

    from dlcp_emu.sim.run import build
    path, preset, fields = CASES["2-workers-dlcp"]
    _, _, _, hosts = build(spec_of(path, fields), preset, agents="core")
    core, sid = hosts.core, hosts.stack_id[(0, 0)]
    step = [[0, 0, 1, 0, 8000, 1, 0, 8000]]   # phase, tensor id, send to 1 [0, 8000), receive from 1

    def begin(steps=step, ptr=(0, 6), mags=np.ones(6)):
        return core.begin_collective(sid, 0, 0, 1, np.array(steps), np.array(ptr), np.asarray(mags, float), 0)

    with pytest.raises(ValueError, match="collective: mag_ptr must be one offset a step and one more"):
        begin(ptr=(0, 5))
    with pytest.raises(ValueError, match="step 0: a send needs a non-empty byte range and magnitudes"):
        begin(steps=[[0, 0, 1, 8000, 8000, 1, 0, 8000]])
    with pytest.raises(ValueError, match="collective: steps must be an \\(n, 8\\) array"):
        begin(steps=[[0, 0, 1, 0, 8000, 1, 0]])
    with pytest.raises(ValueError, match="rank 0: no sender to rank 1"):
        begin()
    hosts.jobs[0][0].sender(1)
    with pytest.raises(ValueError, match="step 0's message of 8000 bytes needs one magnitude per 1424-byte chunk, got 3"):
        begin(ptr=(0, 3), mags=np.ones(3))
    assert begin() is None   # sent, waiting for rank 1's message
    with pytest.raises(ValueError, match="rank 0: a collective is running"):
        begin()
