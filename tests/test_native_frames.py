"""The compiled frame parser and rewrites against the Python ones (datapath/frames.py,
wire/rewrite.py): the same frames, the same Packet fields (flow hash included), the same
refusals, the same bytes out. Frames are well-formed ones of every kind with fields and bytes
then changed at random, so that each rule of the parser is crossed both ways."""
import struct

import pytest
from hypothesis import given, settings, strategies as st

import dlcp_native.datapath as compiled
from dlcp_emu.emu.datapath.frames import parse
from dlcp_emu.wire import DlcpHeader, Flags, Frame, WireError, encode_frame, mark_ce, trim_frame

from test_datapath_frames import H1, H2, ipv4

FIELDS = ("size", "flow", "prio", "mag", "layer", "droppable", "dlcp", "ect", "ce", "header_size", "tclass")


def python_parse(frame):
    p = parse(frame)
    return p if isinstance(p, str) else tuple(getattr(p, f) for f in FIELDS)


@st.composite
def dlcp_frames(draw):
    payload = draw(st.integers(0, 300))
    h = DlcpHeader(flags=Flags(draw(st.integers(0, 15)) & ~Flags.TRIMMED), priority=draw(st.integers(0, 7)),
                   mag_class=draw(st.integers(0, 7)), tclass=draw(st.integers(0, 5)), payload_len=payload,
                   tensor_id=draw(st.integers(0, 2**32 - 1)), type=draw(st.integers(0, 3)))
    f = bytearray(encode_frame(Frame(src_mac=H1, dst_mac=H2, src_ip=f"10.0.{draw(st.integers(0, 255))}.1",
                                     dst_ip="10.0.0.2", sport=draw(st.integers(1, 65535)),
                                     ecn=draw(st.integers(0, 3)), header=h,
                                     payload=draw(st.binary(min_size=payload, max_size=payload)))))
    if draw(st.booleans()):
        f[40:42] = b"\0\0"     # no UDP checksum: a trim must leave it so
    return bytes(f)


@st.composite
def plain_frames(draw):
    ihl = draw(st.sampled_from([5, 5, 6, 15]))
    return ipv4(draw(st.sampled_from([6, 17, 1, 47])), tos=draw(st.integers(0, 255)),
                sport=draw(st.integers(0, 65535)), dport=draw(st.sampled_from([80, 9796, 5201])),
                frag=draw(st.sampled_from([0, 0x4000, 0x2000, 0x0001])), ihl=ihl,
                size=draw(st.integers(18 + 4 * ihl, 200)), src=draw(st.integers(0, 255)),
                dst=draw(st.integers(0, 255)))


@st.composite
def frames(draw):
    """A frame of some kind, then a few bytes overwritten and perhaps cut short."""
    f = bytearray(draw(st.one_of(dlcp_frames(), plain_frames(), st.binary(min_size=0, max_size=120))))
    for _ in range(draw(st.integers(0, 3))):
        if f:
            f[draw(st.integers(0, len(f) - 1))] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        f = f[:draw(st.integers(0, len(f)))]
    return bytes(f)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None)
@given(frames())
def test_native_parse_gives_the_python_packet(frame):
    assert compiled.parse_frame(frame) == python_parse(frame)


def test_each_kind_is_met():
    """The strategies reach DLCP packets, plain IPv4 and the two refusals (else the property
    above could pass on frames that never exercise a rule)."""
    seen = set()
    kinds = {"malformed", "invalid_dlcp"}
    dlcp = encode_frame(Frame(src_mac=H1, dst_mac=H2, src_ip="10.0.0.1", dst_ip="10.0.0.2", sport=5,
                              header=DlcpHeader(priority=2, mag_class=6, tensor_id=3 << 16)))
    bad_version = dlcp[:44] + b"\x01" + dlcp[45:]
    for f in (dlcp, ipv4(6), ipv4(17, ihl=15, size=80), bad_version, dlcp[:40]):
        r = compiled.parse_frame(f)
        assert r == python_parse(f)
        seen.add(r if isinstance(r, str) else ("dlcp" if r[6] else "plain"))
    assert seen == kinds | {"dlcp", "plain"}


def python_trim(frame):
    try:
        return trim_frame(frame)
    except WireError:
        return None


@pytest.mark.slow
@settings(max_examples=1500, deadline=None)
@given(st.one_of(dlcp_frames(), frames()))
def test_native_trim_and_ce_give_the_python_bytes(frame):
    assert compiled.trim_frame(frame) == python_trim(frame)
    buf = bytearray(frame)
    ce = mark_ce(buf)
    assert compiled.mark_ce(frame) == (ce, bytes(buf))


def test_trim_keeps_a_valid_udp_checksum():
    """Checked by decoding: the trimmed frame's checksums verify (the incremental update)."""
    from dlcp_emu.wire import decode_frame
    f = encode_frame(Frame(src_mac=H1, dst_mac=H2, src_ip="10.0.0.1", dst_ip="10.0.0.2", sport=5,
                           header=DlcpHeader(payload_len=101, flags=Flags.DROPPABLE), payload=bytes(range(101))))
    out = compiled.trim_frame(f)
    assert out == trim_frame(f) and len(out) == 90
    assert decode_frame(out).header.flags & Flags.TRIMMED
    assert struct.unpack_from("!H", out, 40)[0] != 0
