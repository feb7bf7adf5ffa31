"""The simulator's network: the switch models in virtual time over a topology."""
import random

from switch_models import Packet
from topologies import build

from dlcp_emu.sim import SimNetwork


def leaf_spine(rate=1e9, delay_ns=0):
    return build("leaf-spine", leaves=2, spines=2, hosts_per_leaf=2, host_rate_bps=rate,
                 delay_ns=delay_ns)


def test_store_and_forward_timing_and_pacing():
    net = SimNetwork(leaf_spine(delay_ns=1000), "fifo")
    got = []
    net.on_receive("h4", lambda p, t: got.append((p.uid, t)))
    for i in range(5):
        net.send("h1", Packet(1500, "h4", uid=i))
    net.loop.run()
    ser = round(1524 * 8)   # ns at 1 Gbit/s, with Ethernet overhead
    # NIC, leaf, spine, leaf: four serialisations and four link delays to the first byte home.
    assert got[0] == (0, 4 * (ser + 1000))
    assert [t for _, t in got] == [4 * (ser + 1000) + i * ser for i in range(5)]


def test_every_packet_is_delivered_or_dropped_with_a_reason():
    net = SimNetwork(leaf_spine(), "dlcp")
    delivered = []
    for h in ("h3", "h4"):
        net.on_receive(h, lambda p, t: delivered.append(p))
    n = 0
    for src in ("h1", "h2"):
        for i in range(400):     # 2:1 into the uplinks: drops happen
            net.send(src, Packet(1500, "h3" if i % 2 else "h4", flow=i, mag=i % 8, prio=i % 8,
                                 droppable=i % 8 < 4, dlcp=True, uid=n))
            n += 1
    net.loop.run()
    drops = sum(sum(p["drops"].values()) for c in net.counters().values() for p in c["ports"].values())
    assert len(delivered) + drops == n
    assert all(taken == accounted for taken, accounted in net.conservation().values())
    lost = {p.uid for p in delivered} ^ set(range(n))
    assert len(lost) == drops


def test_spray_uses_both_spines_and_ecmp_one_per_flow():
    for preset, expect_both in (("dlcp", True), ("fifo", False)):
        net = SimNetwork(leaf_spine(), preset)
        for i in range(100):
            net.send("h1", Packet(1500, "h3", flow=7, dlcp=True, uid=i))
        net.loop.run()
        spines = [net.switches[s].counters()["rx_packets"] for s in ("s1", "s2")]
        per_spine = [sum(r.values()) for r in spines]
        if expect_both:
            assert per_spine == [50, 50]
        else:
            assert sorted(per_spine) == [0, 100]


def test_packets_queued_at_successive_switches_are_accounted_at_each():
    """The simulator hands one Packet object from switch to switch. A DLCP port's index of
    droppable packets keeps stale entries of packets it has sent; one of those, queued again
    further along, must not be taken for this port's own (that once evicted packets a port
    never held, corrupted its counts and crashed). Permutation bursts on a fat tree, with
    random priorities and magnitudes, queue droppable packets at every tier."""
    topo = build("fat-tree", k=6, host_rate_bps=1e9)
    net = SimNetwork(topo, "dlcp", seed=1)
    hosts = topo.hosts()
    rng = random.Random(1)
    peers = hosts[:]
    rng.shuffle(peers)
    delivered = []
    for h in hosts:
        net.on_receive(h, lambda p, t: delivered.append(p.uid))
    n = 0
    for i, (src, dst) in enumerate(zip(hosts, peers)):
        for _ in range(400 if src != dst else 0):
            mag = rng.randrange(8)
            net.send(src, Packet(1500, dst, flow=i, prio=rng.randrange(8), mag=mag,
                                 droppable=mag < 3, dlcp=True, uid=n), 0)
            n += 1
    net.loop.run()
    assert all(taken == accounted for taken, accounted in net.conservation().values())
    drops = sum(sum(p["drops"].values()) for c in net.counters().values() for p in c["ports"].values())
    assert drops > 0 and len(delivered) + drops == n
    assert len(set(delivered)) == len(delivered)
    for node in net.switches.values():
        for port in node.ports.values():
            assert port.packets == port.bytes == 0 and port.mask == 0
