"""A shell on the emulated hosts, as a Mininet user works: `dlcp-emu net SPEC` (Mininet's CLI on
the spec's network, commands fed on standard input) and Mininet's own `mn --custom
examples/mn_dlcp.py --switch dlcp`: real pings and TCP across the userspace switches, and
nothing of the network left after `exit`, Ctrl-D (end of input), SIGTERM or an error."""
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.root]

ROOT = Path(__file__).resolve().parents[1]
SPEC = """
name = "cli"
time_dilation = 2.0
byte_scale = 0.01
[topology]
kind = "leaf-spine"
leaves = 2
spines = 2
hosts_per_leaf = 1
host_rate_bps = 10e9
[workload]
model = "resnet50"
workers = 2
[switch]
preset = "dlcp"
"""
TOPOLOGY_INTERFACES = {f"{s}-eth{n}" for s, ports in (("l1", 3), ("l2", 3), ("s1", 2), ("s2", 2))
                       for n in range(1, ports + 1)}


def links():
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line}


def netns():
    return subprocess.run(["ip", "netns"], capture_output=True, text=True).stdout


def assert_nothing_left(before_links, before_ns, marker, runtime=None):
    """No interface of the topology, namespace, state file, or process whose command line
    names `marker` (the session's folder: its switch processes' configs) is left."""
    assert not (links() - before_links) & TOPOLOGY_INTERFACES, "interfaces left behind"
    assert netns() == before_ns
    if runtime is not None:
        assert not list(runtime.glob("*.json")), "the session's state file was left behind"
    alive = [p.parent.name for p in Path("/proc").glob("[0-9]*/cmdline") if marker in _read(p)]
    assert not alive, f"processes left: {alive}"


def _read(path):
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _net(tmp_path, **kw):
    (tmp_path / "spec.toml").write_text(SPEC)
    env = dict(os.environ, DLCP_EMU_RUNTIME_DIR=str(tmp_path / "runtime"))
    return subprocess.Popen([sys.executable, "-m", "dlcp_emu.cli", "net", "spec.toml", "--results",
                             "results"], cwd=tmp_path, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw)


def _switches(tmp_path):
    (run,) = (tmp_path / "results").iterdir()
    return json.loads((run / "switches.json").read_text())


# 100 frames of an EtherType no host has a protocol for, to every host: h2's kernel receives
# them and discards them. They were delivered, not lost.
UNKNOWN_ETHERTYPE = (f"h1 {sys.executable} -c \"from scapy.all import Ether, sendp; sendp([Ether("
                     f"dst='ff:ff:ff:ff:ff:ff', type=0x88b5) / (b'x' * 50)] * 100, iface='h1-eth0', "
                     f"verbose=0)\"\n")


def test_net_session_pings_and_carries_tcp_across_the_switches(tmp_path):
    before = links(), netns()
    p = _net(tmp_path, stdin=subprocess.PIPE)
    out, _ = p.communicate("h1 ping -c3 h2\n" + UNKNOWN_ETHERTYPE + "ports\niperf h1 h2 2\nexit\n"
                           "h1 ping -c1 h2\n", timeout=120)
    assert p.returncode == 0, out
    assert "3 packets transmitted, 3 received, 0% packet loss" in out, out
    assert "mininet> ports" in out and "l1-eth3" in out
    mbits = float(out.split("receiver ")[1].split(" Mbit/s")[0])
    assert mbits > 0.5, out                 # TCP across the switches (links at 20 Mbit/s here)
    assert out.count("mininet> h1 ping") == 1, "commands after `exit` ran"
    assert "every frame accounted: yes" in out, out
    assert "delivered and discarded by the hosts' kernels" in out, out
    (run,) = (tmp_path / "results").iterdir()
    checked = json.loads((run / "links.json").read_text())
    assert checked["ok"] and checked["host_discarded"] >= 100, checked
    stats = _switches(tmp_path)
    assert {s: st["stop"] for s, st in stats.items()} == dict.fromkeys(stats, "clean")
    # Every echo request and reply crossed a spine: the userspace switches carried them.
    spine_frames = sum(sum(stats[s]["tx_frames"].values()) for s in ("s1", "s2"))
    assert spine_frames >= 6 and all(st["conservation"]["ok"] for st in stats.values())
    assert_nothing_left(*before, str(tmp_path).encode(), tmp_path / "runtime")


def test_net_session_ends_cleanly_at_the_end_of_its_input(tmp_path):
    """Ctrl-D at a terminal is the end of input here: no `exit` needed."""
    before = links(), netns()
    p = _net(tmp_path, stdin=subprocess.PIPE)
    out, _ = p.communicate("h2 ping -c1 h1\n", timeout=90)
    assert p.returncode == 0 and "1 received" in out, out
    assert "network stopped and removed" in out
    assert_nothing_left(*before, str(tmp_path).encode(), tmp_path / "runtime")


def test_net_session_stopped_by_sigterm_mid_command_removes_the_network(tmp_path):
    before = links(), netns()
    p = _net(tmp_path, stdin=subprocess.PIPE)
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    seen, deadline = [], time.monotonic() + 60
    try:
        while time.monotonic() < deadline and not any("hosts:" in line for line in seen):
            if sel.select(timeout=1):
                seen.append(p.stdout.readline())
        p.stdin.write("h1 ping -i 0.2 h2\n")     # runs until interrupted
        p.stdin.flush()
        while time.monotonic() < deadline and not any("bytes from" in line for line in seen):
            if sel.select(timeout=1):
                seen.append(p.stdout.readline())
        assert any("bytes from" in line for line in seen), "".join(seen)
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
            subprocess.run([sys.executable, "-m", "dlcp_emu.cli", "clean", "--runtime-dir",
                            str(tmp_path / "runtime")], cwd=ROOT, capture_output=True, timeout=60)
    out = "".join(seen) + out
    assert p.returncode == 1, out
    assert "stopped by SIGTERM; network stopped and removed" in out, out
    # The command ended as Ctrl-C ends it, and only then the session: the signal never
    # raised inside the command, nor where Mininet's log handler would catch and print it.
    assert "packets transmitted" in out, out
    assert "*** h1: RunTerminated" not in out, out
    assert "Traceback" not in out, out
    assert_nothing_left(*before, str(tmp_path).encode(), tmp_path / "runtime")



def test_net_session_stops_on_sigterm_even_when_the_command_swallowed_it(tmp_path):
    """Mininet's log handler catches every exception raised while it writes, SIGTERM's too:
    a command that swallows the signal must still end the session, and nothing after it runs."""
    before = links(), netns()
    p = _net(tmp_path, stdin=subprocess.PIPE)
    swallow = ('py exec("try:\\n import os, time\\n os.kill(os.getpid(), 15)\\n time.sleep(1)\\n'
               'except BaseException as e:\\n print(\'swallowed\', type(e).__name__)")\n')
    out, _ = p.communicate(swallow + "h1 ping -c1 h2\n", timeout=120)
    assert "swallowed RunTerminated" in out, out
    assert p.returncode == 1, out
    assert "stopped by SIGTERM; network stopped and removed" in out, out
    assert "mininet> h1 ping" not in out, "a command after the signal ran"
    assert_nothing_left(*before, str(tmp_path).encode(), tmp_path / "runtime")


# mn's fallback cleanup (`mn -c`) kills processes by name across the machine: should it ever
# be reached here (the custom file failed to replace it), it is refused and the test fails.
MN = """
import runpy, sys
import mininet.clean
def refuse():
    print("MININET-CLEANUP-CALLED")
mininet.clean.cleanup = refuse
sys.argv = ["mn"] + sys.argv[1:]
runpy.run_path("/usr/bin/mn", run_name="__main__")
"""


def _mn_popen(*args, runtime=None, stdin=None):
    if shutil.which("mn") is None:
        pytest.fail("mn (Debian package mininet) is not installed: `sudo make setup`")
    env = dict(os.environ, **({"DLCP_EMU_RUNTIME_DIR": str(runtime)} if runtime else {}))
    return subprocess.Popen(["/usr/bin/python3", "-c", MN, "--custom", "examples/mn_dlcp.py",
                             "--controller", "none", *args], cwd=ROOT, text=True, env=env, stdin=stdin,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _mn_stats_dir(pid):
    """Where an mn of ours kept its switches' configs and stats: results/<stamp>-mn-<pid>."""
    found = list((ROOT / "results").glob(f"*-mn-{pid}"))
    return found[0] if found else None


def _mn(*args, timeout=120):
    p = _mn_popen(*args)
    out, _ = p.communicate(timeout=timeout)
    stats_dir = _mn_stats_dir(p.pid)
    left = [q.parent.name for q in Path("/proc").glob("[0-9]*/cmdline")
            if stats_dir and str(stats_dir).encode() in _read(q)]
    stats = {f.name.split(".")[0]: json.loads(f.read_text()) for f in stats_dir.glob("*.stats.json")} \
        if stats_dir else {}
    if stats_dir:
        assert f"(dlcp switches: configs and stats in {stats_dir})" in out, out
        shutil.rmtree(stats_dir)
    assert not list(Path("/tmp").glob(f"dlcp-mn-{p.pid}*")), "a temporary folder was left"
    assert "MININET-CLEANUP-CALLED" not in out, out
    assert not left, f"switch processes left: {left}"
    return p.returncode, out, stats


def test_mn_custom_switch_and_topology_pass_pingall_and_iperf():
    before = links(), netns()
    rc, out, stats = _mn("--switch", "dlcp,preset=dlcp", "--topo",
                         "leafspine,hosts_per_leaf=1,host_rate_bps=20e6", "--test", "pingall+iperf,2")
    assert rc == 0 and "*** Results: 0% dropped (2/2 received)" in out, out
    mbits = float(out.split("receiver ")[1].split(" Mbit/s")[0])
    assert mbits > 0.5, out
    assert sorted(stats) == ["l1", "l2", "s1", "s2"]
    assert all(st["final"] and st["conservation"]["ok"] for st in stats.values())
    assert all("spray" in st["pipeline"] for st in stats.values())         # the dlcp preset
    assert sum(sum(stats[s]["tx_frames"].values()) for s in ("s1", "s2")) >= 4
    assert_nothing_left(*before, b"dlcp-mn-")


def test_mn_error_removes_only_what_it_started():
    before = links(), netns()
    rc, out, stats = _mn("--switch", "dlcp", "--topo", "leafspine,2,2,1", "--test", "nosuchtest")
    assert "Test nosuchtest is unknown" in out, out
    assert rc == 1, out                             # mn itself would have said 0
    assert "dlcp: stopped this mn's switch processes, deleted 6 interface(s)" in out, out
    assert "Removing excess" not in out            # Mininet's own cleanup did not run
    assert sorted(stats) == ["l1", "l2", "s1", "s2"]
    assert_nothing_left(*before, b"dlcp-mn-")


def test_mn_with_an_unknown_preset_says_so_and_fails():
    before = links(), netns()
    rc, out, _ = _mn("--switch", "dlcp,preset=fiffo", "--topo", "leafspine,2,2,1", "--test", "pingall")
    assert rc == 1, out
    assert "--switch dlcp,preset=fiffo: unknown preset 'fiffo'; known: dlcp, " in out, out
    assert_nothing_left(*before, b"-mn-")


def test_a_killed_mn_leaves_what_clean_removes(tmp_path):
    """SIGKILL: no handler of mn's runs. Its switch processes end with it (they watch their
    parent), its switches' interfaces stay; `dlcp-emu clean` finds them in mn's state file."""
    before = links(), netns()
    p = _mn_popen("--switch", "dlcp", "--topo", "leafspine,2,2,1", runtime=tmp_path, stdin=subprocess.PIPE)
    deadline = time.monotonic() + 60
    state = None
    while time.monotonic() < deadline and p.poll() is None:   # until every switch is recorded
        files = list(tmp_path.glob("mn-*.json"))
        state = json.loads(files[0].read_text()) if files else None
        if state and len(state["processes"]) == 4:
            break
        time.sleep(0.1)
    assert state and len(state["processes"]) == 4, (state, p.poll())
    stats_dir = _mn_stats_dir(p.pid)
    p.kill()
    p.communicate(timeout=30)
    left_behind = (links() - before[0]) & TOPOLOGY_INTERFACES
    assert left_behind, "a killed mn left nothing: the test shows nothing"
    r = subprocess.run([sys.executable, "-m", "dlcp_emu.cli", "clean", "--runtime-dir", str(tmp_path)],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and f"run {state['run_id']}: killed" in r.stdout, r.stdout + r.stderr
    deleted = set(r.stdout.split("deleted interfaces ")[1].strip().split(", "))
    assert deleted & left_behind and deleted <= TOPOLOGY_INTERFACES, r.stdout   # a veth takes its peer along
    shutil.rmtree(stats_dir)
    assert_nothing_left(*before, b"-mn-", runtime=tmp_path)
