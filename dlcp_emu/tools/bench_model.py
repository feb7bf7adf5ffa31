"""`dlcp-emu bench model`: packets per second through one switch, native and Python, in process.

A 4-port switch: two input ports send to a destination reachable over two equal-cost
egress ports at 1.25x their capacity, so queues build, priorities matter and the queue
manager drops: the work a bottleneck switch does. Packets are built before the clock
starts; the figure is the model's own cost, which the real-time switch adds socket I/O to.

The same packets go through the native switch (`NativeSwitch.run_batch`: no Python per
packet) and the Python model (receive per packet, poll every `batch` packets) in one run;
both must give the same departures and counters (`identical`).
"""
import random
import time

import numpy as np

from dlcp_native.switch import NativeSwitch
from switch_models import ETHERNET_OVERHEAD, Packet, PortConfig, Switch

EGRESS_RATE = 10e9
OVERLOAD = 1.25


def make_packets(n, seed=1):
    rng = random.Random(seed)
    sizes = (64, 1500, 1500, 1500, 9000 // 6)
    pkts = []
    for i in range(n):
        size = sizes[i % len(sizes)]
        mag = rng.randrange(8)
        pkts.append(Packet(size, "far", flow=rng.randrange(64), prio=rng.randrange(8), mag=mag,
                           layer=rng.randrange(50), droppable=mag < 4, dlcp=True, uid=i))
    return pkts


def _switch(engine, preset, seed):
    ports = {p: PortConfig(EGRESS_RATE, buffer_bytes=512 * 1024) for p in (1, 2, 3, 4)}
    return engine("bench", ports, {"far": (3, 4), "near": (1, 2)}, preset, seed=seed)


def _columns(pkts, gap):
    """The packets as run_batch's columns (taken before the Python model trims any)."""
    def col(field, dtype=np.int64):
        return np.array([getattr(p, field) for p in pkts], dtype=dtype)
    uid = col("uid")
    return dict(uid=uid, size=col("size"), flow=col("flow"), prio=col("prio"), mag=col("mag"),
                layer=col("layer"), droppable=col("droppable", bool), dlcp=col("dlcp", bool),
                in_port=1 + (uid & 1), arrival=gap * np.arange(1, len(pkts) + 1, dtype=np.int64))


def run(preset, packets=200_000, batch=32, seed=1):
    pkts = make_packets(packets, seed)
    mean_size = sum(p.size + ETHERNET_OVERHEAD for p in pkts) / len(pkts)
    gap = int(mean_size * 8e9 / (2 * EGRESS_RATE * OVERLOAD))  # ns between arrivals
    columns = _columns(pkts, gap)

    native = _switch(NativeSwitch, preset, seed)
    columns["dst"] = np.full(packets, native.route_index("far"), dtype=np.int64)
    start = time.perf_counter()
    result = native.run_batch(**columns)
    native_elapsed = time.perf_counter() - start

    sw = _switch(Switch, preset, seed)
    receive, poll = sw.receive, sw.poll
    out = []
    t = 0
    start = time.perf_counter()
    for i in range(0, packets, batch):
        for pkt in pkts[i:i + batch]:
            t += gap
            receive(pkt, 1 + (pkt.uid & 1), t)
        out.extend(poll(t))
    end_t = sw.next_event_time()
    while end_t is not None:
        out.extend(poll(end_t))
        end_t = sw.next_event_time()
    python_elapsed = time.perf_counter() - start

    taken, accounted = native.conservation()
    counters = native.counters()
    drops = sum(sum(p["drops"].values()) for p in counters["ports"].values())
    sent = len(result.departures["uid"])
    d = result.departures
    identical = (counters == sw.counters() and
                 sorted(zip(d["uid"].tolist(), d["port"].tolist(), d["depart"].tolist())) ==
                 sorted((p.uid, port, p.depart) for port, p in out))
    return {
        "preset": preset,
        "pipeline": sw.spec.describe(),
        "packets": packets,
        "seconds": round(native_elapsed, 4),
        "pps": round(packets / native_elapsed),
        "ns_per_packet": round(native_elapsed / packets * 1e9),
        "python_seconds": round(python_elapsed, 4),
        "python_pps": round(packets / python_elapsed),
        "python_ns_per_packet": round(python_elapsed / packets * 1e9),
        "forwarded": sent,
        "dropped": drops,
        "conserved": taken == accounted == sent + drops,
        "identical": identical,
    }
