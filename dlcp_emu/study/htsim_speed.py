"""How fast this simulator moves packets against htsim, on one scenario both run: a ring of
100 MB flows (host i to host i + 1) over htsim's two-tier fat tree (a leaf-spine of K leaves
with K/2 hosts each and K/2 spines, for the smallest even K that holds the hosts), 100 Gbit/s
links of 1 us, NDP over trimming queues of 1000 frames, each flow starting at one window of
104 packets (ours: `baselines`' `ndp`, payload-free, in the compiled core).

The figure is data packet-hops a second of the whole command's wall time (start-up, building,
the run, its results): the data packets each flow's sender put on the wire, retransmissions
included, times the links of its path (2 within a leaf, 4 across the spines), over the
seconds the process took. htsim's data packets are its `New:` and `Rtx:` counts. The same
geometry on both sides, so the hops per packet are the same; htsim's packets carry 1474
bytes, ours 1424 (a 1500-byte MTU), so ours has 3.5% more of them for the same bytes.

    python -m dlcp_emu.study.htsim_speed HOSTS     # ours, one JSON line (what `bench htsim --speed` times)
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

FLOW_BYTES = 100_000_000
BUFFER_FRAMES = 1000
INITIAL_WINDOW = 104
HOSTS = (8, 128)
REFERENCE = Path(__file__).resolve().parents[2] / "tests" / "reference" / "htsim" / "speed"
# htsim's own command (run_htsim_speed.sh has it whole); -end leaves room after the last flow.
HTSIM_ARGS = ("-linkspeed 100000 -mtu 1474 -queue_type composite -strat perm -end 30000 -seed 13 "
              "-tiers 2 -hop_latency 1 -q 1044 -cwnd 104")


def geometry(hosts):
    """(leaves, hosts a leaf, spines) of htsim's two-tier fat tree for `hosts` hosts."""
    if hosts < 2:
        raise ValueError(f"hosts must be at least 2, got {hosts}")
    k = 2
    while k * k // 2 < hosts:
        k += 2
    if k * k // 2 != hosts:
        raise ValueError(f"hosts must fill a two-tier fat tree (K*K/2 for an even K: 8, 18, 32, ..., 128), got {hosts}")
    return k, k // 2, k // 2


def path_links(src, dst, per_leaf):
    return 2 if src // per_leaf == dst // per_leaf else 4


def data_packet_hops(packets_by_flow, hosts):
    """Sum over the ring's flows of their data packets times their path's links."""
    _, per_leaf, _ = geometry(hosts)
    return sum(n * path_links(i, (i + 1) % hosts, per_leaf) for i, n in enumerate(packets_by_flow))


def run_ours(hosts, flow_bytes=FLOW_BYTES):
    """The ring simulated in this process: {phase seconds, data packets by flow, fct}."""
    t0 = time.perf_counter()
    from topologies import build

    from dlcp_emu.host.background import BACKGROUND_UDP_PORT, JOB, BackgroundEndpoint
    from dlcp_emu.sim.core_hosts import CoreHosts
    from dlcp_emu.sim.engines import make_network
    from dlcp_emu.study import baselines
    from dlcp_emu.transport.settings import TransportSettings
    t1 = time.perf_counter()
    leaves, per_leaf, spines = geometry(hosts)
    spec, buffer_bytes = baselines.pipeline("ndp", BUFFER_FRAMES)
    topo = build("leaf-spine", leaves=leaves, spines=spines, hosts_per_leaf=per_leaf,
                 host_rate_bps=baselines.RATE_BPS, delay_ns=baselines.DELAY_NS, buffer_bytes=buffer_bytes)
    net = make_network(topo, spec, "native")
    sim = CoreHosts(net, {}, {})
    settings = TransportSettings(initial_window=INITIAL_WINDOW)
    names = topo.hosts()
    eps = {i: BackgroundEndpoint(i, [(0, (i + 1) % hosts, flow_bytes, i)], baselines.MTU, baselines.RATE_BPS,
                                 endpoints="native", payload="sizes", settings=settings)
           for i in range(hosts)}
    sim.add_job(JOB, eps, dict(enumerate(names)), udp_port=BACKGROUND_UDP_PORT, dlcp=True)
    t2 = time.perf_counter()
    sim.start()
    net.loop.run(until=baselines.UNTIL_NS)
    sim.collect()
    t3 = time.perf_counter()
    done = {fid: d - s for ep in eps.values() for fid, _, _, s, d in ep.finished}
    if len(done) != hosts:
        raise RuntimeError(f"ring of {hosts}: {hosts - len(done)} flows did not finish")
    packets = [eps[i].data_packets for i in range(hosts)]
    return {"hosts": hosts, "imports_s": t1 - t0, "build_s": t2 - t1, "run_s": t3 - t2,
            "core_s": net.loop.core_s, "events": net.loop.events, "data_packets": packets,
            "data_packet_hops": data_packet_hops(packets, hosts), "max_fct_ms": max(done.values()) / 1e6}


def _timed(cmd, cwd=None):
    """(wall seconds, child CPU seconds, stdout) of a command run to its end."""
    before = os.times()
    t0 = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=True).stdout
    wall = time.perf_counter() - t0
    after = os.times()
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system), out


def measure_ours(hosts):
    """The whole command `python -m dlcp_emu.study.htsim_speed HOSTS`, timed from outside."""
    wall, cpu, out = _timed([sys.executable, "-m", "dlcp_emu.study.htsim_speed", str(hosts)])
    r = json.loads(out.strip().splitlines()[-1])
    r.update(wall_s=wall, cpu_s=cpu, rate=r["data_packet_hops"] / wall)
    return r


def ring_matrix(hosts):
    return "".join([f"Nodes {hosts}\nConnections {hosts}\n"] +
                   [f"{i}->{(i + 1) % hosts} id {i + 1} start 0 size {FLOW_BYTES}\n" for i in range(hosts)])


_COUNTS = re.compile(r"^New: (\d+) Rtx: (\d+)", re.M)


def measure_htsim(binary, hosts, workdir):
    """htsim_ndp on the same ring, timed from outside: {wall_s, cpu_s, data_packets, rate}."""
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    tm = workdir / f"ring_{hosts}.cm"
    tm.write_text(ring_matrix(hosts))
    cmd = [str(binary), *HTSIM_ARGS.split(), "-nodes", str(hosts), "-tm", str(tm), "-o", str(workdir / "out.dat")]
    wall, cpu, out = _timed(cmd, cwd=workdir)
    m = _COUNTS.search(out)
    if m is None or out.count("finished at") != hosts:
        raise RuntimeError(f"htsim on the ring of {hosts}: not every flow finished, or no packet counts")
    packets = int(m[1]) + int(m[2])
    # htsim counts its packets in all; every flow's are alike, so the hops are its mean's.
    hops = data_packet_hops([packets / hosts] * hosts, hosts)
    return {"hosts": hosts, "wall_s": wall, "cpu_s": cpu, "data_packets": packets, "data_packet_hops": hops,
            "rate": hops / wall}


def stored(hosts, reference=REFERENCE):
    """htsim's figures measured on this machine (reference/htsim/speed/results.json), or None."""
    path = Path(reference) / "results.json"
    if not path.is_file():
        return None
    return json.loads(path.read_text()).get(str(hosts))


def compare(hosts=HOSTS, htsim=None, workdir=None, reference=REFERENCE):
    """A row a ring size: ours measured now, htsim's measured now beside it (`htsim`: the path
    of its htsim_ndp) or else its stored figures (`stored`). Rates on wall time and on CPU
    time (the child's user + system): on a machine busy with other work the wall clock
    stretches both, CPU time less."""
    import tempfile
    rows = []
    for n in hosts:
        geometry(n)
        if htsim is not None:
            with tempfile.TemporaryDirectory() as tmp:
                theirs, how = measure_htsim(htsim, n, workdir or tmp), "side by side"
        else:
            theirs, how = stored(n, reference), "htsim's stored figures"
            if theirs is None:
                raise ValueError(f"no stored htsim figures for {n} hosts in {reference}: give --htsim PATH "
                                 "(htsim's sim/datacenter/htsim_ndp)")
        ours = measure_ours(n)
        rows.append({"hosts": n, "htsim_from": how, "ours": ours, "htsim": theirs,
                     "ratio_wall": ours["rate"] / theirs["rate"],
                     "ratio_cpu": (ours["data_packet_hops"] / ours["cpu_s"]) / (theirs["data_packet_hops"] / theirs["cpu_s"])})
    return rows


def markdown(rows):
    out = ["| hosts | ours: wall s, CPU s | M data packet-hops/s (wall; a CPU-s) | htsim: wall s, CPU s | "
           "M data packet-hops/s (wall; a CPU-s) | ours / htsim (wall; CPU) | htsim from |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        o, h = r["ours"], r["htsim"]
        out.append(f"| {r['hosts']} | {o['wall_s']:.2f}, {o['cpu_s']:.2f} | {o['rate'] / 1e6:.2f}; "
                   f"{o['data_packet_hops'] / o['cpu_s'] / 1e6:.2f} | {h['wall_s']:.2f}, {h['cpu_s']:.2f} | "
                   f"{h['rate'] / 1e6:.2f}; {h['data_packet_hops'] / h['cpu_s'] / 1e6:.2f} | "
                   f"{r['ratio_wall']:.2f}x; {r['ratio_cpu']:.2f}x | {r['htsim_from']} |")
    o = rows[0]["ours"] if rows else None
    if o is not None:
        out.append(f"\nours, {o['hosts']} hosts, in process: imports {o['imports_s']:.2f} s, build {o['build_s']:.2f} s, "
                   f"run {o['run_s']:.2f} s ({o['core_s']:.2f} s of it in the core), {o['events']:,} events")
    return "\n".join(out)


if __name__ == "__main__":
    print(json.dumps(run_ours(int(sys.argv[1]))))
