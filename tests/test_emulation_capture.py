"""`dlcp-emu run SPEC --pcap PORTS` as a user runs it, and the Wireshark dissector on what it
captured: every DLCP frame of a real emulation, every field, against the project's decoder."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from scapy.layers.l2 import Ether  # noqa: F401 (rdpcap reads Ethernet frames as such)
from scapy.utils import rdpcap

from dlcp_emu.wire import WireError, decode_frame
from dlcp_emu.wire.layout import DLCP_UDP_PORT, MAGIC, OFF_IP_PROTO, OFF_MAGIC, OFF_UDP_DPORT

IPPROTO_ICMP = 1
from tshark_helpers import dissect, expected_fields

pytestmark = [pytest.mark.root, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
# Training (the dlcp transport: data, probes, bitmaps, acks) and
# background flows on another UDP port (the dissector's heuristic), on a small leaf-spine.
SPEC = """
name = "capture"
seed = 2
time_dilation = 4.0
byte_scale = 0.002
time_limit_s = 60
[topology]
kind = "leaf-spine"
leaves = 2
spines = 2
hosts_per_leaf = 2
host_rate_bps = 10e9
oversubscription = 2.0
[workload]
model = "resnet50"
workers = 4
iterations = 3
[transport]
kind = "dlcp"
[switch]
preset = "dlcp"
[background]
load = 0.2
"""
BUDGET_MB = 4.0      # over l1's 4 ports and s1-eth1, both ways: 400 kB a file


def test_run_captures_the_chosen_ports_and_tshark_reads_them_as_the_codec_does(tmp_path):
    (tmp_path / "spec.toml").write_text(SPEC)
    env = dict(os.environ, DLCP_EMU_RUNTIME_DIR=str(tmp_path / "runtime"))
    r = subprocess.run([sys.executable, "-m", "dlcp_emu.cli", "run", "spec.toml", "--results",
                        "results", "--pcap", "l1,s1-eth1", "--pcap-max-mb", str(BUDGET_MB)],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    results = (tmp_path / "results" / "latest").resolve()
    s = json.loads((results / "summary.json").read_text())["presets"]["dlcp"]
    caps = s["captures"]
    want = {(i, d) for i in ("l1-eth1", "l1-eth2", "l1-eth3", "l1-eth4", "s1-eth1") for d in ("rx", "tx")}
    assert {(c["interface"], c["direction"]) for c in caps} == want
    # The terminal lists every file where it is.
    for c in caps:
        assert os.path.join("results", results.name, c["file"]) in r.stdout
    switches = json.loads((results / "dlcp" / "seed-2" / "switches.json").read_text())
    share = int(BUDGET_MB * 1e6 / len(want))
    frames_seen = 0
    for c in caps:
        path = results / c["file"]
        assert path.stat().st_size == c["bytes"] <= share
        # Each capture has every frame its switch read from (or sent on) the port, or the
        # newest of them with the count of those the bound dropped.
        port = c["interface"].rsplit("eth", 1)[1]
        counted = switches[c["switch"]][f"{c['direction']}_frames"][port]
        assert c["frames"] == counted > 0, c
        assert c["kept"] + c["rotated_out"] == c["frames"]
        assert len(rdpcap(str(path))) == c["kept"]
        frames_seen += c["kept"]
    assert any(c["rotated_out"] for c in caps), "the budget was meant to bind on the busiest ports"

    # tshark with the dissector, field by field, against decode_frame on the same bytes.
    checked, kinds, heuristic = 0, set(), 0
    for c in caps:
        path = results / c["file"]
        frames = [bytes(p) for p in rdpcap(str(path))]
        rows = dissect(path, tmp_path)
        assert len(rows) == len(frames)
        for raw, row in zip(frames, rows):
            if len(raw) > OFF_IP_PROTO and raw[OFF_IP_PROTO] == IPPROTO_ICMP:
                continue        # an ICMP error quoting a DLCP frame (tshark dissects the quote)
            if len(raw) < OFF_MAGIC + 2 or int.from_bytes(raw[OFF_MAGIC:OFF_MAGIC + 2], "big") != MAGIC:
                assert row["dlcp.magic"] == "", row           # ARP and the like: not DLCP
                continue
            try:
                d = decode_frame(raw)
            except WireError as e:
                raise AssertionError(f"{path}: the emulation sent a frame its codec refuses: {e}")
            got = {k[len("dlcp."):]: v for k, v in row.items() if k.startswith("dlcp.")}
            assert got == expected_fields(d.header, d.payload), (path, row["frame.number"])
            assert row["_ws.expert.message"] == ""
            checked += 1
            kinds.add((int(d.header.type), int(d.header.flags)))
            heuristic += int.from_bytes(raw[OFF_UDP_DPORT:OFF_UDP_DPORT + 2], "big") != DLCP_UDP_PORT
    assert checked > 1000 and checked >= 0.9 * frames_seen, (checked, frames_seen)
    assert {t for t, _ in kinds} >= {0, 3}, kinds        # data and acks at least
    assert heuristic > 0          # background flows: recognised on their own port by the magic
