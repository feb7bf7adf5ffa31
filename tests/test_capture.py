"""Captures without root: a bounded capture keeps the newest frames within its bound and
counts what it dropped; only the chosen ports are captured; bad --pcap arguments are named."""
import subprocess
import sys

import pytest
from scapy.utils import rdpcap

from dlcp_emu.emu.capture import CaptureError, bytes_per_file, listing, select_ports
from dlcp_emu.emu.datapath.config import ConfigError, SwitchProcessConfig
from dlcp_emu.emu.datapath.pcap import MIN_MAX_BYTES, PcapWriter
from topologies import build
from test_datapath_loop import Rig, frame

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]


def _numbered(k, size):
    """A frame that says which it is: k in its first 4 bytes."""
    return k.to_bytes(4, "big") + bytes(size - 4)


@pytest.mark.parametrize("sizes", [[1000], [60, 1514, 300], [1514]])
def test_bounded_capture_keeps_the_newest_frames_within_its_bound(tmp_path, sizes):
    cap = MIN_MAX_BYTES
    path = tmp_path / "x.pcap"
    w = PcapWriter(str(path), max_bytes=cap)
    n = 500
    for k in range(n):
        w.write(_numbered(k, sizes[k % len(sizes)]), 1_000 + k)
    before = w.summary()
    w.close()
    s = w.summary()
    assert s == before                        # what the stats said while running is what is on disk
    assert path.stat().st_size == s["bytes"] <= cap
    assert not (tmp_path / "x.pcap.old").exists()
    got = [int.from_bytes(bytes(p)[:4], "big") for p in rdpcap(str(path))]
    assert s["frames"] == n and s["kept"] == len(got) and s["rotated_out"] == n - len(got)
    assert got == list(range(n - len(got), n))   # the newest, in order, none missing
    assert len(got) * 16 + sum(sizes[k % len(sizes)] for k in got) >= cap // 2 - 16 - 1514


def test_unbounded_capture_keeps_everything(tmp_path):
    w = PcapWriter(str(tmp_path / "x.pcap"))
    for k in range(300):
        w.write(_numbered(k, 1500))
    w.close()
    assert w.summary()["kept"] == 300 and w.summary()["rotated_out"] == 0
    assert len(rdpcap(str(tmp_path / "x.pcap"))) == 300


def test_switch_captures_only_the_chosen_ports(tmp_path):
    rig = Rig(tmp_path, pcap_dir=str(tmp_path / "pcap"), pcap_ports=[2], pcap_max_bytes=MIN_MAX_BYTES)
    try:
        for _ in range(100):
            rig.far[1].send(frame(dst=2, payload=1000))
        rig.recv(2, 100)
    finally:
        stats = rig.stop()
    assert sorted(p.name for p in (tmp_path / "pcap").iterdir()) == ["p2-rx.pcap", "p2-tx.pcap"]
    (rx, tx) = sorted(stats["captures"], key=lambda c: c["file"])
    assert rx["frames"] == stats["rx_frames"][2] == 0
    assert tx["frames"] == stats["tx_frames"][2] == 100
    assert tx["kept"] == len(rdpcap(str(tmp_path / "pcap" / "p2-tx.pcap"))) < 100   # the bound held
    assert tx["rotated_out"] == 100 - tx["kept"]
    (entry,) = [c for c in listing({"s1": stats}, tmp_path) if c["direction"] == "tx"]
    assert entry == {"file": "pcap/p2-tx.pcap", "switch": "s1", "interface": "p2", "direction": "tx",
                     "frames": 100, "kept": tx["kept"], "rotated_out": tx["rotated_out"],
                     "bytes": tx["bytes"]}


@pytest.mark.parametrize("field, value", [("pcap_ports", [7]), ("pcap_ports", "1"),
                                          ("pcap_max_bytes", 1000), ("pcap_max_bytes", 1.5e6)])
def test_switch_config_refuses_bad_capture_settings(field, value):
    with pytest.raises(ConfigError, match=field):
        SwitchProcessConfig(name="s1", ports=[{"number": 1, "intf": "p1", "rate_bps": 1e6}], **{field: value})


def test_ports_are_chosen_by_switch_and_interface():
    t = build("leaf-spine", leaves=2, spines=2, hosts_per_leaf=1, host_rate_bps=1e8)
    assert select_ports(t, "all") == ["l1-eth1", "l1-eth2", "l1-eth3", "l2-eth1", "l2-eth2",
                                      "l2-eth3", "s1-eth1", "s1-eth2", "s2-eth1", "s2-eth2"]
    assert select_ports(t, "s2-eth1,l1") == ["l1-eth1", "l1-eth2", "l1-eth3", "s2-eth1"]
    for bad in ("l3", "l1-eth4", "h1-eth0", "l1,,s1", "l1-eth1,nope"):
        with pytest.raises(CaptureError, match="--pcap: no switch or switch port named") as e:
            select_ports(t, bad)
        assert "l1: l1-eth1..l1-eth3" in str(e.value)
    assert bytes_per_file(10, ["a", "b"]) == 2_500_000
    with pytest.raises(CaptureError, match="--pcap-max-mb"):
        bytes_per_file(0.1, ["a", "b"])


@pytest.mark.parametrize("flags, message", [
    (["--pcap", "l1,x9"], "--pcap: no switch or switch port named 'x9'"),
    (["--pcap", "--pcap-max-mb", "0.01"], "--pcap-max-mb: 0.01 MB over"),
    (["--pcap-max-mb", "-1"], "argument --pcap-max-mb: must be a finite number > 0"),
])
def test_run_refuses_bad_capture_flags_before_anything_starts(flags, message):
    r = subprocess.run([sys.executable, "-m", "dlcp_emu.cli", "run", "examples/default.toml",
                        *flags, "--dry-run"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
