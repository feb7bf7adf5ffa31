"""Two 2-worker jobs emulated on the default leaf-spine (Mininet, real frames), the second
starting 30 ms later: every packet's job read by the emulated switches (per-job counters
add up to the ports'), each job's iterations complete, the late one after its offset, and
its slowdown comes from the alone emulation it names; the same bytes per tensor as the
simulator synchronises on the same spec. And a schedule job (a transformer, tp x dp) beside
a ring: each host derives its job's plan, tags its job, and its classes reach the wire."""
import json

import pytest

from dlcp_emu.emu.run import EmuBackend
from dlcp_emu.experiment.run import run
from dlcp_emu.experiment.spec import parse_spec
from dlcp_emu.sim.run import SimBackend
from switch_models.traffic import TRAFFIC_CLASSES

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


# A ring beside a schedule: a 1-layer transformer, tensor parallel 2 x data parallel 2, on the
# hosts the ring leaves (packed: h2 h3 | h5 h6), every host's packets logged.
LLM = {"kind": "llm", "model": "gpt3-1.3b", "layers": 1, "workers": 4, "iterations": 2, "gpus_per_server": 1,
       "parallelism": {"dp": 2, "tp": 2, "seq_len": 128}}
WITH_SCHEDULE = {**SPEC, "name": "ring-and-llm", "packet_records": True, "transport": {"kind": "auto"},
                 "jobs": [{"name": "ring", "placement": "spread", "workload": {**RING, "iterations": 2}},
                          {"name": "llm", "placement": "packed", "workload": LLM}]}


def test_a_schedule_job_beside_a_ring_emulated(tmp_path):
    spec = parse_spec(WITH_SCHEDULE)
    s, frames = run(spec, EmuBackend(live=False), "dlcp", tmp_path, log=lambda m: None)
    assert s["completed"], (s.get("stopped_because"), s.get("host_exits"))
    its = frames["iterations"]
    done = its[its["total_s"].notna()]
    for job, ranks in (("ring", 2), ("llm", 4)):   # every rank of each job, every iteration
        mine = done[done["job"] == job]
        assert sorted(zip(mine["rank"], mine["iteration"])) == [(r, i) for r in range(ranks) for i in range(2)]
    # The switches read each frame's job: both jobs' ids, and the per-job rows add up to the ports'
    per_job, ports = frames["job_ports"], frames["ports"]
    assert {"ring", "llm"} <= set(per_job["job"]) <= {"ring", "llm", "other"}
    summed = per_job.groupby(["switch", "port"])[["tx_packets", "tx_bytes", "dropped"]].sum()
    own = ports.set_index(["switch", "port"]).loc[summed.index, ["tx_packets", "tx_bytes", "dropped"]]
    assert (summed.sort_index().values == own.sort_index().values).all()
    # The classes on the wire (the receivers' headers): the schedule's three, the ring's gradients
    got = frames["packets"][frames["packets"]["fate"] != "lost"]
    classes = got.groupby("job")["tclass"].agg(lambda c: {TRAFFIC_CLASSES[x] for x in c})
    assert classes["llm"] == {"gradient", "activation", "activation-gradient"}
    assert classes["ring"] == {"gradient"}
    assert set(s["jobs"]["llm"]["traffic_classes"]) == {"gradient", "activation", "activation-gradient"}
    # Each job judged by its own plan and hosts; the run by its worst
    assert set(s["fidelity"]["jobs"]) == {"ring", "llm"}
    assert s["fidelity"]["estimate"] == s["fidelity"]["jobs"][s["fidelity"]["estimate_of_job"]]["estimate"]
