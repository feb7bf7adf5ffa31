"""`dlcp-emu clean`, and the clean-up a start does, remove only what this project created:
interfaces and a namespace named like ours, and a process at a recorded pid, stay (root)."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dlcp_emu.emu import cleanup
from dlcp_emu.emu.net import EmulationRun
from topologies import build

pytestmark = [pytest.mark.root]

REPO = Path(__file__).resolve().parent.parent
DECOY_LINK = ("s99-eth1", "s99-eth2")     # a veth pair named as a switch's ports are
DECOY_NETNS = "h99"                        # a namespace named as a host is


def ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def test_clean_leaves_what_is_not_ours(tmp_path):
    rt = tmp_path / "runtime"
    rt.mkdir()
    decoy = subprocess.Popen(["sleep", "600"])
    try:
        ip("link", "add", DECOY_LINK[0], "type", "veth", "peer", "name", DECOY_LINK[1])
        ip("netns", "add", DECOY_NETNS)
        # A dead run's record naming them: one interface without an ifindex (the run died
        # before it was created: this one is someone else's), one with another ifindex
        # (a namesake made later), and the decoy's pid with another start time.
        dead = {"run_id": "dead", "boot_id": cleanup.boot_id(), "owner": {"pid": 1, "start": -1},
                "processes": [{"kind": "traffic", "name": "h1:sleep", "pid": decoy.pid,
                               "start": cleanup.proc_start_time(decoy.pid) - 1}],
                "interfaces": [{"name": DECOY_LINK[0], "ifindex": None},
                               {"name": DECOY_LINK[1], "ifindex": cleanup.ifindex(DECOY_LINK[1]) + 1000}],
                "info": {}}
        (rt / "dead.json").write_text(json.dumps(dead))
        env = dict(os.environ, DLCP_EMU_RUNTIME_DIR=str(rt))
        out = subprocess.run([sys.executable, "-m", "dlcp_emu.cli", "clean", "--json"],
                             capture_output=True, text=True, env=env, cwd=REPO, timeout=60)
        assert out.returncode == 0, out.stderr
        (report,) = json.loads(out.stdout)["runs"]
        assert report["killed"] == [] and report["deleted"] == [], report
        assert not (rt / "dead.json").exists()
        assert all(cleanup.ifindex(n) is not None for n in DECOY_LINK)
        assert DECOY_NETNS in ip("netns", "list").stdout.split()
        assert decoy.poll() is None
        # A start cleans up after dead runs too, by the same rule; so does its stop.
        (rt / "dead.json").write_text(json.dumps(dead))
        with EmulationRun(build("star", hosts=2, host_rate_bps=10e6), "fifo", runtime_dir=str(rt),
                          run_dir=str(tmp_path / "run")) as run:
            assert run.stale_runs == []
            assert not (rt / "dead.json").exists()
        assert all(cleanup.ifindex(n) is not None for n in DECOY_LINK)
        assert DECOY_NETNS in ip("netns", "list").stdout.split()
        assert decoy.poll() is None
    finally:
        decoy.kill()
        decoy.wait()
        ip("link", "del", DECOY_LINK[0], check=False)
        ip("netns", "del", DECOY_NETNS, check=False)
