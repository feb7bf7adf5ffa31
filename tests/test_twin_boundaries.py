"""Each rule's boundary, pinned by a fixed case that both twins run (the Python model and the
compiled core) with the answer written out: a value exactly on a threshold, a deficit exactly
a packet's size, a host queue exactly full. Random differential tests hold the twins to each
other and can miss a boundary both get wrong, or one that few draws reach; these cannot."""
import pytest

from dlcp_emu.sim import SimNetwork
from dlcp_native import NativeNetwork, NativeSwitch
from switch_models import Packet, PortConfig, Switch
from switch_models.nic import HOST_BUFFER_BYTES
from topologies import build

TWINS = {"python": Switch, "native": NativeSwitch}


def one_port(engine, pipeline, buffer_bytes=10**7):
    """A switch with one fast way in (port 1) and one 1 Gbit/s way out (port 2) to `d`."""
    return TWINS[engine]("s", {1: PortConfig(1e11), 2: PortConfig(1e9, buffer_bytes=buffer_bytes)},
                         {"d": (2,)}, pipeline, seed=1, record_drops=True)


def drain(sw):
    out, t = [], sw.next_event_time()
    while t is not None:
        out += [pkt for _, pkt in sw.poll(t)]
        t = sw.next_event_time()
    return out


@pytest.mark.parametrize("engine", TWINS)
def test_drr_sends_a_packet_whose_size_equals_the_deficit_in_that_round(engine):
    """Quantum 1000: class 0 holds 1000-byte packets, class 1 500-byte ones. A deficit equal to
    the size sends it: class 0 sends one, class 1 two, round after round. (Were an equal
    deficit not enough, class 0 would wait a round and class 1 would lead: 1, 0, 1, 1, 0, ...)"""
    sw = one_port(engine, {"preset": "layer-prio", "classifier": {"name": "layer", "n_classes": 2},
                           "scheduler": {"name": "drr", "quantum": 1000}})
    uid = 0
    sw.receive(Packet(1500, "d", prio=7, dlcp=True, uid=uid), 1, 0)   # the port is busy from here
    for k in range(4):
        uid += 1
        sw.receive(Packet(1000, "d", prio=0, dlcp=True, uid=uid), 1, 0)
        for _ in range(2):
            uid += 1
            sw.receive(Packet(500, "d", prio=7, dlcp=True, uid=uid), 1, 0)
    classes = [p.cls for p in drain(sw)][1:]
    assert classes == [0, 1, 1] * 4


@pytest.mark.parametrize("engine", TWINS)
def test_pias_keeps_a_flow_in_its_class_until_its_bytes_sent_exceed_the_threshold(engine):
    """Threshold 1000: packets before which the flow had sent 0, 500 and exactly 1000 bytes stay
    in class 0; the one after 1500 is demoted."""
    sw = one_port(engine, {"preset": "pias", "classifier": {"name": "pias", "thresholds": [1000]}})
    pkts = [Packet(500, "d", flow=7, uid=i) for i in range(4)]
    for p in pkts:
        sw.receive(p, 1, 0)
    assert [p.cls for p in pkts] == [0, 0, 0, 1]


@pytest.mark.parametrize("engine", TWINS)
def test_dlcp_admits_a_droppable_packet_that_fills_its_class_exactly_to_its_limit(engine):
    """Buffer 20,000 bytes, threshold 0.5: magnitude class 0's limit is 10,000 queued bytes.
    With 9,000 queued, a droppable 1,000-byte packet of class 0 reaches it exactly and is
    admitted; the next droppable packet is refused (dlcp_threshold)."""
    sw = one_port(engine, "dlcp", buffer_bytes=20_000)
    sw.receive(Packet(1500, "d", prio=0, dlcp=True, uid=0), 1, 0)      # serialising, not queued
    for i in range(9):
        sw.receive(Packet(1000, "d", prio=0, dlcp=True, uid=1 + i), 1, 0)
    sw.receive(Packet(1000, "d", prio=5, mag=0, droppable=True, dlcp=True, uid=10), 1, 0)
    sw.receive(Packet(64, "d", prio=5, mag=0, droppable=True, dlcp=True, uid=11), 1, 0)
    assert [(reason, pkt.uid) for _, _, reason, pkt in sw.drop_log] == [("dlcp_threshold", 11)]
    assert sorted(p.uid for p in drain(sw)) == list(range(11))


@pytest.mark.parametrize("engine", ["python", "native"])
def test_a_host_nic_takes_a_frame_that_fills_its_queue_exactly(engine):
    """At 8 Gbit/s a byte is a nanosecond. 65,535 frames of 1,000 bytes handed over at once
    queue 65,535 x 1,024 bytes of link time (24 of Ethernet overhead each); a 1,024-byte frame
    then fills the 64 MiB host queue exactly and is taken; a 60-byte one after it is not."""
    assert HOST_BUFFER_BYTES == 65_535 * 1024 + 1024
    topo = build("star", hosts=2, host_rate_bps=8e9)
    if engine == "python":
        net = SimNetwork(topo)
        send = lambda uid, size: net.send("h1", Packet(size, "h2", uid=uid), 0)   # noqa: E731
    else:
        net = NativeNetwork(topo)
        send = lambda uid, size: net.send(0, 0, uid=uid, size=size, dst=1)      # noqa: E731
    for uid in range(65_535):
        send(uid, 1000)
    send(65_535, 1024)
    send(65_536, 60)
    if engine == "python":
        nic = net.nics["h1"]
        got = (nic.tx_packets, sum(nic.drops.values()), nic.drop_bytes)
    else:
        c = net.nic_counters(0)
        got = (c["tx_packets"], c["drops"], c["drop_bytes"])
    assert got == (65_536, 1, 60)   # the 60-byte frame dropped, not the one that filled the queue
