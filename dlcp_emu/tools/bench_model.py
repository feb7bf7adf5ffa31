"""`dlcp-emu bench model`: packets per second through one switch model, in process.

A 4-port switch: two input ports send to a destination reachable over two equal-cost
egress ports at 1.25x their capacity, so queues build, priorities matter and the queue
manager drops: the work a bottleneck switch does. Packets are built before the clock
starts; the figure is the model's own cost, which the real-time switch adds socket I/O to.
"""
import random
import time

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


def run(preset, packets=200_000, batch=32, seed=1):
    pkts = make_packets(packets, seed)
    ports = {p: PortConfig(EGRESS_RATE, buffer_bytes=512 * 1024) for p in (1, 2, 3, 4)}
    sw = Switch("bench", ports, {"far": (3, 4), "near": (1, 2)}, preset, seed=seed)
    mean_size = sum(p.size + ETHERNET_OVERHEAD for p in pkts) / len(pkts)
    gap = int(mean_size * 8e9 / (2 * EGRESS_RATE * OVERLOAD))  # ns between arrivals
    receive, poll = sw.receive, sw.poll
    sent = 0
    t = 0
    start = time.perf_counter()
    for i in range(0, packets, batch):
        for pkt in pkts[i:i + batch]:
            t += gap
            receive(pkt, 1 + (pkt.uid & 1), t)
        sent += len(poll(t))
    end_t = sw.next_event_time()
    while end_t is not None:
        sent += len(poll(end_t))
        end_t = sw.next_event_time()
    elapsed = time.perf_counter() - start
    taken, accounted = sw.conservation()
    drops = sum(sum(p.counters.drops.values()) for p in sw.ports.values())
    return {
        "preset": preset,
        "pipeline": sw.spec.describe(),
        "packets": packets,
        "seconds": round(elapsed, 4),
        "pps": round(packets / elapsed),
        "ns_per_packet": round(elapsed / packets * 1e9),
        "forwarded": sent,
        "dropped": drops,
        "conserved": taken == accounted == sent + drops,
    }
