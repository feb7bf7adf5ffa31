"""Nothing of a run outlives it: `dlcp-emu run` killed with SIGKILL leaves no process, network
namespace or interface behind (root only)."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dlcp_emu.emu import cleanup
from dlcp_emu.emu.net import root_interfaces
from dlcp_emu.experiment.spec import load_spec
from dlcp_emu.experiment.topology import scaled_topology

pytestmark = [pytest.mark.root, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent
GONE_WITHIN_S = 20.0

# Long enough that nothing ends by itself while the test looks: 2 workers for 1000
# iterations within 120 s, and background traffic (one more process per host).
SPEC = """
name = "killed"
time_dilation = 2.0
byte_scale = 0.002
time_limit_s = 120
[topology]
kind = "leaf-spine"
leaves = 2
spines = 2
hosts_per_leaf = 1
host_rate_bps = 10e9
[workload]
model = "resnet50"
workers = 2
iterations = 1000
[switch]
preset = "dlcp"
[background]
load = 0.2
distribution = "websearch"
transport = "reliable"
"""


def net_namespaces():
    """Inodes of every network namespace some process is in."""
    out = set()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            ino = cleanup.netns_inode(int(pid))
            if ino is not None:
                out.add(ino)
    return out


def link_names():
    return set(os.listdir("/sys/class/net"))


def processes_naming(text):
    """Pids of processes whose command line holds `text`."""
    pids = []
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    pids.append(int(pid))
        except (OSError, ValueError):
            pass
    return pids


def leftovers(recorded, ours, links0, ns0, marker):
    live = [(p["kind"], p["name"], p["pid"]) for p in recorded
            if cleanup.process_alive(p["pid"], p["start"])]
    return {"processes": live, "others": processes_naming(marker),
            "interfaces": sorted((link_names() - links0) & ours),
            "namespaces": sorted(net_namespaces() - ns0)}


def test_sigkill_of_the_runner_leaves_nothing(tmp_path):
    spec_path = tmp_path / "spec.toml"
    spec_path.write_text(SPEC)
    ours = set(root_interfaces(scaled_topology(load_spec(spec_path))))
    links0, ns0 = link_names(), net_namespaces()
    rt = tmp_path / "runtime"
    env = dict(os.environ, DLCP_EMU_RUNTIME_DIR=str(rt))
    log = tmp_path / "run.log"
    results = tmp_path / "results"
    with open(log, "w") as out:
        runner = subprocess.Popen([sys.executable, "-m", "dlcp_emu.cli", "run", str(spec_path),
                                   "--results", str(results)], stdout=out, stderr=subprocess.STDOUT,
                                  cwd=REPO, env=env, start_new_session=True)
    recorded = []
    try:
        # Until the agents are running (progress lines), bounded.
        deadline = time.monotonic() + 120
        while "iterations" not in log.read_text() and time.monotonic() < deadline:
            assert runner.poll() is None, log.read_text()
            time.sleep(0.2)
        assert "iterations" in log.read_text(), log.read_text()
        (state,) = rt.glob("*.json")
        recorded = json.loads(state.read_text())["processes"]
        assert {p["kind"] for p in recorded} == {"host", "switch", "traffic"}, recorded
        assert len([p for p in recorded if p["kind"] == "traffic"]) == 4   # 2 agents, 2 background
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait(timeout=10)
        deadline = time.monotonic() + GONE_WITHIN_S
        left = leftovers(recorded, ours, links0, ns0, str(tmp_path))
        while any(left.values()) and time.monotonic() < deadline:
            time.sleep(0.2)
            left = leftovers(recorded, ours, links0, ns0, str(tmp_path))
        assert not any(left.values()), left
    finally:
        if runner.poll() is None:
            os.kill(runner.pid, signal.SIGKILL)
            runner.wait()
        # Whatever a failed try left, by the records (bounded), so that later tests start clean.
        subprocess.run([sys.executable, "-m", "dlcp_emu.cli", "clean"], cwd=REPO, env=env,
                       capture_output=True, timeout=120)
        for pid in processes_naming(str(tmp_path)):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
