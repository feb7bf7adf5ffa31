"""Background flows in an emulated run, over both transports the spec offers: the packet
transport (the same endpoint objects the simulator drives) and kernel TCP."""
import json
import os

import pytest

from dlcp_emu.emu.run import EmuBackend
from dlcp_emu.experiment.run import run
from dlcp_emu.emu.run_records import host_paths
from dlcp_emu.emu.streams import read_process_row
from dlcp_emu.experiment.spec import parse_spec

pytestmark = [pytest.mark.root, pytest.mark.slow]

SPEC = {
    "name": "bg", "seed": 3, "time_dilation": 4.0, "byte_scale": 0.002, "time_limit_s": 30,
    "topology": {"kind": "leaf-spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 3,
                 "host_rate_bps": 10e9, "oversubscription": 2.0},
    "workload": {"model": "resnet50", "pattern": "ring", "workers": 4, "iterations": 3},
    "transport": {"kind": "reliable"},
}


def assert_placed(cpus, run_dir):
    """The switches ran on their CPUs, the hosts' and background processes on the others
    (emu/placement.py), each as it says itself."""
    ours = sorted(os.sched_getaffinity(0))
    assert sorted(set(cpus["switches"]) | set(cpus["hosts"])) == ours
    if len(ours) > 1:
        assert not set(cpus["switches"]) & set(cpus["hosts"]), cpus
    switches = [json.loads(p.read_text()) for p in run_dir.glob("emu/*.stats.json")]
    hosts = [json.loads(host_paths(run_dir, rank)["status"].read_text()) for rank in range(4)]
    background = [read_process_row(p) for p in run_dir.glob("background-*.flows.jsonl")]
    assert len(switches) == 4 and len(background) == 6
    assert all(st["cpus"] == cpus["switches"] for st in switches), [st["cpus"] for st in switches]
    assert all(h["cpus"] == cpus["hosts"] for h in hosts + background)


@pytest.mark.parametrize("transport", ["reliable", "tcp"])
def test_background_flows_complete_beside_training(tmp_path, transport):
    spec = parse_spec({**SPEC, "background": {"load": 0.3, "transport": transport}})
    s, frames = run(spec, EmuBackend(), "fifo", tmp_path, log=lambda m: None)
    assert s["completed"] and s["switch_conservation_ok"]
    assert s["links_ok"] and s["network_drained"], (s["network_drained"], s["links_unbalanced"])
    # Every background process said how much CPU it used.
    assert s["fidelity"]["cpu_s"]["background"] > 0
    assert_placed(s["fidelity"]["cpus"], tmp_path)
    # Hosts were muted once quiet: what their kernels sent later is counted, not on a link.
    assert set(s["host_frames_after_stop"]) == {f"h{i}" for i in range(1, 7)}
    bg = frames["background"]
    done = bg[bg["state"] == "done"]
    # Hosts without a worker (2 of 6) source and sink flows too; most flows that started
    # during the run have finished, each with a completion time no shorter than its start.
    assert set(bg["src"]) == {f"h{i}" for i in range(1, 7)}
    assert len(done) >= 0.8 * len(bg) and len(done) >= 50, bg["state"].value_counts()
    assert (done["fct_s"] > 0).all()
    assert s["background"]["completed"] == len(done)
    # Background is other traffic to the switches: it went through them, counted.
    assert frames["ports"]["tx_bytes"].sum() > done["bytes"].sum()
