"""`bench htsim --speed`'s scenario and how its figure is counted (the figure itself is a
benchmark's: `make bench` prints it; nothing here is timed)."""
import re

import pytest

from dlcp_emu.cli import main
from dlcp_emu.study import baselines, htsim_speed
from dlcp_emu.transport.message import transport_payload_size


@pytest.mark.parametrize("hosts, expected", [(8, (4, 2, 2)), (18, (6, 3, 3)), (128, (16, 8, 8))])
def test_geometry_is_htsims_two_tier_fat_tree(hosts, expected):
    # htsim's FatTreeTopology with -tiers 2: K leaves of K/2 hosts, K/2 spines (set_params).
    assert htsim_speed.geometry(hosts) == expected


@pytest.mark.parametrize("hosts", [1, 10, 100])
def test_a_ring_that_fills_no_tree_is_refused(hosts):
    with pytest.raises(ValueError, match="hosts must"):
        htsim_speed.geometry(hosts)


def test_hops_count_each_flows_packets_by_its_path():
    # 8 hosts, 2 a leaf: 0->1, 2->3, 4->5, 6->7 stay in their leaf (2 links), the others cross (4).
    packets = [10, 1000, 10, 1000, 10, 1000, 10, 1000]
    assert htsim_speed.data_packet_hops(packets, 8) == 4 * 10 * 2 + 4 * 1000 * 4


def test_the_ring_matrix_is_one_htsim_and_the_baselines_read():
    text = htsim_speed.ring_matrix(8)
    pairs = [(int(s), int(d)) for s, d in re.findall(r"^(\d+)->(\d+)\b", text, re.M)]
    assert pairs == [(i, (i + 1) % 8) for i in range(8)]
    assert text.startswith("Nodes 8\nConnections 8\n")
    assert all(f"size {htsim_speed.FLOW_BYTES}" in line for line in text.splitlines()[2:])


def test_ours_runs_the_ring_and_counts_every_data_packet():
    flow = 1_000_000
    r = htsim_speed.run_ours(8, flow_bytes=flow)
    least = -(-flow // transport_payload_size(baselines.MTU))   # a flow's bytes in full payloads
    assert len(r["data_packets"]) == 8
    assert all(n >= least for n in r["data_packets"])
    assert r["data_packet_hops"] == htsim_speed.data_packet_hops(r["data_packets"], 8)
    assert r["max_fct_ms"] > 0 and r["core_s"] <= r["run_s"]


def test_speed_bench_refuses_what_it_cannot_use(tmp_path, capsys):
    assert main(["bench", "htsim", "--speed", "--hosts", "10"]) == 2
    assert "hosts must" in capsys.readouterr().err
    assert main(["bench", "htsim", "--speed", "--htsim", str(tmp_path / "none")]) == 2
    assert "--htsim: no file" in capsys.readouterr().err
    assert main(["bench", "htsim", "--hosts", "8"]) == 2
    assert main(["bench", "htsim", "--speed", "--dctcp-incast"]) == 2


def test_stored_figures_are_what_the_rows_compare_against(tmp_path):
    assert htsim_speed.stored(8, reference=tmp_path) is None
    for hosts in htsim_speed.HOSTS:
        h = htsim_speed.stored(hosts)
        assert h["data_packet_hops"] == htsim_speed.data_packet_hops([h["data_packets"] / hosts] * hosts, hosts)
        assert h["rate"] == pytest.approx(h["data_packet_hops"] / h["wall_s"])
