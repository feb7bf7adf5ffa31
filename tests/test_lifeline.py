"""A run's processes follow their runner's death, and its reaper cleans up after a runner
that died without doing so (no root: plain processes stand in for the run's)."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from dlcp_emu.emu import cleanup
from dlcp_emu.emu.host_configs import BackgroundUdpConfig
from dlcp_emu.emu.lifeline import PARENT_ENV, follow_parent

REPO = Path(__file__).resolve().parent.parent
PY = sys.executable


def wait_until(cond, timeout):
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def start_parent(script, tmp_path):
    """A stand-in runner (its own session) that prints one JSON line once set up."""
    p = subprocess.Popen([PY, "-c", textwrap.dedent(script)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=REPO, start_new_session=True)
    line = p.stdout.readline()
    assert line, p.stderr.read().decode()
    return p, json.loads(line)


def kill(p):
    if p.poll() is None:
        os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=10)


def test_a_host_program_ends_with_its_runner_killed(tmp_path):
    """background_udp waiting for a start that never comes: SIGKILL of the process that
    started it ends it too (PR_SET_PDEATHSIG), where it would wait forever."""
    cfg = BackgroundUdpConfig(index=0, bind=["127.0.0.1", 0], peers={}, flows=[], mtu=1500,
                              link_rate_bps=1e6, engine="auto", transport_settings={},
                              ready_file=str(tmp_path / "ready"), start_file=str(tmp_path / "never"),
                              deadline_s=600, out_path=str(tmp_path / "out.json"))
    cfg.write(tmp_path / "cfg.json")
    parent, info = start_parent(f"""
        import json, os, subprocess, sys, time
        env = dict(os.environ, {PARENT_ENV}=str(os.getpid()))
        child = subprocess.Popen([sys.executable, "-m", "dlcp_emu.emu.background_udp",
                                  "--config", {str(tmp_path / "cfg.json")!r}], env=env)
        while not os.path.exists({cfg.ready_file!r}):
            time.sleep(0.01)
        print(json.dumps({{"pid": child.pid}}), flush=True)
        time.sleep(600)
    """, tmp_path)
    child = {"pid": info["pid"], "start": cleanup.proc_start_time(info["pid"])}
    try:
        assert cleanup.process_alive(child["pid"], child["start"])
        kill(parent)
        assert wait_until(lambda: not cleanup.process_alive(child["pid"], child["start"]), 10), \
            "the host program outlived its runner"
    finally:
        kill(parent)
        if cleanup.process_alive(child["pid"], child["start"]):
            os.kill(child["pid"], signal.SIGKILL)


def test_a_program_whose_parent_is_already_gone_exits():
    with pytest.raises(SystemExit, match="parent 1 is gone"):
        follow_parent(1, "test")


REAPED_RUN = """
    import json, os, subprocess, sys, time
    from dlcp_emu.emu import cleanup, reaper
    state = cleanup.RunState(directory={rt!r})
    # A process that does not follow its parent: only the reaper can end it.
    other = subprocess.Popen(["sleep", "600"], start_new_session=True)
    state.add_process("traffic", "sleep", other.pid)
    proc, pipe = reaper.start(state.path)
    print(json.dumps({{"state": state.path, "reaper": proc.pid,
                      "processes": state.data["processes"]}}), flush=True)
    if {orderly}:
        state.remove()            # what EmulationRun.stop does once it has cleaned up
        os.close(pipe)
        proc.wait(timeout=10)
        print("reaper exited; the recorded process lives:", other.poll() is None, flush=True)
        other.kill()
    time.sleep(600)
"""


def test_the_reaper_cleans_up_after_a_killed_runner(tmp_path):
    rt = tmp_path / "runtime"
    parent, info = start_parent(REAPED_RUN.format(rt=str(rt), orderly=False), tmp_path)
    (other,) = info["processes"]
    reaper_start = cleanup.proc_start_time(info["reaper"])
    try:
        assert cleanup.process_alive(other["pid"], other["start"])
        time.sleep(0.3)             # the reaper is waiting, not done: nothing has happened
        assert cleanup.process_alive(other["pid"], other["start"])
        assert os.path.exists(info["state"])
        kill(parent)
        assert wait_until(lambda: not cleanup.process_alive(other["pid"], other["start"]), 10)
        assert wait_until(lambda: not os.path.exists(info["state"]), 10)
        assert wait_until(lambda: not cleanup.process_alive(info["reaper"], reaper_start), 10)
    finally:
        kill(parent)
        if cleanup.process_alive(other["pid"], other["start"]):
            os.kill(other["pid"], signal.SIGKILL)


def test_the_reaper_leaves_an_orderly_run_alone(tmp_path):
    """A runner that cleaned up removes its state file before the reaper's pipe closes: the
    reaper exits without touching what the file had recorded."""
    rt = tmp_path / "runtime"
    parent, info = start_parent(REAPED_RUN.format(rt=str(rt), orderly=True), tmp_path)
    try:
        line = parent.stdout.readline().decode()
        assert line.strip() == "reaper exited; the recorded process lives: True", \
            line + parent.stderr.read().decode()
    finally:
        kill(parent)
