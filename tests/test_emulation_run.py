"""`dlcp-emu run` as a user runs it: progress, Ctrl-C keeps what was measured and cleans up."""
import json
import os
import re
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


def two_done(line):
    m = re.search(r"iterations (\d+)/200", line)
    return m is not None and int(m.group(1)) >= 2


def run_and_act_after_two_iterations(tmp_path, act, extra=""):
    """`dlcp-emu run` of the spec (with `extra` tables) as a user runs it, and once progress
    reports two finished iterations act(proc, runtime dir): (exit status, output, the
    preset's summary, the links before)."""
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC + extra)
    before = links()
    # Its own runtime records, so that whatever a failed try leaves is cleaned from them.
    runtime = tmp_path / "runtime"
    env = dict(os.environ, DLCP_EMU_RUNTIME_DIR=str(runtime))
    repo = Path(__file__).resolve().parent.parent
    # From a folder of the user's, with a relative results path, as `make emulate` runs: the
    # run's processes start elsewhere and must still find their files. Ctrl-C as at a
    # terminal, however the suite was started: a shell's background job inherits SIGINT
    # ignored (and the run then rightly leaves it so); a handled one is default after exec.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "dlcp_emu.cli", "run", "spec.toml", "--results",
                                 "results"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, cwd=tmp_path, env=env)
    finally:
        signal.signal(signal.SIGINT, previous)
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    seen, deadline = [], time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            if not sel.select(timeout=1):
                continue
            line = proc.stdout.readline()
            seen.append(line)
            if two_done(line):
                break
        # Progress prints a line when the slowest worker's count changes, polled: it may
        # pass from 1 to 3 without a line for 2.
        assert any(two_done(line) for line in seen), "".join(seen)
        act(proc, runtime)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
            subprocess.run([sys.executable, "-m", "dlcp_emu.cli", "clean"], cwd=repo, env=env,
                           capture_output=True, timeout=60)
    s = json.loads((tmp_path / "results" / "latest" / "summary.json").read_text())["presets"]["dlcp"]
    return proc.returncode, out, s, before


def kill_mid_run(tmp_path, pick, extra=""):
    """SIGKILL, after two iterations, the process of the run's own records (its state file)
    that pick(entry, cmdline) names."""
    def cmdline(pid):
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:   # a recorded process that has already ended
            return []

    def kill(proc, runtime):
        victims = [p["pid"] for state in runtime.glob("*.json")
                   for p in json.loads(state.read_text())["processes"] if pick(p, cmdline(p["pid"]))]
        assert len(victims) == 1, [s.read_text() for s in runtime.glob("*.json")]
        os.kill(victims[0], signal.SIGKILL)
    return run_and_act_after_two_iterations(tmp_path, kill, extra)


def test_ctrl_c_keeps_measurements_and_cleans_up(tmp_path):
    rc, out, s, before = run_and_act_after_two_iterations(
        tmp_path, lambda proc, runtime: proc.send_signal(signal.SIGINT))
    assert rc == 1, out          # incomplete run: non-zero, but orderly
    assert s["completed"] is False and "interrupted" in s["stopped_because"]
    assert s["iterations_measured"] >= 4     # 4 workers, at least one non-warm-up iteration each
    assert s["switch_conservation_ok"]
    assert s["links_ok"] and s["network_drained"], s["links_unbalanced"]
    assert links() == before                  # every interface of the run is gone
    assert not [p for p in subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True)
                .stdout.splitlines() if str(tmp_path) in p]


def test_a_host_that_dies_stops_the_run_which_keeps_its_measurements_and_says_why(tmp_path):
    rc, out, s, before = kill_mid_run(tmp_path, lambda p, cmdline: b"dlcp_emu.emu.hostd" in cmdline
                                      and cmdline[-2].endswith(b"host-1.config.json"))
    assert rc == 1, out
    assert s["completed"] is False and s["stopped_because"] == "agent(s) [1] exited before finishing", s
    assert s["host_exits"] == {"1": {"returncode": -9, "stderr_tail": ""}}, s.get("host_exits")
    assert s["iterations_measured"] >= 4
    assert s["switch_conservation_ok"]
    assert links() == before


def test_a_switch_that_dies_stops_the_run_at_once_saying_which(tmp_path):
    """A network with a dead switch would only time out (it once did, for the whole time
    limit, with the run flagged no worse than `behind!`)."""
    rc, out, s, before = kill_mid_run(tmp_path, lambda p, cmdline: p["kind"] == "switch" and p["name"] == "l1")
    assert rc == 1, out
    assert s["completed"] is False, s
    assert s["stopped_because"].startswith("switch process(es) l1 (return code -9, last stderr line: "), s
    assert s["stopped_because"].endswith(" ended during the run"), s
    assert s["iterations_measured"] >= 4
    assert links() == before


def test_a_background_process_that_dies_stops_the_run_saying_where(tmp_path):
    """Without it the background load would drop and the run go on as if nothing happened."""
    rc, out, s, before = kill_mid_run(
        tmp_path, lambda p, cmdline: b"dlcp_emu.emu.background_udp" in cmdline
        and cmdline[-2].endswith(b"background-h2.config.json"), extra="[background]\nload = 0.2\n")
    assert rc == 1, out
    assert s["completed"] is False, s
    assert s["stopped_because"] == ("background process(es) on h2 (return code -9, last stderr line: none) "
                                    "ended during the run"), s
    assert s["iterations_measured"] >= 4
    assert links() == before
