"""`dlcp-emu run` as a user runs it: progress, Ctrl-C keeps what was measured and cleans up."""
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.root, pytest.mark.slow]

SPEC = """
name = "ctrlc"
time_dilation = 2.0
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
iterations = 200
[transport]
kind = "dlcp"
[switch]
preset = "dlcp"
"""


def links():
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines()}


def test_ctrl_c_keeps_measurements_and_cleans_up(tmp_path):
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    before = links()
    # Its own runtime records, so that whatever a failed try leaves is cleaned from them.
    env = dict(os.environ, DLCP_EMU_RUNTIME_DIR=str(tmp_path / "runtime"))
    repo = Path(__file__).resolve().parent.parent
    # From a folder of the user's, with a relative results path, as `make emulate` runs: the
    # run's processes start elsewhere and must still find their files.
    proc = subprocess.Popen([sys.executable, "-m", "dlcp_emu.cli", "run", "spec.toml", "--results",
                             "results"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, cwd=tmp_path, env=env)
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    seen, deadline = [], time.monotonic() + 60
    try:
        # Wait (bounded) until progress reports two finished iterations, then press Ctrl-C.
        while time.monotonic() < deadline:
            if not sel.select(timeout=1):
                continue
            line = proc.stdout.readline()
            seen.append(line)
            if "iterations 2/200" in line:
                break
        assert any("iterations 2/200" in line for line in seen), "".join(seen)
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            subprocess.run([sys.executable, "-m", "dlcp_emu.cli", "clean"], cwd=repo, env=env,
                           capture_output=True, timeout=60)
    assert proc.returncode == 1, out          # incomplete run: non-zero, but orderly
    summary = json.loads((tmp_path / "results" / "latest" / "summary.json").read_text())
    s = summary["presets"]["dlcp"]
    assert s["completed"] is False and "interrupted" in s["stopped_because"]
    assert s["iterations_measured"] >= 4     # 4 workers, at least one non-warm-up iteration each
    assert s["switch_conservation_ok"]
    assert s["links_ok"] and s["network_drained"], s["links_unbalanced"]
    assert links() == before                  # every interface of the run is gone
    assert not [p for p in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True)
                .stdout.splitlines() if str(tmp_path) in p]
