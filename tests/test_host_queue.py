"""NDP's host and switch rules for control packets (ACKs, NACKs, pulls, probes, bitmaps):
a host with a `priority` queue sends them ahead of its waiting data, and a trimming switch
never cuts them. Driven directly on the models, then through both engines' networks and
switches; and the spray that takes each flow over its paths in turn."""
import pytest
from topologies import build

import dlcp_native.datapath as compiled
from dlcp_native import NativeSwitch
from switch_models import HostNic, Packet, PipelineSpec, PortConfig, SpecError, Switch
from switch_models.packet import REWRITE_TRIM
from switch_models.pipeline import PRESETS

from dlcp_emu.emu.datapath.frames import parse
from dlcp_emu.sim.engines import make_network
from dlcp_emu.wire import DlcpHeader, Frame, encode_frame
from dlcp_emu.wire.layout import FRAME_OVERHEAD, PacketType
from dlcp_emu.wire.packet import dlcp_packet

GBPS = 1e9
DATA, ACK = 1514, 118            # an NDP data frame and an ACK with its feedback (bytes)
# The compiled parser's fields, in order (tests/test_native_frames.py).
FIELDS = ("size", "flow", "prio", "mag", "layer", "droppable", "dlcp", "ect", "ce", "header_size", "tclass")
SER = {n: round((n + 24) * 8) for n in (DATA, ACK)}   # ns at 1 Gbit/s, with Ethernet overhead


def data(uid, dst="h2"):
    return _packet(uid, DATA, dst, control=False)


def control(uid, dst="h2"):
    return _packet(uid, ACK, dst, control=True)


def _packet(uid, size, dst, control):
    pkt = dlcp_packet(size, dst, 7, 0, 0, 0, 0, False, False, control=control)
    pkt.uid = uid
    return pkt


# -- the host's NIC, driven directly -----------------------------------------------------
def test_a_priority_nic_sends_a_control_packet_ahead_of_its_waiting_data():
    nic = HostNic(GBPS, delay_ns=1000, control_first=True)
    for i in range(3):
        assert nic.enqueue(data(i), 0)
    first = nic.start(0)                       # the link was free: data 0 starts at once
    assert (first.uid, first.depart) == (0, SER[DATA] + 1000)
    assert nic.start(10) is None               # busy until data 0 is out
    assert nic.enqueue(control(9), 10)         # a pull/ACK handed over while 1 and 2 wait
    order = []
    while nic.waiting():
        pkt = nic.start(nic.free_at)
        order.append((pkt.uid, pkt.depart))
    t = SER[DATA]
    assert order == [(9, t + SER[ACK] + 1000), (1, t + SER[ACK] + SER[DATA] + 1000),
                     (2, t + SER[ACK] + 2 * SER[DATA] + 1000)]
    assert nic.conservation() == (4, 4)


def test_a_priority_nic_sends_frames_by_their_size_and_class_as_it_sends_packets():
    """The emulated switch replays a priority host's link with the same NIC on frames: each
    handed over with its size and class, it leaves when the packet it stands for would."""
    handed = [(0, data(0)), (0, data(1)), (10, control(9)), (10, data(2))]
    by_packet, by_frame = (HostNic(GBPS, delay_ns=1000, control_first=True) for _ in range(2))
    sent = {"packet": [], "frame": []}

    def start(now):
        pkt, got = by_packet.start(now), by_frame.start_item(now)
        assert (pkt is None) == (got is None)
        if pkt is not None:
            sent["packet"].append(pkt)
            sent["frame"].append(got)

    for now, pkt in handed:
        assert by_packet.enqueue(pkt, now)
        assert by_frame.enqueue_item(b"%d" % pkt.uid, pkt.size, pkt.uid == 9, now)
        start(now)
    while by_packet.waiting():
        start(by_packet.free_at)
    assert [(b"%d" % p.uid, p.depart) for p in sent["packet"]] == sent["frame"]
    assert [f for f, _ in sent["frame"]] == [b"0", b"9", b"1", b"2"]
    assert by_frame.conservation() == (4, 4) and by_frame.tx_bytes == by_packet.tx_bytes


def test_a_fifo_nic_keeps_the_order_it_was_given():
    nic = HostNic(GBPS, delay_ns=1000)
    ends = [nic.transmit(p.size, 0) for p in (data(0), data(1), control(9))]
    assert ends == [SER[DATA] + 1000, 2 * SER[DATA] + 1000, 2 * SER[DATA] + SER[ACK] + 1000]


def test_only_ndp_has_the_priority_host_queue_and_a_bad_one_is_named():
    assert {name: PipelineSpec.parse(name).host_queue for name in PRESETS} == \
        {name: "priority" if name == "ndp" else "fifo" for name in PRESETS}
    assert PipelineSpec.parse({"preset": "ndp", "host_queue": "fifo"}).name == "ndp+custom"
    with pytest.raises(SpecError, match="switch spec: host_queue must be one of fifo, priority, got 'lifo'"):
        PipelineSpec.parse({"preset": "ndp", "host_queue": "lifo"})


@pytest.mark.parametrize("engine", ["python", "native"])
@pytest.mark.parametrize("pipeline, first", [("ndp", [0, 9, 1, 2]), ({"preset": "ndp", "host_queue": "fifo"},
                                                                      [0, 1, 2, 9])])
def test_a_host_sends_its_ack_ahead_of_its_data(engine, pipeline, first):
    """Through the network: h1 hands over three data packets and then an ACK at one time;
    with the priority queue the ACK overtakes the two that have not started."""
    net = make_network(build("star", hosts=2, host_rate_bps=GBPS), pipeline, engine)
    got = []
    net.on_receive("h2", lambda p, t: got.append(p.uid))
    for p in (data(0), data(1), data(2), control(9)):
        net.send("h1", p, 0)
    net.loop.run()
    assert got == first
    assert all(taken == accounted for taken, accounted in net.conservation().values())


# -- the trimming switch -------------------------------------------------------------------
def _ndp_switch(engine):
    ports = {1: PortConfig(10 * GBPS), 2: PortConfig(GBPS, buffer_bytes=100_000)}
    spec = {"preset": "ndp", "queue_manager": {"name": "trim", "trim_packets": 2}}
    if engine == "python":
        return Switch("s", ports, {"h2": (2,)}, spec)
    return NativeSwitch("s", ports, {"h2": (2,)}, spec)


@pytest.mark.parametrize("engine", ["python", "native"])
def test_a_trimming_switch_never_cuts_a_control_packet(engine):
    """Above the trim point a data packet loses its payload; an ACK with its feedback
    goes on whole, in the header class, ahead of the data waiting."""
    sw = _ndp_switch(engine)
    for i in range(3):                  # one serialising, two queued: the trim point
        sw.receive(data(i), 1, 0)
    sw.receive(data(3), 1, 0)           # trimmed
    sw.receive(control(9), 1, 0)        # whole
    out = []
    t = sw.next_event_time()
    while t is not None:
        out += [(p.uid, p.size, bool(p.rewrite & REWRITE_TRIM)) for _, p in sw.poll(t)]
        t = sw.next_event_time()
    assert out == [(0, DATA, False), (3, FRAME_OVERHEAD, True), (9, ACK, False), (1, DATA, False),
                   (2, DATA, False)]


@pytest.mark.parametrize("ptype", list(PacketType))
def test_the_emulators_parsers_make_every_type_but_data_all_header(ptype):
    """The switch process's parsers (Python and compiled) give a control frame a header size
    of its whole size, as the simulator's hosts do (`dlcp_packet(..., control=True)`)."""
    h = DlcpHeader(type=ptype, payload_len=28)
    frame = encode_frame(Frame(src_mac="00:00:00:00:00:01", dst_mac="00:00:00:00:00:02", src_ip="10.0.0.1",
                               dst_ip="10.0.0.2", header=h, payload=bytes(28)))
    pkt = parse(frame)
    assert pkt.size == FRAME_OVERHEAD + 28
    assert pkt.header_size == (FRAME_OVERHEAD if ptype == PacketType.DATA else pkt.size)
    fields = compiled.parse_frame(frame)
    assert fields[FIELDS.index("header_size")] == pkt.header_size


# -- spraying a flow over its paths ---------------------------------------------------------
@pytest.mark.parametrize("engine", ["python", "native"])
@pytest.mark.parametrize("mode, spread", [("flow-round-robin", True), ("round-robin", False)])
def test_flow_round_robin_takes_each_flow_over_every_path(engine, mode, spread):
    """Two flows arriving alternately: one turn for both pins each to one uplink; a turn a
    flow sends each over both."""
    ports = {1: PortConfig(10 * GBPS), 2: PortConfig(10 * GBPS), 3: PortConfig(10 * GBPS)}
    spec = {"preset": "ndp", "load_balancer": {"name": "spray", "mode": mode}}
    sw = (Switch if engine == "python" else NativeSwitch)("s", ports, {"far": (2, 3)}, spec)
    port_of = {}
    for i in range(8):
        pkt = Packet(DATA, "far", flow=10 + i % 2, dlcp=True, uid=i)
        sw.receive(pkt, 1, 0)
    t = sw.next_event_time()
    while t is not None:
        for port, p in sw.poll(t):
            port_of.setdefault(p.flow, set()).add(port)
        t = sw.next_event_time()
    assert all(len(used) == (2 if spread else 1) for used in port_of.values()), port_of
