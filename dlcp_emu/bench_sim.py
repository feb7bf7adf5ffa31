"""`dlcp-emu bench sim`: packet-hops per second of the discrete-event simulator.

Permutation traffic on a fat tree (every host sends a burst to another host in another pod),
growing the number of packets per host to show that wall time grows linearly with
packet-hops. Packets are built before the clock starts.
"""
import random
import time

from switch_models import Packet
from topologies import build

from .sim import SimNetwork


def run(k=8, packets_per_host=50, preset="dlcp", rate_bps=10e9, seed=1):
    topo = build("fat-tree", k=k, rate_bps=rate_bps)
    net = SimNetwork(topo, preset, seed=seed)
    hosts = topo.hosts()
    rng = random.Random(seed)
    peers = hosts[:]
    rng.shuffle(peers)
    hops = {}
    sends = []
    for i, (src, dst) in enumerate(zip(hosts, peers)):
        if src == dst:
            continue
        hops[src] = topo.hop_count(src, dst)
        for j in range(packets_per_host):
            mag = rng.randrange(8)
            sends.append((src, Packet(1500, dst, flow=i, prio=rng.randrange(8), mag=mag,
                                      droppable=mag < 3, dlcp=True, uid=len(sends))))
    start = time.perf_counter()
    for src, pkt in sends:
        net.send(src, pkt, 0)
    net.loop.run()
    elapsed = time.perf_counter() - start
    # Hops actually taken: every node a packet entered, hosts' NICs included.
    packet_hops = sum(t for t, _ in net.conservation().values())
    return {"k": k, "hosts": len(hosts), "packets": len(sends), "packet_hops": packet_hops,
            "events": net.loop.events, "delivered": net.delivered, "seconds": round(elapsed, 3),
            "packet_hops_per_s": round(packet_hops / elapsed)}


def scaling_curve(k=8, sizes=(10, 20, 40, 80), preset="dlcp"):
    return [run(k, n, preset) for n in sizes]
