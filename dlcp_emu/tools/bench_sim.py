"""`dlcp-emu bench sim`: packet-hops per second of the discrete-event simulator.

Permutation traffic on a fat tree (every host sends a burst to another host in another pod),
growing the number of packets per host to show that wall time grows linearly with
packet-hops. Packets are built before the clock starts; each size runs `repeat` times and
keeps its fastest run, as timeit does, because a shared machine only ever slows a run down.
"""
import gc
import random
import time
from pathlib import Path

import numpy as np

from switch_models import Packet
from topologies import build

from dlcp_emu.sim import SimNetwork

SIZES = (10, 40, 160, 640)   # packets per host


def run(k=8, packets_per_host=50, preset="dlcp", rate_bps=10e9, seed=1):
    topo = build("fat-tree", k=k, rate_bps=rate_bps)
    net = SimNetwork(topo, preset, seed=seed)
    hosts = topo.hosts()
    rng = random.Random(seed)
    peers = hosts[:]
    rng.shuffle(peers)
    sends = []
    for i, (src, dst) in enumerate(zip(hosts, peers)):
        if src == dst:
            continue
        for j in range(packets_per_host):
            mag = rng.randrange(8)
            sends.append((src, Packet(1500, dst, flow=i, prio=rng.randrange(8), mag=mag,
                                      droppable=mag < 3, dlcp=True, uid=len(sends))))
    gc.collect()
    start = time.perf_counter()
    for src, pkt in sends:
        net.send(src, pkt, 0)
    net.loop.run()
    elapsed = time.perf_counter() - start
    # Hops actually taken: every node a packet entered, hosts' NICs included.
    packet_hops = sum(t for t, _ in net.conservation().values())
    return {"k": k, "hosts": len(hosts), "packets": len(sends), "packet_hops": packet_hops,
            "events": net.loop.events, "delivered": net.delivered, "seconds": round(elapsed, 4),
            "packet_hops_per_s": round(packet_hops / elapsed)}


def python_loop_ns(n=2_000_000):
    """The machine's speed at plain CPython, to read the figure against: ns for one
    iteration of `for i in range(n): x += i` (the fastest of three)."""
    best = None
    for _ in range(3):
        start = time.perf_counter()
        x = 0
        for i in range(n):
            x += i
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    return round(best / n * 1e9, 1)


def topology_build_s(k=16, repeat=3):
    """Seconds to build a fat tree and one edge switch's route table (every host), the
    fastest of `repeat`: what a simulated run pays before its first event."""
    best = None
    for _ in range(repeat):
        start = time.perf_counter()
        build("fat-tree", k=k, rate_bps=100e9).equal_cost_next_hops("e1")
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    return round(best, 4)


def scaling_curve(k=8, sizes=SIZES, preset="dlcp", repeat=3):
    """The fastest of `repeat` runs at each size, and a straight-line fit of wall time
    against packet-hops (its slope is the cost of one packet-hop)."""
    curve = [min((run(k, n, preset) for _ in range(repeat)), key=lambda r: r["seconds"])
             for n in sizes]
    x = np.array([r["packet_hops"] for r in curve], float)
    y = np.array([r["seconds"] for r in curve])
    slope, intercept = np.polyfit(x, y, 1)
    r2 = 1 - ((y - (slope * x + intercept)) ** 2).sum() / ((y - y.mean()) ** 2).sum()
    return {"curve": curve, "ns_per_packet_hop": round(slope * 1e9), "fit_intercept_s": round(intercept, 4),
            "fit_r2": round(float(r2), 5), "python_loop_ns": python_loop_ns(),
            "fat_tree_k16_build_s": topology_build_s(16)}


def plot(result, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    curve = result["curve"]
    x = [r["packet_hops"] for r in curve]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(x, [r["seconds"] for r in curve], "o", label="measured (fastest of repeats)")
    slope, icpt = result["ns_per_packet_hop"] * 1e-9, result["fit_intercept_s"]
    ax.plot([0, max(x)], [icpt, icpt + slope * max(x)], "-",
            label=f"fit: {result['ns_per_packet_hop']} ns a packet-hop (R² {result['fit_r2']})")
    ax.set_xlabel("packet-hops")
    ax.set_ylabel("wall time (s)")
    ax.set_title(f"Simulator wall time, fat tree k={curve[0]['k']} ({curve[0]['hosts']} hosts), permutation")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
