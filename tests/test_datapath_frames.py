"""dlcp_emu.emu.datapath.frames and the data path's pure parts: frames -> Packet, rewrites, flood
tables, configs, lateness percentiles, pcap files. No root, no sockets."""
import struct
from dataclasses import replace

import pytest

from dlcp_emu.wire import (
    DlcpHeader,
    Ecn,
    Flags,
    Frame,
    decode_frame,
    encode_frame,
    internet_checksum,
)
from switch_models import REWRITE_CE, REWRITE_TRIM
from dlcp_emu.emu.datapath.config import ConfigError, SwitchProcessConfig, build_switch, flood_table, mac_bytes
from dlcp_emu.emu.datapath.lateness import Lateness
from dlcp_emu.wire.flow import flow_hash
from dlcp_emu.emu.datapath.pcap import PcapWriter
from dlcp_emu.emu.datapath.ingress import is_control_frame
from dlcp_emu.emu.datapath.process import Datapath
from dlcp_emu.wire.layout import PacketType
from dlcp_emu.emu.datapath.frames import (
    INVALID_DLCP, MALFORMED, apply_rewrite, copy_for, make_parser, parse,
)

H1, H2 = "00:00:00:00:00:01", "00:00:00:00:00:02"


def dlcp(prio=3, mag=5, droppable=True, payload=100, tensor=7, ecn=0, sport=9796):
    h = DlcpHeader(flags=Flags.DROPPABLE if droppable else Flags(0), priority=prio,
                   mag_class=mag, payload_len=payload, tensor_id=tensor)
    return encode_frame(Frame(src_mac=H1, dst_mac=H2, src_ip="10.0.0.1", dst_ip="10.0.0.2",
                              sport=sport, ecn=ecn, header=h, payload=bytes(payload)))


def ipv4(proto, tos=0, sport=1234, dport=80, frag=0x4000, ihl=5, size=60, src=1, dst=2):
    buf = bytearray(size)
    struct.pack_into("!6s6sHBBHHHBBH4s4s", buf, 0, mac_bytes(H2), mac_bytes(H1), 0x0800,
                     0x40 | ihl, tos, size - 14, 0, frag, 64, proto, 0,
                     bytes([10, 0, 0, src]), bytes([10, 0, 0, dst]))
    struct.pack_into("!HH", buf, 14 + ihl * 4, sport, dport)
    struct.pack_into("!H", buf, 24, internet_checksum(buf[14:14 + ihl * 4]))
    return bytes(buf)


def test_dlcp_frame_fields():
    f = dlcp(prio=2, mag=6, droppable=True, payload=200, tensor=42 << 16 | 3)
    p = parse(f)
    assert (p.dst, p.size, p.prio, p.mag, p.layer, p.droppable, p.dlcp, p.header_size) == \
        (mac_bytes(H2), len(f), 2, 6, 42, True, True, 90)
    assert p.frame is f
    q = parse(dlcp(prio=2, mag=6, droppable=False))
    assert q.droppable is False and q.flow == p.flow     # same 5-tuple, same flow


def test_dlcp_needs_the_port_magic_and_sane_fields():
    other_port = bytearray(dlcp(prio=1))
    struct.pack_into("!H", other_port, 36, 9797)
    p = parse(bytes(other_port))
    assert not p.dlcp and p.prio == 7 - (other_port[15] >> 5)
    bad_magic = bytearray(dlcp())
    bad_magic[42] ^= 0xFF
    assert not parse(bytes(bad_magic)).dlcp                # not DLCP: plain UDP
    bad_prio = bytearray(dlcp())
    bad_prio[47] = 9                                       # would index past the tables
    assert parse(bytes(bad_prio)) == INVALID_DLCP


@pytest.mark.parametrize("offset, value, why", [
    (44, 1, "version"), (45, 9, "type"), (46, 0x10, "flag bit"), (46, 0x80, "flag bit"),
    (47, 8, "priority"), (48, 8, "magnitude class"), (49, 6, "traffic class"), (78, 1, "reserved2"),
    (81, 0x80, "reserved2"),
])
def test_a_dlcp_header_the_codec_refuses_is_invalid_not_plain(offset, value, why):
    """The magic says DLCP; any field the codec would refuse makes the frame INVALID_DLCP
    (the header's bytes are 42..89 of the frame)."""
    f = bytearray(dlcp())
    f[offset] = value
    assert parse(bytes(f)) == INVALID_DLCP, why
    assert parse(dlcp()).dlcp                               # the untouched frame is fine


def test_a_cut_dlcp_header_is_invalid_and_broken_ipv4_is_malformed():
    f = dlcp(payload=0)
    cut = f[:60]
    # The IP total length still claims the whole datagram: malformed before anything else.
    assert parse(cut) == MALFORMED
    fixed = bytearray(cut)
    struct.pack_into("!H", fixed, 16, len(cut) - 14)        # a consistent IPv4 total length
    assert parse(bytes(fixed)) == INVALID_DLCP
    assert parse(b"\x00" * 13) == MALFORMED                  # no Ethernet header
    short_ip = bytearray(ipv4(17))
    short_ip[14] = 0x44                                     # IHL 4: 16 bytes, below 20
    assert parse(bytes(short_ip)) == MALFORMED
    long_total = bytearray(ipv4(17))
    struct.pack_into("!H", long_total, 16, 100)             # 100 bytes claimed, 46 there
    assert parse(bytes(long_total)) == MALFORMED
    options_cut = bytearray(ipv4(6))
    options_cut[14] = 0x4F                                  # a 60-byte header in 46 bytes
    assert parse(bytes(options_cut)) == MALFORMED
    padded = bytearray(ipv4(17))                            # bytes past the total: padding
    struct.pack_into("!H", padded, 16, 28)
    assert parse(bytes(padded)).prio == 7


def test_ipv4_priority_and_ecn_from_tos():
    p = parse(ipv4(6, tos=(5 << 5) | 2))                   # CS5, ECT(0)
    assert (p.prio, p.ect, p.ce, p.dlcp) == (2, True, False, False)
    p = parse(ipv4(17, tos=3))                             # CS0, CE
    assert (p.prio, p.ect, p.ce) == (7, True, True)
    assert parse(ipv4(6, tos=0)).ect is False


def test_flow_hash_is_the_five_tuple():
    a = parse(ipv4(6, sport=1000)).flow
    # The rule's one home, which the simulator's hosts call: the same paths in both worlds.
    assert a == flow_hash(0x0A000001, 0x0A000002, 6, 1000, 80)
    assert a == parse(ipv4(6, sport=1000, tos=0x20)).flow  # DSCP is not part of the flow
    assert a != parse(ipv4(6, sport=1001)).flow
    assert a != parse(ipv4(17, sport=1000)).flow
    # Non-first fragments have no ports: (src, dst, proto) for every fragment.
    f1 = parse(ipv4(17, frag=0x2000, sport=1)).flow
    f2 = parse(ipv4(17, frag=0x0010, sport=2)).flow
    assert f1 == f2
    # IP options move the ports; still the 5-tuple.
    assert parse(ipv4(6, ihl=6, sport=5, size=80)).flow == parse(ipv4(6, ihl=6, sport=5, size=80)).flow
    assert parse(ipv4(6, ihl=6, sport=5, size=80)).flow != parse(ipv4(6, ihl=6, sport=6, size=80)).flow


def test_arp_runts_and_padding():
    arp = mac_bytes("ff:ff:ff:ff:ff:ff") + mac_bytes(H1) + b"\x08\x06" + bytes(28)
    p = parse(arp)
    assert (p.prio, p.dlcp, p.size, p.dst[0] & 1) == (7, False, 60, 1)   # padded to 60
    runt = mac_bytes(H2) + mac_bytes(H1) + b"\x08\x06"
    p = parse(runt)
    assert p.dst == mac_bytes(H2) and p.prio == 7
    assert parse(mac_bytes(H2) + mac_bytes(H1) + b"\x08\x00") == MALFORMED   # IPv4, no header
    assert parse(dlcp(payload=1400)).size == 1400 + 90


def test_copy_for_flooding():
    p = parse(dlcp())
    c = copy_for(p, 3)
    assert c.dst == 3 and c.frame is p.frame and (c.prio, c.mag, c.dlcp) == (p.prio, p.mag, True)


def test_rewrites_trim_and_mark():
    p = parse(dlcp(payload=500, ecn=Ecn.ECT0))
    p.rewrite = REWRITE_TRIM | REWRITE_CE
    out = apply_rewrite(p)
    fr = decode_frame(out)                                  # checksums still valid
    assert fr.header.flags & Flags.TRIMMED and fr.payload == b"" and fr.header.payload_len == 500
    assert fr.ecn == Ecn.CE and len(out) == 90
    q = parse(ipv4(6, tos=2))
    q.rewrite = REWRITE_CE
    marked = apply_rewrite(q)
    assert marked[15] & 3 == 3 and internet_checksum(marked[14:34]) == 0


def test_custom_dlcp_port():
    f = dlcp(sport=5000)
    assert make_parser(dlcp_port=1)(f).dlcp is False
    assert make_parser()(f).dlcp is True


def test_flood_table_excludes_input_and_off_tree_ports():
    t = flood_table([1, 2, 3, 4], [1, 2, 3])
    assert t == {1: (2, 3), 2: (1, 3), 3: (1, 2), 4: ()}


def config(**kw):
    c = {"name": "s1", "ports": [{"number": 1, "intf": "a", "rate_bps": 1e6},
                                 {"number": 2, "intf": "b", "rate_bps": 1e6}],
         "routes": {H1: [1], H2: [2]}, "flood": [1, 2]}
    return SwitchProcessConfig(**{**c, **kw})


def test_config_defaults_and_errors():
    c = config()
    assert c.mode == "model" and c.pipeline == "fifo" and c.rx_batch == 64
    assert c.wake_period_ns == 0
    for bad in (-1, 0.5, True, "1ms"):
        with pytest.raises(ConfigError, match="wake_period_ns must be an integer >= 0"):
            config(wake_period_ns=bad)
    with pytest.raises(ConfigError, match="mode"):
        config(mode="fast")
    with pytest.raises(ConfigError, match="ports are"):
        config(routes={H1: [9]})
    with pytest.raises(ConfigError, match="MAC"):
        config(routes={"h1": [1]})
    with pytest.raises(ConfigError, match="flood"):
        config(flood=[7])
    with pytest.raises(ConfigError, match="rate_bps"):
        config(ports=[{"number": 1, "intf": "a"}])
    assert config(mode="forward", ports=[{"number": 1, "intf": "a"}],
                              routes={}, flood=[])
    with pytest.raises(ConfigError, match=r"port 1: unknown fields \['rate'\]"):
        config(ports=[{"number": 1, "intf": "a", "rate": 1e6}])
    with pytest.raises(ConfigError, match="peer_paced must be true or false"):
        config(ports=[{"number": 1, "intf": "a", "rate_bps": 1e6, "peer_paced": 1}])


# -- arrivals: kernel times, a paced host's link, the model's clock ---------------------------

MS = 1_000_000
FRAME = dlcp(payload=1000)
SER = (len(FRAME) + 24) * 8_000     # its serialisation at 1 Mbit/s, Ethernet overhead included


def arrivals_rig(delay_ns=0):
    """A data path (no sockets) whose port 1 faces a paced host (1 Mbit/s, delay_ns) and port
    2 a switch; kernel times are given in monotonic ns through its clock offset."""
    dp = Datapath(config(ports=[{"number": 1, "intf": "a", "rate_bps": 1e6, "delay_ns": delay_ns,
                                 "peer_paced": True},
                                {"number": 2, "intf": "b", "rate_bps": 1e6}]))
    return dp, (lambda *ts: [t + dp.clock_offset for t in ts])


def test_a_frame_arrives_when_the_kernel_delivered_it_not_when_it_was_read():
    dp, k = arrivals_rig()
    got = dp.arrivals([(2, [FRAME, FRAME], k(100 * MS, 101 * MS))], now=105 * MS, floor=0)
    assert [(t, p) for t, p, _ in got] == [(100 * MS, 2), (101 * MS, 2)]
    assert dp.rx_wait.pending == [5 * MS, 4 * MS]
    # The model's clock never runs back (a frame delivered before the last poll arrives at
    # it), and a kernel time past our own read is read time.
    got = dp.arrivals([(2, [FRAME, FRAME], k(90 * MS, 200 * MS))], now=110 * MS, floor=105 * MS)
    assert [t for t, _, _ in got] == [105 * MS, 110 * MS]


def test_a_paced_hosts_frames_arrive_serialised_one_after_another_plus_the_delay():
    dp, k = arrivals_rig(delay_ns=2 * MS)
    # The host's token bucket let two frames out 1 ms apart: the first arrives whole one
    # serialisation (and the delay) later, the second one serialisation after the first.
    first, second = 100 * MS + SER + 2 * MS, 100 * MS + 2 * SER + 2 * MS
    assert dp.arrivals([(1, [FRAME, FRAME], k(100 * MS, 101 * MS))], now=101 * MS, floor=0) == []
    assert [a[0] for a in sorted(dp.ingress.arriving)] == [first, second]
    # Due ones come out in order, merged with what another port just delivered.
    got = dp.arrivals([(2, [FRAME], k(first + 1))], now=first + 5, floor=0)
    assert [(t, p) for t, p, _ in got] == [(first, 1), (first + 1, 2)]
    assert [(t, p) for t, p, _ in dp.arrivals([], now=second, floor=0)] == [(second, 1)]
    assert dp.ingress.arriving == []
    # After an idle link a frame starts on release.
    later = 300 * MS
    dp.arrivals([(1, [FRAME], k(later))], now=later, floor=0)
    assert [a[0] for a in dp.ingress.arriving] == [later + SER + 2 * MS]


def control(payload=0, kind=PacketType.ACK):
    """What a host sends ahead of data under a `priority` host queue: an ACK (or a bare header)."""
    return encode_frame(Frame(src_mac=H1, dst_mac=H2, src_ip="10.0.0.1", dst_ip="10.0.0.2", sport=9796,
                              header=DlcpHeader(type=kind, payload_len=payload), payload=bytes(payload)))


def test_a_host_queues_control_frames_are_those_its_egress_sends_first():
    assert is_control_frame(control()) and is_control_frame(control(kind=PacketType.DATA))
    assert not is_control_frame(FRAME) and not is_control_frame(ipv4(17, dport=9796, size=120))
    assert not is_control_frame(control()[:50])


@pytest.mark.parametrize("pipeline, order", [("ndp", ["data", "ack", "data", "data"]),
                                             ("fifo", ["data", "data", "data", "ack"])])
def test_a_control_frame_overtakes_a_paced_hosts_waiting_data_under_a_priority_host_queue(pipeline, order):
    """The host's shaper let three data frames out at once (its burst) and an ACK just after:
    under the `ndp` preset's priority host queue the ACK leaves after the frame on the wire, as
    the simulator's NIC sends it; a FIFO host queue keeps it behind all three."""
    dp = Datapath(config(pipeline=pipeline,
                         ports=[{"number": 1, "intf": "a", "rate_bps": 1e6, "peer_paced": True},
                                {"number": 2, "intf": "b", "rate_bps": 1e6}]))
    k = dp.clock_offset
    ack = control()
    ack_ser = (len(ack) + 24) * 8_000
    t0 = 100 * MS
    assert dp.arrivals([(1, [FRAME] * 3 + [ack], [t0 + k] * 3 + [t0 + 1 + k])], now=t0 + 1, floor=0) == []
    assert dp.ingress.on_link() == 4
    got = dp.arrivals([], now=t0 + 3 * SER + ack_ser, floor=0)
    assert ["ack" if f == ack else "data" for _, _, f in got] == order
    assert [t for t, _, _ in got] == sorted(t for t, _, _ in got)
    if pipeline == "ndp":
        assert [t for t, _, _ in got] == [t0 + SER, t0 + SER + ack_ser, t0 + 2 * SER + ack_ser,
                                          t0 + 3 * SER + ack_ser]
    assert dp.ingress.on_link() == 0


@pytest.mark.parametrize("late, order", [(1, ["data", "data", "ack", "data"]), (0, ["data", "ack", "data", "data"])])
def test_a_control_frame_handed_over_late_does_not_pass_data_whose_turn_came_first(late, order):
    """The second data frame's turn came when the link fell free (t0 + SER); an ACK the host
    handed over `late` ns after that, read in the same batch, goes after it, as the NIC woken
    at its free time sends them. Handed over at that very time, the ACK goes first."""
    dp = Datapath(config(pipeline="ndp",
                         ports=[{"number": 1, "intf": "a", "rate_bps": 1e6, "peer_paced": True},
                                {"number": 2, "intf": "b", "rate_bps": 1e6}]))
    k = dp.clock_offset
    ack = control()
    t0, at = 100 * MS, 100 * MS + SER + late
    got = dp.arrivals([(1, [FRAME] * 3 + [ack], [t0 + k] * 3 + [at + k])], now=at, floor=0)
    got += dp.arrivals([], now=t0 + 10 * SER, floor=0)
    assert ["ack" if f == ack else "data" for _, _, f in got] == order
    assert dp.ingress.on_link() == 0 and dp.ingress.links[1].conservation() == (4, 4)


def test_build_switch_routes_macs_and_flood_keys():
    sw, engine, _ = build_switch(config(pipeline="dlcp", engine="python"))
    assert engine == "python"
    assert set(sw.routes) == {mac_bytes(H1), mac_bytes(H2), 1, 2}
    assert [p.number for p in sw.routes[2]] == [2]
    assert sw.spec.name == "dlcp"


def test_build_switch_is_native_when_every_stage_is_and_says_why():
    from dlcp_native import NativeSwitch
    sw, engine, why = build_switch(config(pipeline="dlcp"))
    assert (type(sw), engine, why) == (NativeSwitch, "native", "every stage of the pipeline is native")
    assert sw.spec.name == "dlcp" and sw.port_numbers == (1, 2)


def test_build_switch_runs_a_python_only_stage_in_python_and_says_why(python_only_stage):
    from switch_models import SCHEDULERS
    from switch_models.schedulers import Strict
    cfg = config(pipeline={"preset": "fifo", "scheduler": python_only_stage(SCHEDULERS, Strict)})
    sw, engine, why = build_switch(cfg)
    assert engine == "python" and "scheduler 'mine' is a Python-only stage" in why
    with pytest.raises(ConfigError, match="engine: 'native' cannot run this pipeline .*'mine'"):
        build_switch(replace(cfg, engine="native"))


def test_an_unknown_switch_engine_is_named():
    with pytest.raises(ConfigError, match="engine must be one of auto, native, python, got 'fast'"):
        config(engine="fast")


def test_lateness_percentiles():
    lat = Lateness()
    lat.threshold = 50_000
    lat.pending.extend(range(1000, 101_000, 1000))           # 1..100 us
    s = lat.summary()
    assert s["count"] == 100 and s["max_ns"] == 100_000
    assert 50_000 <= s["p50_ns"] <= 50_000 * 1.05
    assert 99_000 <= s["p99_ns"] <= 100_000
    assert s["above_threshold"] == 50
    lat.pending.append(-5)                                   # clock noise counts as on time
    assert lat.summary()["count"] == 101


def test_pcap_is_readable_by_scapy(tmp_path):
    from scapy.utils import rdpcap
    path = tmp_path / "x.pcap"
    w = PcapWriter(str(path))
    frames = [dlcp(payload=n) for n in (0, 10, 1000)]
    for i, f in enumerate(frames):
        w.write(f, 1_700_000_000_123_456_789 + i)
    w.close()
    pkts = rdpcap(str(path))
    assert [bytes(p) for p in pkts] == frames
    assert float(pkts[0].time) == pytest.approx(1_700_000_000.123456789, abs=1e-6)


class _OnePacket:
    """An endpoint that sends one (header, payload) pair and is done: what SimHosts asks of a
    host stack, no more."""

    def __init__(self, header, payload):
        self.out = [(header, payload)]
        self.agent = type("Done", (), {"done": True})()

    def poll(self, now):
        out, self.out = self.out, []
        return out

    def next_timeout(self):
        return None


def test_a_dlcp_header_is_the_same_packet_to_both_backends():
    """The emulator's parser (from the frame's bytes) and the simulator (from the header
    object) make the same Packet of one header: same class inputs, layer, flags, size, ECN."""
    from dlcp_emu.sim import SimNetwork
    from dlcp_emu.sim.hosts import SimHosts
    from topologies import build

    h = DlcpHeader(flags=Flags.DROPPABLE, priority=2, mag_class=6, payload_len=300,
                   tensor_id=5 << 16 | 1 << 15 | 3, dst_rank=1)
    net = SimNetwork(build("star", hosts=2, host_rate_bps=1e9))
    sent = []
    net.send = lambda host, pkt, now=None: sent.append(pkt)
    hosts = SimHosts(net, {0: _OnePacket(h, bytes(300))}, {0: "h1", 1: "h2"})
    hosts.start()
    (sim,) = sent
    emu = parse(encode_frame(Frame(src_mac=H1, dst_mac=H2, src_ip="10.0.0.1", dst_ip="10.0.0.2",
                                   ecn=Ecn.ECT0, header=h, payload=bytes(300))))
    fields = ("size", "prio", "mag", "layer", "droppable", "dlcp", "ect", "ce", "header_size")
    assert [getattr(sim, f) for f in fields] == [getattr(emu, f) for f in fields]
    assert emu.layer == 5
