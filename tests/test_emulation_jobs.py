"""Two 2-worker jobs emulated on the default leaf-spine (Mininet, real frames), the second
starting 30 ms later: every packet's job read by the emulated switches (per-job counters
add up to the ports'), each job's iterations complete, the late one after its offset, and
its slowdown comes from the alone emulation it names; the same bytes per tensor as the
simulator synchronises on the same spec."""
import json

import pytest

from dlcp_emu.emu.run import EmuBackend
from dlcp_emu.experiment.run import run
from dlcp_emu.experiment.spec import parse_spec
from dlcp_emu.sim.run import SimBackend

pytestmark = [pytest.mark.root]

RING = {"model": "resnet50", "pattern": "ring", "workers": 2, "iterations": 3}
SPEC = {"name": "two-rings", "seed": 1, "time_dilation": 8.0, "byte_scale": 0.002, "time_limit_s": 60,
        "topology": {"kind": "leaf-spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 3, "host_rate_bps": 10e9,
                     "oversubscription": 2.0, "delay_ns": 1000},
        "transport": {"kind": "reliable"},
        "jobs": [{"name": "a", "placement": "spread", "workload": RING},
                 {"name": "b", "placement": "spread", "start_ms": 30.0, "workload": RING}]}


def test_two_jobs_emulated(tmp_path):
    spec = parse_spec(SPEC)
    s, frames = run(spec, EmuBackend(), "fifo", tmp_path / "emu", log=lambda m: None)
    assert s["completed"], s.get("stopped_because")
    per_job, ports = frames["job_ports"], frames["ports"]
    assert {"a", "b"} <= set(per_job["job"])          # the switches read each frame's job
    summed = per_job.groupby(["switch", "port"])[["tx_packets", "dropped"]].sum()
    own = ports.set_index(["switch", "port"]).loc[summed.index, ["tx_packets", "dropped"]]
    assert (summed.sort_index().values == own.sort_index().values).all()
    its = frames["iterations"]
    first = its[its["iteration"] == 0].groupby("job")["start_s"].min()
    # b waited its 30 ms (real-world) after the common start; each host wakes a little late
    assert first["b"] - first["a"] == pytest.approx(0.030, abs=0.010)
    for name, line in s["jobs"].items():
        assert line["iterations_measured"] == 2 * (RING["iterations"] - 1)
        alone = json.loads((tmp_path / "emu" / line["alone_run"] / "summary.json").read_text())
        assert line["slowdown"] == pytest.approx(line["iteration_time_mean_s"] / alone["iteration_time_mean_s"])
    sim, sim_frames = run(spec, SimBackend(), "fifo", tmp_path / "sim", log=lambda m: None)
    key = ["job", "rank", "iteration", "bucket", "nbytes", "sent_bytes", "lost_bytes"]
    assert sorted(frames["tensors"][key].itertuples(index=False, name=None)) == \
        sorted(sim_frames["tensors"][key].itertuples(index=False, name=None))
