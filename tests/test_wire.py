"""Tests for the DLCP wire format (dlcp_emu.wire) and its scapy layer."""

from __future__ import annotations

import dataclasses
import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import checksum as scapy_checksum

from dlcp_emu import wire
from dlcp_emu.wire.scapy_layer import DLCP
from dlcp_emu.wire import (
    DLCP_UDP_PORT,
    FRAME_OVERHEAD,
    HEADER_LEN,
    MAX_PAYLOAD,
    DlcpHeader,
    Ecn,
    Flags,
    Frame,
    PacketType,
    WireError,
    decode_frame,
    dscp_for_priority,
    encode_frame,
    internet_checksum,
    mark_ce,
    priority_for_dscp,
    trim_frame,
)
from tiers import examples

FAST = settings(max_examples=examples(200), deadline=None)
SLOW = settings(max_examples=examples(100), deadline=None)  # scapy dissects at ~1 ms per packet

HEADER_FIELDS = [f.name for f in dataclasses.fields(DlcpHeader)]
# Explicit MACs: scapy would otherwise resolve them through the host's routes.
MACS = dict(src="02:00:00:00:00:0a", dst="02:00:00:00:00:0b")


# --- Reference implementations, independent of wire.py -------------------------


def ref_checksum(data: bytes) -> int:
    """RFC 1071 the slow, obvious way."""
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def fix_checksums(buf: bytearray) -> bytearray:
    """Recompute IP and UDP checksums after a test mutated a frame on purpose."""
    if len(buf) < 34:
        return buf
    ihl = (buf[14] & 0x0F) * 4
    if ihl >= 20 and len(buf) >= 14 + ihl:
        buf[24:26] = b"\0\0"
        buf[24:26] = ref_checksum(bytes(buf[14 : 14 + ihl])).to_bytes(2, "big")
    if len(buf) >= 42 and buf[23] == 17:
        total, udp_len = struct.unpack_from("!H", buf, 16)[0], struct.unpack_from("!H", buf, 38)[0]
        buf[40:42] = b"\0\0"
        pseudo = bytes(buf[26:34]) + struct.pack("!BBH", 0, 17, udp_len)
        c = ref_checksum(pseudo + bytes(buf[34 : 14 + total]))
        buf[40:42] = (c or 0xFFFF).to_bytes(2, "big")
    return buf


def scapy_rebuilt(raw: bytes) -> bytes:
    """The frame as scapy rebuilds it with IP and UDP checksums recomputed."""
    p = Ether(raw)
    del p[IP].chksum
    del p[UDP].chksum
    return bytes(p)


# --- Strategies -----------------------------------------------------------------

U16, U32 = 0xFFFF, 0xFFFFFFFF


def sized_payload(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


# Large random payloads via a seed: hypothesis itself favours tiny byte strings.
payloads = st.one_of(
    st.binary(max_size=64),
    st.builds(sized_payload, st.integers(0, 9000), st.integers(0, 2**32)),
)
ips = st.integers(0, U32).map(lambda n: ".".join(str(b) for b in n.to_bytes(4, "big")))
macs = st.binary(min_size=6, max_size=6)


@st.composite
def frames(draw, trimmed=None):
    flags = Flags(draw(st.integers(0, 0x0F)))
    if trimmed is not None:
        flags = flags | Flags.TRIMMED if trimmed else flags & ~Flags.TRIMMED
    if flags & Flags.TRIMMED:
        payload, plen = b"", draw(st.integers(0, MAX_PAYLOAD))
    else:
        payload = draw(payloads)
        plen = len(payload)
    header = DlcpHeader(
        type=draw(st.sampled_from(PacketType)),
        flags=flags,
        priority=draw(st.integers(0, 7)),
        mag_class=draw(st.integers(0, 7)),
        tclass=draw(st.integers(0, 5)),
        job=draw(st.integers(0, U16)),
        src_rank=draw(st.integers(0, U16)),
        dst_rank=draw(st.integers(0, U16)),
        payload_len=plen,
        iteration=draw(st.integers(0, U32)),
        tensor_id=draw(st.integers(0, U32)),
        chunk_index=draw(st.integers(0, U32)),
        chunk_count=draw(st.integers(0, U32)),
        offset=draw(st.integers(0, U32)),
        send_ts_ns=draw(st.integers(0, 2**64 - 1)),
    )
    return Frame(
        src_mac=draw(macs),
        dst_mac=draw(macs),
        src_ip=draw(ips),
        dst_ip=draw(ips),
        sport=draw(st.integers(0, U16)),
        dport=draw(st.integers(0, U16)),
        ttl=draw(st.integers(0, 255)),
        ecn=draw(st.sampled_from(Ecn)),
        header=header,
        payload=payload,
    )


def sample_frame(payload: bytes = b"gradient bytes!", **header) -> Frame:
    h = dict(type=PacketType.DATA, priority=2, mag_class=5, job=3, src_rank=1, dst_rank=2,
             payload_len=len(payload), iteration=41, tensor_id=7, chunk_index=3, chunk_count=9,
             offset=4096, send_ts_ns=1_700_000_000_123_456_789)
    h.update(header)
    return Frame("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.0.0.2",
                 40000, DLCP_UDP_PORT, 64, Ecn.ECT0, DlcpHeader(**h), payload)


# --- Layout -----------------------------------------------------------------------


def test_layout_constants():
    assert HEADER_LEN == wire.HEADER_STRUCT.size == 48
    assert (wire.ETH_LEN, wire.IPV4_LEN, wire.UDP_LEN) == (14, 20, 8)
    assert wire.DLCP_OFF == 42 and FRAME_OVERHEAD == 90
    assert wire.OFF_FLAGS == wire.DLCP_OFF + 4
    assert DLCP_UDP_PORT == 9796
    assert MAX_PAYLOAD == 65535 - 76


@FAST
@given(frames())
def test_fixed_offsets_locate_every_field(f):
    """The switch reads fields with struct at OFF_*; those must agree with the dataclass."""
    raw = encode_frame(f)
    h = f.header
    sizes = {1: "B", 2: "H", 4: "I", 8: "Q"}
    widths = dict(zip(HEADER_FIELDS, (1, 1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 4, 4, 8, 1)))
    for name in HEADER_FIELDS:
        off = getattr(wire, "OFF_" + name.upper())
        (value,) = struct.unpack_from("!" + sizes[widths[name]], raw, off)
        assert value == getattr(h, name), name
    assert struct.unpack_from("!HB", raw, wire.OFF_MAGIC) == (0xD1C9, 2)
    assert raw[wire.OFF_RESERVED2 : wire.OFF_RESERVED2 + 4] == bytes(4)
    assert raw[wire.OFF_IP_TOS] == dscp_for_priority(h.priority) << 2 | f.ecn
    assert struct.unpack_from("!H", raw, wire.OFF_UDP_DPORT)[0] == f.dport


# --- Round trip ---------------------------------------------------------------------


@FAST
@given(frames())
def test_roundtrip(f):
    raw = encode_frame(f)
    assert len(raw) == FRAME_OVERHEAD + len(f.payload)
    back = decode_frame(raw)
    assert back == f
    assert encode_frame(back) == raw
    assert decode_frame(memoryview(raw)) == f
    assert decode_frame(bytearray(raw)) == f


@FAST
@given(frames(), st.binary(min_size=1, max_size=64))
def test_ethernet_padding_is_ignored(f, pad):
    assert decode_frame(encode_frame(f) + pad) == f


def test_header_pack_unpack_at_offset():
    h = sample_frame().header
    buf = b"xyz" + h.pack() + b"tail"
    assert DlcpHeader.unpack(buf, 3) == h
    with pytest.raises(WireError, match="truncated DLCP header"):
        DlcpHeader.unpack(h.pack()[:47])


def test_mac_given_as_string_is_normalised():
    f = sample_frame()
    assert f.src_mac == bytes.fromhex("020000000001")
    assert decode_frame(encode_frame(f)).src_mac == f.src_mac


def test_dscp_priority_mapping():
    assert dscp_for_priority(0) == 56  # CS7
    assert dscp_for_priority(7) == 0  # best effort
    for p in range(8):
        assert priority_for_dscp(dscp_for_priority(p)) == p
    assert priority_for_dscp(46) == 2  # EF falls in class 5
    with pytest.raises(ValueError, match="priority"):
        dscp_for_priority(8)
    with pytest.raises(ValueError, match="dscp"):
        priority_for_dscp(64)


# --- Checksums ----------------------------------------------------------------------


@FAST
@given(st.binary(max_size=2000))
def test_internet_checksum_matches_references(data):
    assert internet_checksum(data) == ref_checksum(data) == scapy_checksum(data)


def test_internet_checksum_known_values():
    # RFC 1071 section 3 example: the sum of these words is 0xddf2.
    assert internet_checksum(bytes.fromhex("0001f203f4f5f6f7")) == 0xFFFF - 0xDDF2
    assert internet_checksum(b"") == 0xFFFF
    assert internet_checksum(b"\xff\xff") == 0


def with_udp_checksum_computing_to_zero(f: Frame) -> Frame:
    """f with send_ts_ns chosen so that its UDP checksum computes to 0.

    Adding the current checksum value c as a word brings the ones' complement sum
    to 0xFFFF, whose complement is 0.
    """
    f.header.send_ts_ns = 0
    (c,) = struct.unpack_from("!H", encode_frame(f), wire.OFF_UDP_CHECKSUM)
    f.header.send_ts_ns = c % 0xFFFF
    return f


def test_udp_checksum_zero_is_sent_as_ffff():
    f = with_udp_checksum_computing_to_zero(sample_frame())
    raw = bytearray(encode_frame(f))
    assert raw[40:42] == b"\xff\xff"
    raw[40:42] = b"\0\0"
    assert ref_checksum(bytes(raw[26:34]) + b"\0\x11" + raw[38:40] + bytes(raw[34:])) == 0
    assert decode_frame(encode_frame(f)) == f


# --- Scapy cross-checks ----------------------------------------------------------------


@SLOW
@given(frames())
def test_scapy_dissects_our_frames(f):
    raw = encode_frame(f)
    p = Ether(raw)
    h = f.header
    assert p.src == ":".join(f"{b:02x}" for b in f.src_mac)
    assert p.dst == ":".join(f"{b:02x}" for b in f.dst_mac)
    assert (p[IP].src, p[IP].dst, p[IP].ttl, p[IP].proto) == (f.src_ip, f.dst_ip, f.ttl, 17)
    assert p[IP].tos == dscp_for_priority(h.priority) << 2 | f.ecn
    assert p[IP].len == len(raw) - 14
    assert (p[UDP].sport, p[UDP].dport, p[UDP].len) == (f.sport, f.dport, len(raw) - 34)
    if DLCP_UDP_PORT not in (f.sport, f.dport):
        return  # scapy dissects by port; we do not need it to guess
    d = p[DLCP]
    for name in HEADER_FIELDS:
        assert int(getattr(d, name)) == getattr(h, name), name
    assert (d.magic, d.version, d.reserved2) == (0xD1C9, 2, 0)
    if f.payload:
        assert d[Raw].load == f.payload
    else:
        assert Raw not in d
    assert scapy_rebuilt(raw) == raw


@SLOW
@given(frames(trimmed=False))
def test_checksums_equal_scapys(f):
    f.dport = DLCP_UDP_PORT
    raw = encode_frame(f)
    assert scapy_rebuilt(raw) == raw


@SLOW
@given(
    st.sampled_from(PacketType), st.integers(0, 0x0F), st.integers(0, 7), st.integers(0, 7),
    st.integers(0, U32), st.integers(0, 2**64 - 1), st.binary(max_size=300),
    st.sampled_from([(DLCP_UDP_PORT, 5000), (5000, DLCP_UDP_PORT)]), st.integers(0, 3),
)
def test_scapy_built_frames_decode(ptype, flags, prio, mag, tensor, ts, payload, ports, ecn):
    if flags & Flags.TRIMMED:
        payload = b""
    pkt = (
        Ether(**MACS)
        / IP(src="192.168.1.1", dst="192.168.1.2", tos=ecn, ttl=17)
        / UDP(sport=ports[0], dport=ports[1])
        / DLCP(type=ptype, flags=flags, priority=prio, mag_class=mag, job=5, src_rank=6,
               dst_rank=7, iteration=8, tensor_id=tensor, chunk_index=2, chunk_count=3,
               offset=1 << 20, send_ts_ns=ts, payload_len=1234 if flags & Flags.TRIMMED else None)
        / Raw(payload)
    )
    f = decode_frame(bytes(pkt))
    h = f.header
    assert (f.src_mac, f.dst_mac) == (bytes.fromhex("02000000000a"), bytes.fromhex("02000000000b"))
    assert (f.src_ip, f.dst_ip, f.ttl, f.ecn, (f.sport, f.dport)) == ("192.168.1.1", "192.168.1.2", 17, ecn, ports)
    assert (h.type, h.flags, h.priority, h.mag_class) == (ptype, flags, prio, mag)
    assert (h.job, h.src_rank, h.dst_rank, h.iteration, h.chunk_index, h.chunk_count) == (5, 6, 7, 8, 2, 3)
    assert (h.tensor_id, h.offset, h.send_ts_ns) == (tensor, 1 << 20, ts)
    assert h.payload_len == (1234 if flags & Flags.TRIMMED else len(payload))
    assert f.payload == payload


def test_scapy_defaults_bind_both_ports():
    p = UDP() / DLCP()
    assert (p.sport, p.dport) == (DLCP_UDP_PORT, DLCP_UDP_PORT)
    assert len(DLCP()) == HEADER_LEN


def test_udp_checksum_zero_means_none():
    pkt = Ether(**MACS) / IP(src="1.1.1.1", dst="2.2.2.2") / UDP(chksum=0) / DLCP() / Raw(b"abc")
    raw = bytearray(bytes(pkt))
    assert raw[40:42] == b"\0\0"
    raw[-1] ^= 0xFF  # undetectable without a checksum, so it must decode
    assert decode_frame(bytes(raw)).payload == b"ab\x9c"


# --- Decode errors: each names what is wrong ------------------------------------------


def _set(off: int, fmt: str, value: int):
    def mutate(b: bytearray) -> bytearray:
        struct.pack_into(fmt, b, off, value)
        return b

    return mutate


def _add16(off: int, delta: int):
    def mutate(b: bytearray) -> bytearray:
        struct.pack_into("!H", b, off, (struct.unpack_from("!H", b, off)[0] + delta) & 0xFFFF)
        return b

    return mutate


def _short_dlcp(b: bytearray) -> bytearray:
    # Self-consistent IP and UDP that carry only 10 bytes, too few for a DLCP header.
    del b[52:]
    struct.pack_into("!H", b, 16, 38)
    struct.pack_into("!H", b, 38, 18)
    return b


W = wire
DECODE_ERRORS = [
    # (id, mutation, re-fix checksums afterwards, expected words in the message)
    ("eth-truncated", lambda b: b[:10], False, "truncated Ethernet"),
    ("ip-truncated", lambda b: b[:30], False, "truncated IPv4 header"),
    ("udp-truncated", lambda b: b[:38], False, "truncated"),
    ("dlcp-truncated", lambda b: b[:70], False, "truncated"),
    ("payload-truncated", lambda b: b[:-1], False, "truncated"),
    ("dlcp-too-short", _short_dlcp, True, "truncated DLCP header"),
    ("ipv6-ethertype", _set(W.OFF_ETHERTYPE, "!H", 0x86DD), False, "not IPv4: EtherType 0x86dd"),
    ("vlan", _set(W.OFF_ETHERTYPE, "!H", 0x8100), False, "VLAN"),
    ("ip-version", _set(W.OFF_IP_VER_IHL, "!B", 0x65), True, "not IPv4: IP version 6"),
    ("ip-options", _set(W.OFF_IP_VER_IHL, "!B", 0x46), True, "IHL"),
    ("fragment-mf", _set(W.OFF_IP_FRAG, "!H", 0x2000), True, "fragment"),
    ("fragment-offset", _set(W.OFF_IP_FRAG, "!H", 0x4001), True, "fragment"),
    ("not-udp", _set(W.OFF_IP_PROTO, "!B", 6), True, "not UDP: IP protocol 6"),
    ("ip-len-too-small", _set(W.OFF_IP_TOTAL_LEN, "!H", 27), True, "IP total length 27"),
    ("ip-len-beyond-buffer", _add16(W.OFF_IP_TOTAL_LEN, 1), True, "truncated: IP total length"),
    ("ip-len-vs-udp-len", _add16(W.OFF_IP_TOTAL_LEN, -1), True, "inconsistent with IP total length"),
    ("udp-len", _add16(W.OFF_UDP_LEN, 1), True, "UDP length"),
    ("bad-ip-checksum", _add16(W.OFF_IP_CHECKSUM, 1), False, "IPv4 header checksum"),
    ("bad-udp-checksum", _add16(W.OFF_TENSOR_ID, 1), False, "UDP checksum"),
    ("magic", _set(W.OFF_MAGIC, "!H", 0xBEEF), True, "magic 0xbeef"),
    ("version", _set(W.OFF_VERSION, "!B", 1), True, "version 1"),
    ("type", _set(W.OFF_TYPE, "!B", 4), True, "packet type 4"),
    ("flags", _set(W.OFF_FLAGS, "!B", 0x10), True, "flag bits 0x10"),
    ("priority", _set(W.OFF_PRIORITY, "!B", 8), True, "priority 8"),
    ("mag-class", _set(W.OFF_MAG_CLASS, "!B", 8), True, "magnitude class 8"),
    ("tclass", _set(W.OFF_TCLASS, "!B", 6), True, "traffic class 6 out of range 0..5"),
    ("reserved2", _set(W.OFF_RESERVED2, "!I", 1), True, "reserved"),
    ("payload-len", _add16(W.OFF_PAYLOAD_LEN, 1), True, "payload length 16 inconsistent"),
    ("trimmed-with-payload", _set(W.OFF_FLAGS, "!B", Flags.TRIMMED), True, "TRIMMED packet must carry no payload"),
]


@pytest.mark.parametrize("mutate,refix,words", [c[1:] for c in DECODE_ERRORS], ids=[c[0] for c in DECODE_ERRORS])
def test_decode_errors_name_the_problem(mutate, refix, words):
    raw = bytearray(encode_frame(sample_frame()))
    decode_frame(bytes(raw))  # the unmutated frame is valid
    bad = mutate(raw)
    if refix:
        bad = fix_checksums(bad)
    with pytest.raises(WireError, match=words.replace("(", r"\(")):
        decode_frame(bytes(bad))


def test_trimmed_payload_len_beyond_maximum_is_rejected():
    raw = bytearray(trim_frame(encode_frame(sample_frame())))
    struct.pack_into("!H", raw, wire.OFF_PAYLOAD_LEN, MAX_PAYLOAD + 1)
    with pytest.raises(WireError, match="TRIMMED packet's payload length"):
        decode_frame(bytes(fix_checksums(raw)))


def test_wire_error_is_a_value_error():
    assert issubclass(WireError, ValueError)


# --- Never crash ----------------------------------------------------------------------


def _decode_or_wire_error(buf: bytes) -> None:
    try:
        f = decode_frame(buf)
    except WireError:
        return
    # Whatever decodes must be something encode can produce again.
    assert decode_frame(encode_frame(f)) == f


@settings(max_examples=examples(300), deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_raise_only_wire_error(data):
    _decode_or_wire_error(data)


@settings(max_examples=examples(300), deadline=None)
@given(
    frames(),
    st.lists(st.tuples(st.integers(0, 200), st.integers(1, 255)), max_size=4),
    st.one_of(st.none(), st.integers(0, 200)),
    st.binary(max_size=16),
    st.booleans(),
)
def test_mutated_frames_raise_only_wire_error(f, flips, cut, extra, refix):
    buf = bytearray(encode_frame(f))
    for pos, xor in flips:
        if pos < len(buf):
            buf[pos] ^= xor
    if cut is not None:
        del buf[cut:]
    buf += extra
    if refix:  # gets mutations past the checksums to the checks behind them
        fix_checksums(buf)
    _decode_or_wire_error(bytes(buf))


# --- Encode validation ------------------------------------------------------------------

ENCODE_ERRORS = [
    ("priority", dict(header=dict(priority=8)), "priority must be in 0..7"),
    ("mag_class", dict(header=dict(mag_class=-1)), "mag_class must be in 0..7"),
    ("tclass", dict(header=dict(tclass=6)), "tclass must be in 0..5"),
    ("type", dict(header=dict(type=9)), "type must be one of DATA=0"),
    ("flags", dict(header=dict(flags=0x10)), "flags has unknown bits 0x10"),
    ("job", dict(header=dict(job=1 << 16)), "job must be in 0..65535"),
    ("iteration-float", dict(header=dict(iteration=1.0)), "iteration must be an integer"),
    ("send_ts", dict(header=dict(send_ts_ns=1 << 64)), "send_ts_ns must be in"),
    ("payload_len", dict(header=dict(payload_len=3)), "payload_len must equal len"),
    ("trimmed-payload", dict(header=dict(flags=Flags.TRIMMED)), "payload must be empty when TRIMMED"),
    ("trimmed-len", dict(payload=b"", header=dict(flags=Flags.TRIMMED, payload_len=MAX_PAYLOAD + 1)), "payload_len must be in 0..65459"),
    ("payload-size", dict(payload=bytes(MAX_PAYLOAD + 1)), "payload must be at most 65459"),
    ("src_ip", dict(src_ip="10.0.0"), "src_ip must be a dotted IPv4"),
    ("dst_ip", dict(dst_ip="::1"), "dst_ip must be a dotted IPv4"),
    ("ttl", dict(ttl=256), "ttl must be in 0..255"),
    ("ecn", dict(ecn=4), "ecn must be in 0..3"),
    ("sport", dict(sport=-1), "sport must be in 0..65535"),
    ("dport", dict(dport=70000), "dport must be in 0..65535"),
]


@pytest.mark.parametrize("changes,words", [c[1:] for c in ENCODE_ERRORS], ids=[c[0] for c in ENCODE_ERRORS])
def test_encode_rejects_bad_fields(changes, words):
    f = sample_frame(changes.get("payload", b"gradient bytes!"))
    for name, value in changes.get("header", {}).items():
        setattr(f.header, name, value)
    for name, value in changes.items():
        if name not in ("header", "payload"):
            setattr(f, name, value)
    if "payload_len" not in changes.get("header", {}) and not f.header.flags & Flags.TRIMMED:
        f.header.payload_len = len(f.payload)
    with pytest.raises(ValueError, match=words):
        encode_frame(f)


@pytest.mark.parametrize("mac", ["02:00:00:00:00", "zz:00:00:00:00:01", b"\x01" * 5, 7])
def test_bad_mac_is_rejected(mac):
    with pytest.raises(ValueError, match="src_mac must be 6 bytes"):
        Frame(src_mac=mac)


def test_numpy_style_integers_are_accepted():
    class Index:  # stands in for numpy.int64: an integer by __index__, not by type
        def __init__(self, v):
            self.v = v

        def __index__(self):
            return self.v

    f = sample_frame()
    f.header.tensor_id = Index(12)
    assert decode_frame(encode_frame(f)).header.tensor_id == 12


# --- trim_frame -----------------------------------------------------------------------


def trimmed(f: Frame) -> Frame:
    h = dataclasses.replace(f.header, flags=f.header.flags | Flags.TRIMMED)
    return dataclasses.replace(f, header=h, payload=b"")


@FAST
@given(frames(trimmed=False))
def test_trim_equals_encoding_the_trimmed_frame(f):
    raw = encode_frame(f)
    t = trim_frame(raw)
    # Byte-identical to a fresh encoding: both incremental checksums came out exact.
    assert t == encode_frame(trimmed(f))
    g = decode_frame(t)
    assert g.header.flags & Flags.TRIMMED and g.payload == b""
    assert g.header.payload_len == len(f.payload)
    assert trim_frame(t) == t  # idempotent
    assert trim_frame(bytearray(raw)) == t and trim_frame(memoryview(raw)) == t


@SLOW
@given(frames(trimmed=False))
def test_trimmed_checksums_valid_per_scapy(f):
    f.dport = DLCP_UDP_PORT
    t = trim_frame(encode_frame(f))
    assert scapy_rebuilt(t) == t
    assert Ether(t)[DLCP].flags.TRIMMED


def test_trim_sends_a_computed_zero_udp_checksum_as_ffff():
    f = with_udp_checksum_computing_to_zero(trimmed(sample_frame()))
    f.header.flags &= ~Flags.TRIMMED
    f.payload = b"gradient bytes!"
    t = trim_frame(encode_frame(f))
    assert t[40:42] == b"\xff\xff"
    assert t == encode_frame(trimmed(f))


def test_trim_drops_padding_and_keeps_absent_udp_checksum():
    raw = bytearray(encode_frame(sample_frame()))
    raw[40:42] = b"\0\0"
    t = trim_frame(bytes(raw) + bytes(20))
    assert len(t) == FRAME_OVERHEAD and t[40:42] == b"\0\0"
    assert decode_frame(t).header.payload_len == len(sample_frame().payload)


@pytest.mark.parametrize("where", [wire.OFF_TENSOR_ID + 3, wire.PAYLOAD_OFF + 2])
def test_trim_does_not_launder_corruption(where):
    # Corruption before the switch must still be caught at the receiver, also when the
    # corrupted bytes were the ones trimmed away.
    raw = bytearray(encode_frame(sample_frame()))
    raw[where] ^= 0x40
    with pytest.raises(WireError, match="UDP checksum"):
        decode_frame(trim_frame(bytes(raw)))


@pytest.mark.parametrize(
    "raw,words",
    [
        (bytes(60), "not a DLCP frame"),
        (bytes(Ether(**MACS) / IP(src="1.1.1.1", dst="2.2.2.2", proto=6) / Raw(bytes(80))), "not a DLCP frame"),
        (bytes(Ether(**MACS) / IP(src="1.1.1.1", dst="2.2.2.2") / UDP(dport=9) / Raw(bytes(80))), "not a DLCP frame: magic"),
        (encode_frame(sample_frame())[:-1], "inconsistent lengths"),
    ],
    ids=["zeros", "tcp", "other-udp", "truncated"],
)
def test_trim_rejects_non_dlcp(raw, words):
    with pytest.raises(WireError, match=words):
        trim_frame(raw)


# --- mark_ce ------------------------------------------------------------------------------


@FAST
@given(frames(), st.sampled_from([Ecn.ECT0, Ecn.ECT1]))
def test_mark_ce_on_ect(f, ecn):
    f.ecn = ecn
    buf = bytearray(encode_frame(f))
    assert mark_ce(buf) is True
    g = decode_frame(buf)
    assert g.ecn == Ecn.CE
    assert buf == encode_frame(dataclasses.replace(f, ecn=Ecn.CE))
    assert mark_ce(buf) is True and decode_frame(buf) == g  # already CE: unchanged


@SLOW
@given(frames(trimmed=True))
def test_mark_ce_checksum_valid_per_scapy(f):
    f.ecn, f.dport = Ecn.ECT0, DLCP_UDP_PORT
    buf = bytearray(encode_frame(f))
    mv = memoryview(buf)
    assert mark_ce(mv)
    mv.release()
    assert scapy_rebuilt(bytes(buf)) == bytes(buf)
    assert Ether(bytes(buf))[IP].tos & 3 == 3


def test_mark_ce_leaves_not_ect_and_non_ipv4_alone():
    f = sample_frame()
    f.ecn = Ecn.NOT_ECT
    raw = encode_frame(f)
    buf = bytearray(raw)
    assert mark_ce(buf) is False and buf == raw
    arp = bytearray(bytes(12) + b"\x08\x06" + bytes(28))
    assert mark_ce(arp) is False and arp == bytes(12) + b"\x08\x06" + bytes(28)
    assert mark_ce(bytearray(20)) is False
    with pytest.raises(TypeError, match="writable"):
        mark_ce(raw)


def test_mark_ce_works_on_any_ipv4_packet_with_options():
    # ECN marking applies to background TCP too, whatever its header length.
    pkt = Ether(**MACS) / IP(src="1.1.1.1", dst="2.2.2.2", tos=0x02, options=b"\x01\x01\x01\x00") / Raw(b"x")
    buf = bytearray(bytes(pkt))
    assert mark_ce(buf)
    p = Ether(bytes(buf))
    got = p[IP].chksum
    del p[IP].chksum
    assert Ether(bytes(p))[IP].chksum == got and p[IP].tos == 0x03
