"""The simulator's network: the switch models in virtual time over a topology."""
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
        spines = [net.nodes[s].counters()["rx_packets"] for s in ("s1", "s2")]
        per_spine = [sum(r.values()) for r in spines]
        if expect_both:
            assert per_spine == [50, 50]
        else:
            assert sorted(per_spine) == [0, 100]
