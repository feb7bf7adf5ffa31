"""Real Mininet, real packets, through our switch processes (root only).

Each test builds its own small net with EmulationRun and checks, besides what it is about,
that the switches conserved every frame and that nothing of the run is left behind.
"""
import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from dlcp_emu.emu import cleanup, links
from dlcp_emu.emu.cpu import cpu_steal_s
from dlcp_emu.emu.net import EmulationRun, root_interfaces
from topologies import build

pytestmark = [pytest.mark.root]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = sys.executable
MBPS = 1e6


# -- helpers --------------------------------------------------------------------------------

def link_names():
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True).stdout
    return {line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line}


def netns_list():
    return subprocess.run(["ip", "netns"], capture_output=True, text=True).stdout.split()


@contextlib.contextmanager
def emulate(tmp_path, topology, pipeline, **kw):
    """EmulationRun that afterwards checks: no interface, namespace, state file or recorded
    process of the run is left."""
    rt = tmp_path / "runtime"
    links0, ns0 = link_names(), netns_list()
    run = EmulationRun(topology, pipeline, runtime_dir=str(rt), run_dir=str(tmp_path / "run"), **kw)
    recorded = []
    try:
        with run:
            yield run
            recorded = list(run.state.data["processes"])
    finally:
        recorded = recorded or (list(run.state.data["processes"]) if run.state else [])
    ours = set(root_interfaces(topology))
    assert not (link_names() - links0) & ours, "interfaces left behind"
    assert link_names() & ours <= links0 & ours
    assert netns_list() == ns0
    assert not [p for p in recorded if cleanup.process_alive(p["pid"], p["start"])]
    assert not list(rt.glob("*.json")), "state file left behind"
    if run.switch_override is None and run.mode == "model":
        # Every link balances: nothing was on its way, unseen, when the switches stopped.
        assert run.drained and run.links["ok"], run.links["unbalanced"]


def assert_conserved(stats):
    for name, st in stats.items():
        assert st is not None and st["final"], f"{name}: no final stats"
        c = st["conservation"]
        assert c["ok"], (name, c)
        assert c["queued"] == 0 and c["on_link"] == 0, (name, c)
        assert sum(st["tx_errors"].values()) == 0, (name, st["tx_errors"])


def kernel_drops(stats):
    """Frames the kernel dropped at the switches' receive sockets (ring full: the switch fell
    behind, which it reports) before the model ever saw them."""
    return sum(sum(st["rx_socket_drops"].values()) for st in stats.values())


def assert_all_accounted(run, sent, got):
    """Every frame sent arrived, or the kernel dropped it, counted, at a switch's socket or the
    receiver's (on a loaded 2-core machine a few in thousands), and the receiver waited for
    all of them rather than giving up."""
    lost = kernel_drops(run.stats) + got["socket_drops"]
    assert got["received"] + lost == sent and lost <= 0.01 * sent, (got, lost, sent)


def traffic(run, host, *args):
    return run.popen(host, [PY, "-m", "dlcp_emu.emu.trafficgen", *map(str, args)], cwd=ROOT)


def start_receiver(run, tmp_path, host, duration, idle=0.7, **kw):
    ready = tmp_path / f"recv-{host}.ready"
    ready.unlink(missing_ok=True)   # an earlier receiver's: would let the sender start too soon
    extra = [a for k, v in kw.items() for a in (f"--{k}", v)]
    p = traffic(run, host, "recv", "--intf", f"{host}-eth0", "--duration", duration, "--idle",
                idle, "--ready", ready, *extra)
    wait_for(lambda: ready.exists() or p.poll() is not None, 10, "receiver ready")
    assert p.poll() is None, p.stderr.read().decode()
    return p


def sender_args(t, src, dst, rate_pps, duration, classes, **kw):
    args = ["send", "--intf", f"{src}-eth0", "--src-mac", t.host_mac(src), "--dst-mac",
            t.host_mac(dst), "--src-ip", t.host_ip(src), "--dst-ip", t.host_ip(dst),
            "--rate-pps", rate_pps, "--duration", duration]
    for c in classes:
        args += ["--class", c]
    for k, v in kw.items():
        args += [f"--{k.replace('_', '-')}", v]
    return args


def finish(p, timeout=30):
    out, err = p.communicate(timeout=timeout)
    assert p.returncode == 0, err.decode()
    return json.loads(out)


def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    delay = 0.01
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def iperf3(run, server, client, seconds, extra=()):
    srv = run.popen(server, ["iperf3", "-s", "-1", "-J"])
    h = run.host(server)
    wait_for(lambda: ":5201" in h.cmd("ss -ltnH"), 10, "iperf3 server")
    cli = run.popen(client, ["iperf3", "-c", h.IP(), "-t", str(seconds), "-J", *extra])
    c_out, _ = cli.communicate(timeout=seconds + 20)
    s_out, _ = srv.communicate(timeout=20)
    return json.loads(c_out), json.loads(s_out)


# -- tests ----------------------------------------------------------------------------------

@pytest.mark.slow
def test_ping_and_tcp_across_leaf_spine(tmp_path):
    """Every host reaches every other, and TCP across three switches gets over 70% of the
    100 Mbit/s links. A try below that whose switches say they fell behind (a loaded machine)
    may be run again, up to three in all; the last one decides."""
    t = build("leaf-spine", leaves=2, spines=2, hosts_per_leaf=2, host_rate_bps=100 * MBPS)
    for k in range(3):
        with emulate(tmp_path / f"try-{k}", t, "fifo") as run:
            # No static ARP: requests are flooded on the tree, replies routed.
            assert run.net.pingAll(timeout=2) == 0
            client, server = iperf3(run, "h3", "h1", 2)
        assert_conserved(run.stats)
        got = client["end"]["sum_received"]
        if got["bits_per_second"] > 70 * MBPS or not any(st["fell_behind"] for st in run.stats.values()):
            break
    assert got["bits_per_second"] > 70 * MBPS, (got, {n: st["lateness"] for n, st in run.stats.items()})
    assert got["bytes"] > 10_000_000
    # h1 -> h3 crosses l1, one spine, l2: both leaves carried the flow.
    assert run.stats["l1"]["tx_frames"]["3"] + run.stats["l1"]["tx_frames"]["4"] > 5000


@pytest.mark.slow
def test_a_stop_mid_flow_accounts_for_every_frame_on_every_link(tmp_path):
    """h1 sends to h2 at its line rate across l1, a spine and l2 (2 ms a link), and the run
    stops while it does: the hosts first, then the switches once the network is quiet, so
    every link of the network balances (`emulate` asserts it of every run) and the frames
    that were on their way reached h2."""
    t = build("leaf-spine", leaves=2, spines=2, hosts_per_leaf=1, host_rate_bps=100 * MBPS,
              delay_ns=2_000_000)
    pps = 100 * MBPS / ((90 + 1000 + 24) * 8)
    with emulate(tmp_path, t, "fifo") as run:
        sender = traffic(run, "h1", *sender_args(t, "h1", "h2", pps, 60.0, ["7:0:0:1000:1"],
                                                 flows=8))
        # Until the periodic stats show the flow through l2's uplinks (both spines).
        wait_for(lambda: sum((run.switch("l2").stats() or {}).get("rx_frames", {}).get(str(n), 0)
                             for n in (2, 3)) > 2000, 30, "the flow across the spines")
        assert sender.poll() is None                     # still sending when the run stops
    checked = run.links
    l2_h2 = next(r for r in checked["links"] if r["link"] == "l2:1->h2:0")
    assert l2_h2["tx"] > 2000 and l2_h2["rx"] + sum(l2_h2["lost"].values()) == l2_h2["tx"]
    assert checked["frames"] > 4 * 2000


def test_a_muted_host_puts_nothing_on_its_link_and_counts_what_it_tried(tmp_path):
    """What a stop does once the network is quiet, before the switches stop: a muted host's
    kernel (a TCP retransmission seconds late, here pings) puts no frame on its link, and what
    it tried is counted at its egress; the stop still drains and every link balances."""
    t = build("star", hosts=2, host_rate_bps=100 * MBPS)
    with emulate(tmp_path, t, "fifo") as run:
        h1, h2 = run.host("h1"), run.host("h2")
        assert " 3 received" in h1.cmd(f"ping -c 3 -i 0.2 -W 1 {h2.IP()}")
        run.mute_hosts()
        tx = links.host_counters(h1.pid)["h1-eth0"]["tx"]
        assert " 0 received" in h1.cmd(f"ping -c 3 -i 0.2 -W 1 {h2.IP()}")
        assert links.host_counters(h1.pid)["h1-eth0"]["tx"] == tx
        assert run.host_queue_drops()["h1"] >= 3
    assert run.host_muted["h1"] >= 3 and run.host_muted["h2"] == 0


def pacing_figures(run, client, server, rate):
    """What the pacing claim reads, and whether it holds: iperf3's goodput over the run, its
    whole-second intervals at the receiver, and the bits the switch port put on the wire."""
    got = client["end"]["sum_received"]["bits_per_second"]
    intervals = [iv["sum"]["bits_per_second"] for iv in server["intervals"][1:-1]]
    port = run.stats["s1"]["model"]["ports"]["2"]
    secs = client["end"]["sum_received"]["seconds"]
    wire = (port["tx_bytes"] + 24 * port["tx_packets"]) * 8 / secs
    ok = 0.9 * rate <= got <= 1.02 * rate and max(intervals) <= 1.02 * rate and wire <= 1.02 * rate
    return ok, {"goodput": got, "intervals": intervals, "wire": wire}


@pytest.mark.slow
def test_tcp_is_paced_at_the_port_rate(tmp_path):
    """TCP through a 100 Mbit/s port gets 90-102% of it, and no whole second beats the wire.
    A try whose switch says it fell behind (a loaded machine) and missed may be run again, up
    to three in all; the last one decides."""
    rate = 100 * MBPS
    t = build("star", hosts=2, host_rate_bps=rate)
    for k in range(3):
        stolen, t0 = cpu_steal_s(), time.monotonic()
        with emulate(tmp_path / f"try-{k}", t, "fifo") as run:
            client, server = iperf3(run, "h2", "h1", 3)
        assert_conserved(run.stats)
        ok, figures = pacing_figures(run, client, server, rate)
        if ok or not run.stats["s1"]["fell_behind"]:
            break
    now_stolen = cpu_steal_s()
    steal = (None if stolen is None or now_stolen is None
             else (now_stolen - stolen) / ((time.monotonic() - t0) * (os.cpu_count() or 1)))
    assert ok, (figures, {"fell_behind": run.stats["s1"]["fell_behind"], "cpu_steal_share": steal,
                          "lateness": run.stats["s1"]["lateness"]})


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["auto", "python"])
def test_strict_priority_and_dlcp_dropping_under_overload(tmp_path, engine):
    """h1 and h2 each send 100 Mbit/s to h3's 100 Mbit/s port (2:1). Classes: high (prio 0,
    mag 7, not droppable) 20%, mid (prio 4, mag 6, droppable) 20%, low (prio 7, mag 0,
    droppable) 60%. The switch model compiled (auto: every stage of dlcp is native) and in
    Python."""
    # 1 MB of buffer: the mid class is refused only above 87.5 % of it, the low one above
    # 50 %. A switch that fell behind takes the frames that waited beyond one batch as
    # arrived at its last poll, all at once (datapath: the model's clock never runs back),
    # which can fill the buffer past the mid class's threshold: such a try that lost mid
    # frames may be run again, up to three in all; the last one decides.
    t = build("star", hosts=3, host_rate_bps=100 * MBPS, buffer_bytes=1_000_000)
    payload = 1000
    pps = 100 * MBPS / ((90 + payload + 24) * 8)          # each sender at the line rate
    classes = [f"0:7:0:{payload}:1", f"4:6:1:{payload}:1", f"7:0:1:{payload}:3"]
    for k in range(3):
        # Unpaced hosts: the raw senders' bursts reach the switch as they leave, as before
        # hosts were paced by default: this test is about the switch's classes alone.
        with emulate(tmp_path / f"try-{k}", t, "dlcp", pace_hosts=False, switch_opts={"engine": engine}) as run:
            rx = start_receiver(run, tmp_path, "h3", 8, idle=1.0)
            start = time.monotonic() + 0.5
            senders = [traffic(run, h, *sender_args(t, h, "h3", pps, 2.0, classes, start_at=start))
                       for h in ("h1", "h2")]
            sent = [finish(s) for s in senders]
            got = finish(rx)
        assert_conserved(run.stats)
        assert run.stats["s1"]["engine"] == ("native" if engine == "auto" else "python")
        mid_sent = sum(s["per_class"][1] for s in sent)
        if got["classes"]["4:6:1"]["count"] == mid_sent or not run.stats["s1"]["fell_behind"]:
            break
    sent_by = [sum(s["per_class"][i] for s in sent) for i in range(3)]
    cls = got["classes"]
    high, mid, low = cls["0:7:0"], cls["4:6:1"], cls["7:0:1"]
    # Non-droppable and high-magnitude packets all arrive; the low-magnitude ones pay.
    assert high["count"] == sent_by[0], (high, sent_by)
    assert mid["count"] == sent_by[1], (mid, sent_by, run.stats["s1"]["lateness"])
    assert low["count"] < 0.5 * sent_by[2], (low, sent_by)
    drops = run.stats["s1"]["conservation"]["dropped"]
    assert set(drops) <= {"dlcp_threshold", "dlcp_evicted"}, drops
    assert sum(drops.values()) == sent_by[2] - low["count"]
    # Strict priority: the high class barely queues, the low one waits behind everything.
    assert high["delay_p99_us"] < low["delay_p50_us"], (high, low)
    assert high["delay_p50_us"] * 5 < low["delay_p50_us"], (high, low)
    assert mid["delay_p50_us"] < low["delay_p50_us"], (mid, low)


def test_one_way_latency_ends_at_the_kernels_delivery_not_the_receivers_read(tmp_path):
    """The traffic receiver times a frame to when the kernel put it in its socket: stopped
    for 0.3 s while frames came (SIGSTOP, by pid), it reports that wait as its own
    (`rx_wait_*`), not as the network's latency."""
    t = build("star", hosts=2, host_rate_bps=100 * MBPS)
    with emulate(tmp_path, t, "fifo") as run:
        rx = start_receiver(run, tmp_path, "h2", 6, idle=1.5)
        start = time.monotonic() + 0.3
        tx = traffic(run, "h1", *sender_args(t, "h1", "h2", 2000, 1.2, ["0:7:0:100:1"], start_at=start))
        time.sleep(max(0.0, start + 0.3 - time.monotonic()))
        os.kill(rx.pid, signal.SIGSTOP)      # the stimulus: 0.3 s of frames nobody reads
        time.sleep(0.3)
        os.kill(rx.pid, signal.SIGCONT)
        sent, got = finish(tx), finish(rx)
    assert got["received"] == sent["sent"] > 2000, (got, sent)
    cls = got["classes"]["0:7:0"]
    assert 0 < cls["delay_p50_us"] and cls["delay_p99_us"] < 50_000, cls   # the network's time
    assert got["rx_wait_p99_us"] > 100_000, got                            # the receiver's


def test_sampled_probes_go_to_their_own_host_and_the_load_to_its_own(tmp_path):
    """`--probe-dst-mac/--probe-dst-ip` (bench switch's latency probe): one frame in 10 goes
    to h3, stamped and marked job 1; the other nine go to h2."""
    t = build("star", hosts=3, host_rate_bps=100 * MBPS)
    with emulate(tmp_path, t, "fifo") as run:
        rx_load = start_receiver(run, tmp_path, "h2", 5, idle=1.0)
        rx_probe = start_receiver(run, tmp_path, "h3", 5, idle=1.0, job=1)
        tx = traffic(run, "h1", *sender_args(t, "h1", "h2", 1000, 1.0, ["0:7:0:100:1"], sample_every=10,
                                             probe_dst_mac=t.host_mac("h3"), probe_dst_ip=t.host_ip("h3")))
        sent, load, probes = finish(tx), finish(rx_load), finish(rx_probe)
    assert sent["sent"] >= 900
    assert probes["received"] == -(-sent["sent"] // 10), (probes, sent)
    assert load["received"] == sent["sent"] - probes["received"], (load, sent)
    assert probes["classes"]["0:7:0"]["delay_p50_us"] > 0


@pytest.mark.slow
def test_spray_uses_every_spine_and_ecmp_pins_flows(tmp_path):
    t = build("leaf-spine", leaves=2, spines=2, hosts_per_leaf=2, host_rate_bps=100 * MBPS)
    # Spray (dlcp preset): every packet takes the next spine.
    # The receiver waits for exactly what is sent (bounded by 30 s, or 3 s without a frame).
    with emulate(tmp_path / "spray", t, "dlcp") as run:
        rx = start_receiver(run, tmp_path, "h3", 30, idle=3.0, expect=4000)
        s = traffic(run, "h1", *sender_args(t, "h1", "h3", 4000, 2.0, ["0:7:0:200:1"], flows=4,
                                            count=4000))
        sent = finish(s)["sent"]
        got = finish(rx, timeout=40)
    assert sent == 4000
    assert_all_accounted(run, sent, got)
    assert_conserved(run.stats)
    up = run.stats["l1"]["tx_frames"]
    a, b = up["3"], up["4"]
    # Besides ours, only the odd flooded frame (a host's IPv6 chatter before it was muted).
    assert sent <= a + b <= sent + 2 * sum(run.stats["l1"]["flood_frames"].values())
    assert abs(a - b) <= 0.03 * sent, (a, b)
    # ECMP (fifo preset): each flow stays on one uplink; read from the leaf's pcaps.
    with emulate(tmp_path / "ecmp", t, "fifo", pcap=True) as run:
        rx = start_receiver(run, tmp_path, "h3", 30, idle=3.0, expect=3000)
        s = traffic(run, "h1", *sender_args(t, "h1", "h3", 3000, 2.0, ["0:7:0:200:1"], flows=16,
                                            count=3000))
        sent = finish(s)["sent"]
        got = finish(rx, timeout=40)
    assert sent == 3000
    assert_all_accounted(run, sent, got)
    assert_conserved(run.stats)
    pcap_dir = tmp_path / "ecmp" / "run" / "pcap"
    flows_on = {}
    for port in (3, 4):
        from scapy.utils import rdpcap
        pkts = rdpcap(str(pcap_dir / f"l1-eth{port}-tx.pcap"))
        flows_on[port] = {bytes(p)[34] << 8 | bytes(p)[35] for p in pkts if len(p) >= 90}
        assert len(pkts) == run.stats["l1"]["tx_frames"][str(port)]
    assert flows_on[3] and flows_on[4], flows_on            # 16 flows: both spines used
    assert not flows_on[3] & flows_on[4], flows_on          # no flow on both
    assert len(flows_on[3] | flows_on[4]) == 16
    out = subprocess.run(["tcpdump", "-nr", str(pcap_dir / "l1-eth3-tx.pcap"), "-c", "3"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and "UDP" in out.stdout, out.stderr


@pytest.mark.slow
def test_clean_after_the_runner_and_its_reaper_are_killed(tmp_path):
    rt = tmp_path / "runtime"
    t_args = dict(leaves=2, spines=2, hosts_per_leaf=1, host_rate_bps=100 * MBPS)
    topo = build("leaf-spine", **t_args)
    ours = set(root_interfaces(topo))
    links0 = link_names()
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {ROOT!r})
        from topologies import build
        from dlcp_emu.emu.net import EmulationRun
        run = EmulationRun(build("leaf-spine", **{t_args!r}), "fifo", runtime_dir={str(rt)!r},
                           run_dir={str(tmp_path / 'run')!r})
        run.__enter__()
        run.popen("h1", ["sleep", "60"])     # a traffic process, recorded
        print("UP", run.state.path, run._reaper.pid, flush=True)
        time.sleep(60)
    """)
    runner = subprocess.Popen([PY, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              cwd=ROOT, start_new_session=True)
    try:
        line = b""
        deadline = time.monotonic() + 30
        while not line.startswith(b"UP") and time.monotonic() < deadline and runner.poll() is None:
            line = runner.stdout.readline()
        assert line.startswith(b"UP"), runner.stderr.read().decode() if runner.poll() is not None else line
        with open(line.split()[1]) as f:
            state = json.load(f)
        assert ours <= link_names()
    finally:
        # The run's reaper first, as if it had died too: then only `clean` is left to do it.
        if line.startswith(b"UP"):
            os.kill(int(line.split()[2]), signal.SIGKILL)
        os.kill(runner.pid, signal.SIGKILL)
        runner.wait(timeout=10)
    procs = state["processes"]
    assert {p["kind"] for p in procs} >= {"host", "switch", "traffic"}
    env = dict(os.environ, DLCP_EMU_RUNTIME_DIR=str(rt))
    out = subprocess.run([PY, "-m", "dlcp_emu.cli", "clean", "--json"], capture_output=True,
                         text=True, env=env, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert len(report["runs"]) == 1 and "skipped" not in report["runs"][0], report
    wait_for(lambda: not [p for p in procs if cleanup.process_alive(p["pid"], p["start"])], 5,
             "recorded processes to go")
    assert not (link_names() - links0) & ours
    assert not list(rt.glob("*.json"))
    # A second clean finds nothing to do.
    out = subprocess.run([PY, "-m", "dlcp_emu.cli", "clean", "--json"], capture_output=True,
                         text=True, env=env, cwd=ROOT, timeout=60)
    assert json.loads(out.stdout)["runs"] == []


@pytest.mark.slow
def test_sigterm_to_the_runner_tears_everything_down(tmp_path):
    rt = tmp_path / "runtime"
    t_args = dict(hosts=2, host_rate_bps=100 * MBPS)
    ours = set(root_interfaces(build("star", **t_args)))
    links0 = link_names()
    script = textwrap.dedent(f"""
        import json, sys, time
        sys.path.insert(0, {ROOT!r})
        from topologies import build
        from dlcp_emu.emu.net import EmulationRun, RunTerminated
        run = EmulationRun(build("star", **{t_args!r}), "fifo", runtime_dir={str(rt)!r},
                           run_dir={str(tmp_path / 'run')!r})
        try:
            with run:
                run.popen("h1", ["sleep", "60"])
                print("UP", json.dumps(run.state.data["processes"]), flush=True)
                time.sleep(60)
        except RunTerminated:
            print("STATS", json.dumps({{k: v["final"] for k, v in run.stats.items()}}), flush=True)
    """)
    runner = subprocess.Popen([PY, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              cwd=ROOT, start_new_session=True)
    try:
        line = runner.stdout.readline()
        assert line.startswith(b"UP"), runner.stderr.read().decode()
        procs = json.loads(line.split(b" ", 1)[1])
        os.kill(runner.pid, signal.SIGTERM)
        out, err = runner.communicate(timeout=30)
    finally:
        if runner.poll() is None:
            os.kill(runner.pid, signal.SIGKILL)
            runner.wait()
    assert b'STATS {"s1": true}' in out, err.decode()
    assert not [p for p in procs if cleanup.process_alive(p["pid"], p["start"])]
    assert not (link_names() - links0) & ours
    assert not list(rt.glob("*.json"))
