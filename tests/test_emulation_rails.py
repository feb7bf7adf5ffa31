"""Servers of several GPUs on real Mininet: two servers of two GPUs on a rail-optimized
fabric, a ring of four workers dealt over the servers. Every server is a switch process of its
own running FIFO whatever the experiment's switches run; GPU i's traffic to another server
travels on rail i (leaf l<i+1>), and no packet crosses the spine (one pod: nothing leaves a
rail)."""
import json

import pytest

from dlcp_emu.emu.run import EmuBackend
from dlcp_emu.experiment.run import run
from dlcp_emu.experiment.spec import parse_spec
from switch_models import PipelineSpec
from topologies.servers import SERVER_PIPELINE

pytestmark = [pytest.mark.root, pytest.mark.slow]

SPEC = {
    "name": "rails", "seed": 1, "time_dilation": 4.0, "byte_scale": 0.002, "time_limit_s": 90,
    "topology": {"kind": "rail-optimized", "servers": 2, "gpus_per_server": 2, "nic_rate_bps": 10e9,
                 "nvlink_rate_bps": 40e9, "buffer_bytes": 2_000_000},
    "workload": {"model": "resnet50", "pattern": "ring", "workers": 4, "iterations": 3, "placement": "spread"},
    "transport": {"kind": "dlcp"},
    "switch": {"preset": "dlcp"},
}


def test_two_servers_of_two_gpus_keep_to_their_rails(tmp_path):
    s, frames = run(parse_spec(SPEC), EmuBackend(), "dlcp", tmp_path, log=lambda m: None)
    assert s["completed"], (s.get("stopped_because"), s.get("host_exits"))
    assert s["switch_conservation_ok"] and s["iterations_measured"] > 0
    ports = frames["ports"]
    role = dict(zip(ports["switch"], ports["role"]))
    assert role == {"srv1": "server", "srv2": "server", "l1": "switch", "l2": "switch", "s1": "switch"}
    sent = ports.groupby("switch")["tx_packets"].sum()
    # Ranks 0..3 on srv1 GPU 0, srv2 GPU 0, srv1 GPU 1, srv2 GPU 1: the ring uses both rails.
    assert sent["l1"] > 0 and sent["l2"] > 0 and sent["srv1"] > 0 and sent["srv2"] > 0
    assert sent["s1"] == 0
    # What each switch process said it ran.
    switches = json.loads((tmp_path / "switches.json").read_text())
    server, network = PipelineSpec.parse(SERVER_PIPELINE).describe(), PipelineSpec.parse("dlcp").describe()
    assert {name: sw["pipeline"] for name, sw in switches.items()} == {
        "srv1": server, "srv2": server, "l1": network, "l2": network, "s1": network}
