"""`dlcp-emu bench sim`: packet-hops per second of the discrete-event simulator, on the native
engine and on the Python one in the same run.

The network alone: permutation traffic on a fat tree (every host sends a burst to another
host in another pod), growing the number of packets per host to show that wall time grows
linearly with packet-hops. Packets are built before the clock starts (natively, as columns:
no Python per packet); each size runs `repeat` times and keeps its fastest run, as timeit
does, because a shared machine only ever slows a run down.

End to end: a whole simulated run of a spec (hosts, transports and agents included), as
`simulate` runs it, three ways: the native engine with the hosts' endpoints in the core (the
default), the native network with the endpoints in Python, and the Python engine.

A schedule (`schedule`): an LLM spec's run on the native engine with its schedule agents in
the core and with the Python agents over the same endpoints in the core; a payload-free ring
(`ring`) likewise, its collective steps in the core and in the Python worker.
"""
import gc
import random
import time
from pathlib import Path

import numpy as np

from switch_models import Packet
from topologies import build

from dlcp_native.network import NativeNetwork

from dlcp_emu.sim import SimNetwork

SIZES = (10, 40, 160, 640)   # packets per host
ENGINES = ("native", "python")
# End to end: name -> (engine, where the hosts' endpoints run).
WAYS = {"native": ("native", "core"), "native_network": ("native", "python"), "python": ("python", "python")}


def run(k=8, packets_per_host=50, preset="dlcp", rate_bps=10e9, seed=1, engine="python"):
    topo = build("fat-tree", k=k, rate_bps=rate_bps)
    sends = _permutation(topo, packets_per_host, seed)
    if engine == "native":
        return _run_native(topo, preset, seed, sends, k)
    net = SimNetwork(topo, preset, seed=seed)
    gc.collect()
    start = time.perf_counter()
    for src, pkt in sends:
        net.send(src, pkt, 0)
    net.loop.run()
    elapsed = time.perf_counter() - start
    return _figures(k, topo, sends, net.conservation(), net.loop.events, net.delivered, elapsed)


def _run_native(topo, preset, seed, sends, k):
    net = NativeNetwork(topo, preset, seed=seed)
    index = net.host_index
    cols = {"host": np.array([index[s] for s, _ in sends], np.int64),
            "dst": np.array([index[p.dst] for _, p in sends], np.int64),
            "time": np.zeros(len(sends), np.int64)}
    for f in ("uid", "size", "flow", "prio", "mag"):
        cols[f] = np.array([getattr(p, f) for _, p in sends], np.int64)
    for f in ("droppable", "dlcp"):
        cols[f] = np.array([getattr(p, f) for _, p in sends], bool)
    gc.collect()
    start = time.perf_counter()
    net.send_at(**cols)
    net.run()
    elapsed = time.perf_counter() - start
    return _figures(k, topo, sends, net.conservation(), net.events, net.delivered, elapsed)


def _figures(k, topo, sends, conservation, events, delivered, elapsed):
    # Hops actually taken: every node a packet entered, hosts' NICs included.
    packet_hops = sum(t for t, _ in conservation.values())
    return {"k": k, "hosts": len(topo.hosts()), "packets": len(sends), "packet_hops": packet_hops,
            "events": events, "delivered": delivered, "seconds": round(elapsed, 4),
            "packet_hops_per_s": round(packet_hops / elapsed)}


def _permutation(topo, packets_per_host, seed):
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
    return sends


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


def scaling_curve(k=8, sizes=SIZES, preset="dlcp", repeat=3, engines=ENGINES):
    """Per engine: the fastest of `repeat` runs at each size, and a straight-line fit of wall
    time against packet-hops (its slope is the cost of one packet-hop)."""
    out = {}
    for engine in engines:
        curve = [min((run(k, n, preset, engine=engine) for _ in range(repeat)), key=lambda r: r["seconds"])
                 for n in sizes]
        x = np.array([r["packet_hops"] for r in curve], float)
        y = np.array([r["seconds"] for r in curve])
        slope, intercept = np.polyfit(x, y, 1)
        r2 = 1 - ((y - (slope * x + intercept)) ** 2).sum() / ((y - y.mean()) ** 2).sum()
        out[engine] = {"curve": curve, "ns_per_packet_hop": round(slope * 1e9, 1),
                       "fit_intercept_s": round(intercept, 4), "fit_r2": round(float(r2), 5),
                       "packet_hops_per_s": max(r["packet_hops_per_s"] for r in curve)}
    return {"engines": out, "python_loop_ns": python_loop_ns(), "fat_tree_k16_build_s": topology_build_s(16)}


def end_to_end(spec_path, preset="dlcp", byte_scale=0.1, iterations=1, ways=tuple(WAYS), log=None):
    """A whole simulated run of the spec each way (`WAYS`): packet-hops per second of each,
    and whether their summaries are identical (they must be)."""
    import tempfile

    from dlcp_emu.experiment.spec import load_spec
    from dlcp_emu.sim.engines import WALL_CLOCK_KEYS
    from dlcp_emu.experiment.run import run
    from dlcp_emu.sim.run import SimBackend
    spec = load_spec(spec_path).with_field("byte_scale", byte_scale).with_field("workload.iterations", iterations)
    spec = spec.with_field("packet_records", False)
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for way in ways:
            engine, hosts = WAYS[way]
            if log:
                log(f"end to end: {spec_path} {preset}, byte scale {byte_scale:g}, {iterations} iteration(s), "
                    f"{engine} engine, hosts' endpoints in {hosts}")
            gc.collect()
            s, _ = run(spec.with_field("engine", engine), SimBackend(hosts), preset, f"{tmp}/{way}",
                       log=lambda *_: None)
            runs[way] = s
    # CPU seconds too: the gradients' draws run on threads beside the event loop (host/prefetch.py).
    out = {w: {"packet_hops": s["packet_hops"], "events": s["events"], "wall_s": round(s["wall_s"], 3),
               "cpu_s": round(s["process_cpu_s"], 3),
               "core_s": None if s["core_wall_s"] is None else round(s["core_wall_s"], 3),
               "packet_hops_per_s": s["packet_hops_per_s"],
               "packet_hops_per_cpu_s": round(s["packet_hops"] / s["process_cpu_s"])} for w, s in runs.items()}
    same = [{k: v for k, v in s.items() if k not in WALL_CLOCK_KEYS} for s in runs.values()]
    out["identical"] = all(x == same[0] for x in same)
    return {"spec": str(spec_path), "preset": preset, "byte_scale": byte_scale, "iterations": iterations, **out}


def schedule(spec_path="examples/llm-tp-dp.toml", preset="dlcp", byte_scale=None, iterations=1, payload="sizes",
             log=None):
    """The spec's schedule run (native engine, endpoints in the core) with its agents in the
    core and in Python: packet-hops per second of each, their ratio, and whether the summaries
    are identical (they must be). byte_scale: None for the spec's (the fewer bytes a message,
    the more the agents' share of the run)."""
    from dlcp_emu.experiment.spec import load_spec
    spec = load_spec(spec_path).with_field("workload.iterations", iterations).with_field("engine", "native")
    byte_scale = spec.byte_scale if byte_scale is None else byte_scale
    spec = spec.with_field("byte_scale", byte_scale)
    spec = spec.with_field("packet_records", False).with_field("payload", payload)
    label = f"schedule: {spec_path} {preset}, byte scale {byte_scale:g}, {iterations} iteration(s), payload {payload}"
    return {"spec": str(spec_path), "preset": preset, "byte_scale": byte_scale, "iterations": iterations,
            "payload": payload, **_agents_both_ways(spec, preset, label, log)}


def ring(k=8, byte_scale=0.125, preset="dlcp", log=None):
    """`examples/fat-tree-1024-sim.toml` made smaller (a fat tree of k, every host a worker, one
    payload-free ResNet-50 ring all-reduce; k=8 and byte scale 0.125 keep its ~100 KB
    messages) with the ring's collective steps in the core and in the Python worker, as
    `schedule` compares a schedule's agents."""
    from dlcp_emu.experiment.spec import load_spec
    spec = load_spec("examples/fat-tree-1024-sim.toml").with_field("byte_scale", byte_scale) \
        .with_field("workload.workers", k ** 3 // 4).with_field("topology.k", k)
    label = f"ring: fat-tree-1024-sim.toml on a fat tree k={k}, byte scale {byte_scale:g}"
    return {"hosts": k ** 3 // 4, "byte_scale": byte_scale, "preset": preset,
            **_agents_both_ways(spec, preset, label, log)}


def _agents_both_ways(spec, preset, label, log):
    """The run with its agents (or ring collectives) in the core and in Python, endpoints in the core."""
    import tempfile

    from dlcp_emu.sim.engines import WALL_CLOCK_KEYS
    from dlcp_emu.experiment.run import run
    from dlcp_emu.sim.run import SimBackend
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for agents in ("core", "python"):
            if log:
                log(f"{label}, agents in {agents}")
            gc.collect()
            runs[agents], _ = run(spec, SimBackend("core", agents), preset, f"{tmp}/{agents}", log=lambda *_: None)
    out = {a: {"packet_hops": s["packet_hops"], "wall_s": round(s["wall_s"], 3), "core_s": round(s["core_wall_s"], 3),
               "run_cpu_s": round(s["run_cpu_s"], 3), "core_cpu_s": round(s["core_cpu_s"], 3),
               "packet_hops_per_s": s["packet_hops_per_s"]} for a, s in runs.items()}
    same = [{k: v for k, v in s.items() if k not in WALL_CLOCK_KEYS} for s in runs.values()]
    return {**out, "ratio": round(out["core"]["packet_hops_per_s"] / out["python"]["packet_hops_per_s"], 2),
            "identical": same[0] == same[1]}


def _fit(runs):
    """Wall time = intercept + slope x packet-hops over `runs` (dicts with wall_s, packet_hops)."""
    x = np.array([r["packet_hops"] for r in runs], float)
    y = np.array([r["wall_s"] for r in runs])
    slope, intercept = np.polyfit(x, y, 1)
    r2 = 1 - ((y - (slope * x + intercept)) ** 2).sum() / ((y - y.mean()) ** 2).sum()
    return {"ns_per_packet_hop": round(slope * 1e9, 1), "fit_intercept_s": round(intercept, 4),
            "fit_r2": round(float(r2), 5)}


def _simulated(spec, label, log):
    import tempfile

    from dlcp_emu.experiment.run import run
    from dlcp_emu.sim.run import SimBackend
    if log:
        log(f"growth: {label}")
    gc.collect()
    with tempfile.TemporaryDirectory() as tmp:
        s, _ = run(spec, SimBackend(), spec.switch, tmp, log=lambda *_: None)
    return {"packet_hops": s["packet_hops"], "wall_s": round(s["wall_s"], 3),
            "packet_hops_per_s": s["packet_hops_per_s"], "events": s["events"]}


def growth(byte_scales=(0.025, 0.05, 0.1, 0.2), ks=(4, 6, 8), log=None):
    """How a whole run's cost grows (native engine, endpoints in the core): with bytes,
    `examples/default.toml` (dlcp, 1 iteration) at each byte scale; with hosts, one ring
    all-reduce iteration of ResNet-50 over every host of a fat tree of each k (payload-free,
    byte scale 0.05, `examples/fat-tree-1024-sim.toml` made smaller). Each with a straight-line
    fit of wall time against packet-hops."""
    from dlcp_emu.experiment.spec import load_spec
    base = load_spec("examples/default.toml").with_field("workload.iterations", 1) \
        .with_field("packet_records", False).with_field("switch", {"preset": "dlcp"})
    by_bytes = [{"byte_scale": b, **_simulated(base.with_field("byte_scale", b), f"default.toml at byte scale {b:g}",
                                                log)} for b in byte_scales]
    tree = load_spec("examples/fat-tree-1024-sim.toml").with_field("byte_scale", 0.05)
    by_hosts = []
    for k in ks:
        spec = tree.with_field("workload.workers", k ** 3 // 4).with_field("topology.k", k)
        by_hosts.append({"hosts": k ** 3 // 4, **_simulated(spec, f"ring over a fat tree k={k}", log)})
    return {"bytes": {"runs": by_bytes, **_fit(by_bytes)}, "hosts": {"runs": by_hosts, **_fit(by_hosts)}}


def plot(result, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for (engine, r), colour in zip(result["engines"].items(), ("C0", "C1")):
        curve = r["curve"]
        x = [c["packet_hops"] for c in curve]
        ax.plot(x, [c["seconds"] for c in curve], "o", color=colour, label=f"{engine} (fastest of repeats)")
        slope, icpt = r["ns_per_packet_hop"] * 1e-9, r["fit_intercept_s"]
        ax.plot([0, max(x)], [icpt, icpt + slope * max(x)], "-", color=colour,
                label=f"{engine} fit: {r['ns_per_packet_hop']:g} ns a packet-hop (R² {r['fit_r2']})")
    ax.set_xlabel("packet-hops")
    ax.set_ylabel("wall time (s)")
    ax.set_title(f"Simulator wall time, fat tree k={curve[0]['k']} ({curve[0]['hosts']} hosts), permutation",
                 fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
