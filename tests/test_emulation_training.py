"""Training replayed on Mininet: 4 workers (ring all-reduce) and 4 workers + 1 parameter
server over a leaf-spine with the dlcp preset and transport, real packets, real float32
values: every rank ends with the numpy sum of all ranks' gradients wherever nothing was
zero-filled, zero-filled bytes are accounted, and every iteration's timing is recorded."""
import numpy as np
import pytest

from dlcp_emu.emu.run import EmuBackend
from dlcp_emu.experiment.run import run
from dlcp_emu.emu.run_records import host_paths, read_host_records
from workloads import trace_of
from dlcp_emu.host.plan import gradient, make_plan
from dlcp_emu.experiment.spec import parse_spec

pytestmark = [pytest.mark.root, pytest.mark.slow]

ITERATIONS = 3


def spec_for(pattern, transport, mtu, engine="auto"):
    return parse_spec({
        "name": f"t-{pattern}", "seed": 3, "engine": engine, "time_dilation": 4.0, "byte_scale": 0.002, "mtu": mtu,
        "time_limit_s": 90,
        "topology": {"kind": "leaf-spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 3,
                     "host_rate_bps": 20e9, "oversubscription": 1.5},
        "workload": {"model": "resnet50", "pattern": pattern, "workers": 4, "ps": 1,
                     "iterations": ITERATIONS},
        "transport": {"kind": transport, "loss_bound": 0.01},
        "switch": {"preset": "dlcp"}})


@pytest.mark.parametrize("pattern, transport, mtu, engine", [
    ("ring", "dlcp", 1500, "auto"), ("ps", "dlcp", 1500, "auto"), ("ring", "tcp", 1500, "auto"),
    ("ring", "dlcp", 9000, "auto"), ("ring", "dlcp", 1500, "python")])
def test_training_sums_are_exact_where_delivered(tmp_path, pattern, transport, mtu, engine):
    spec = spec_for(pattern, transport, mtu, engine)
    summary, tables = run(spec, EmuBackend(), "dlcp", tmp_path, log=lambda m: None, keep_results=True)
    assert summary["completed"], (summary.get("stopped_because"), summary.get("host_exits"))
    # The hosts' and switches' data planes: compiled unless the Python ones are asked for.
    compiled = engine != "python"
    hosts = {e for e, _ in summary["data_planes"]["hosts"].values()}
    assert hosts == {"kernel" if transport == "tcp" else "native" if compiled else "python"}
    loops = {tuple(x) for x in summary["data_planes"]["switches"].values()}
    assert loops == {("native", "native") if compiled else ("python", "python")}
    # Where the cores went: every switch and host process said how much CPU it used, and the
    # machine's busy share is a share.
    fid = summary["fidelity"]
    assert fid["cpu_s"]["switches"] > 0 and fid["cpu_s"]["hosts"] > 0, fid["cpu_s"]
    assert 0 < fid["cpu_busy_share"] <= 1
    assert summary["switch_conservation_ok"]
    assert summary["links_ok"] and summary["network_drained"], summary["links_unbalanced"]
    assert summary["loss_within_bound"]

    its = tables["iterations"]
    assert sorted(set(its["rank"])) == [0, 1, 2, 3]
    assert len(its) == 4 * ITERATIONS and its["total_s"].notna().all()
    assert (its["total_s"] >= its["compute_s"] * 0.999).all()

    trace = trace_of(spec.workload)
    plan = make_plan(trace, spec.scale)
    results = {r: np.load(tmp_path / f"tensors-{r}.npz") for r in range(4)}
    # What the parameter server zero-filled of the pushes it summed, in bucket bytes.
    ps_lost = read_host_records({4: host_paths(tmp_path, 4)})[0][0]["lost"] if pattern == "ps" else []
    zero_filled = 0
    for it in range(ITERATIONS):
        for b in plan.buckets:
            expected = sum(gradient(trace, plan, b, r, it, spec.seed).astype(np.float64) for r in range(4))
            lost = np.zeros(b.nbytes // 4, bool)
            for r in range(4):
                for a, z in results[r][f"l_{it}_{b.index}"]:
                    lost[a // 4:z // 4] = True
            for i, bucket, a, z in ps_lost:
                if (i, bucket) == (it, b.index):
                    lost[a // 4:z // 4] = True
            zero_filled += int(lost.sum())
            for r in range(4):
                got = results[r][f"r_{it}_{b.index}"]
                assert got.shape == expected.shape
                np.testing.assert_allclose(got[~lost], expected[~lost], rtol=1e-5, atol=1e-6)
    if transport != "tcp":   # kernel TCP packets are not ours to log
        packets = tables["packets"]
        assert len(packets) and (packets["fate"] == "delivered").mean() > 0.9
        # Full-sized frames are exactly the MTU plus the Ethernet header: jumbo frames crossed.
        assert packets["size"].max() == mtu + 14
    tens = tables["tensors"]
    assert len(tens) == 4 * ITERATIONS * len(plan.buckets)
    # Zero-filled values are exactly those the records account for: the union over ranks of
    # what each rank (and the PS) zero-filled, each rank counting its own.
    accounted = int(tens["lost_bytes"].sum()) + sum(z - a for _, _, a, z in ps_lost)
    assert 4 * zero_filled <= accounted
    assert (zero_filled == 0) == (accounted == 0)
