"""The Wireshark dissector (wireshark/dlcp.lua) agrees with the project's codec: the shipped
file is what the layout generates, it names every field of the layout, tshark with it
prints every field of every frame as `decode_frame` reads it, and frames the codec refuses
are reported Malformed with the codec's own message, not decoded as garbage. The frames of a
real emulation are compared the same way in tests/test_emulation_capture.py."""
import random
import re
import subprocess
import sys

import pytest

from dlcp_emu.emu.datapath.pcap import PcapWriter
from dlcp_emu.wire import (
    DLCP_OFF, DLCP_UDP_PORT, HEADER_LEN, DlcpHeader, Flags, Frame, PacketType, WireError,
    decode_frame, encode_frame,
)
from dlcp_emu.wire.checksum import internet_checksum
from dlcp_emu.wire.layout import (
    HEADER_FIELDS, OFF_IP_CHECKSUM, OFF_IP_TOTAL_LEN, OFF_UDP_CHECKSUM, OFF_UDP_LEN, split_tensor_id,
)
from dlcp_emu.wire.wireshark import lua_dissector
from tshark_helpers import LUA, PI_MALFORMED, ROOT, dissect, expected_fields

U32 = 0xFFFFFFFF


def test_shipped_dissector_is_generated_from_the_layout():
    assert LUA.read_text() == lua_dissector(), (
        "wireshark/dlcp.lua is not what dlcp_emu/wire/layout.py generates: run "
        "`dlcp-emu wireshark --output wireshark/dlcp.lua`")


def test_dissector_names_every_field_of_the_layout_at_its_offset():
    text = LUA.read_text()
    declared = set(re.findall(r'ProtoField\.\w+\("dlcp\.(\w+)"', text))
    assert {f.name for f in HEADER_FIELDS} <= declared
    layout = {m[0]: (int(m[1]), int(m[2])) for m in re.findall(r'\{"(\w+)", (\d+), (\d+)\}', text)}
    sizes = {"B": 1, "H": 2, "I": 4, "Q": 8}
    assert layout == {f.name: (f.offset, sizes[f.code]) for f in HEADER_FIELDS}
    flags = set(re.findall(r'ProtoField\.bool\("dlcp\.flags\.(\w+)"', text))
    assert flags == {f.name.lower() for f in Flags}
    assert sum(size for _, size in layout.values()) == HEADER_LEN


def _frames(rng):
    """Valid frames over every type and flag combination, the ends of every range, random
    values between, payloads or trimmed, on the DLCP port or another (the heuristic)."""
    out = []
    for i in range(320):
        flags = Flags(i % 16)
        trimmed = bool(flags & Flags.TRIMMED)
        pick = (lambda hi: [0, hi, rng.randrange(hi + 1)][i % 3])
        n = 0 if trimmed else rng.choice([0, 1, 7, 64, 1400])
        h = DlcpHeader(type=PacketType(i // 16 % 4), flags=flags, priority=rng.randrange(8),
                       mag_class=(i // 2) % 8, tclass=(i // 3) % 6, job=pick(0xFFFF), src_rank=pick(0xFFFF),
                       dst_rank=pick(0xFFFF), payload_len=rng.randrange(65459) if trimmed else n,
                       iteration=pick(U32), tensor_id=pick(U32), chunk_index=pick(U32),
                       chunk_count=pick(U32), offset=pick(U32), send_ts_ns=pick(2**64 - 1))
        port = DLCP_UDP_PORT if i % 5 else rng.randrange(1024, 65536)
        out.append(encode_frame(Frame(src_ip="10.0.0.1", dst_ip="10.0.0.2", sport=port, dport=port,
                                      header=h, payload=rng.randbytes(n))))
    return out


def _pcap(frames, path):
    """The frames in a capture file, a nanosecond apart."""
    w = PcapWriter(str(path))
    for k, f in enumerate(frames):
        w.write(f, 1_000_000_000 + k)
    w.close()
    return path


def test_tshark_reads_every_field_as_the_codec_does(tmp_path):
    frames = _frames(random.Random(7))
    pcap = _pcap(frames, tmp_path / "valid.pcap")
    rows = dissect(pcap, tmp_path)
    assert len(rows) == len(frames)
    for frame, row in zip(frames, rows):
        d = decode_frame(frame)
        want = expected_fields(d.header, d.payload)
        got = {k[len("dlcp."):]: v for k, v in row.items() if k.startswith("dlcp.")}
        assert got == want, row["frame.number"]
        assert row["_ws.expert.message"] == "", row


def _fix(buf):
    """Checksums after a mutation, so that only the DLCP header is wrong."""
    buf[OFF_IP_CHECKSUM:OFF_IP_CHECKSUM + 2] = b"\0\0"
    buf[OFF_IP_CHECKSUM:OFF_IP_CHECKSUM + 2] = internet_checksum(bytes(buf[14:34])).to_bytes(2, "big")
    buf[OFF_UDP_CHECKSUM:OFF_UDP_CHECKSUM + 2] = b"\0\0"      # 0: no UDP checksum
    return bytes(buf)


def _mutated(offset, value):
    good = encode_frame(Frame(src_ip="10.0.0.1", dst_ip="10.0.0.2",
                              header=DlcpHeader(payload_len=16, chunk_count=4), payload=bytes(16)))
    buf = bytearray(good)
    buf[DLCP_OFF + offset] = value
    return _fix(buf)


def _truncated(keep):
    good = encode_frame(Frame(src_ip="10.0.0.1", dst_ip="10.0.0.2", header=DlcpHeader()))
    buf = bytearray(good[:DLCP_OFF + keep])
    buf[OFF_IP_TOTAL_LEN:OFF_IP_TOTAL_LEN + 2] = (20 + 8 + keep).to_bytes(2, "big")
    buf[OFF_UDP_LEN:OFF_UDP_LEN + 2] = (8 + keep).to_bytes(2, "big")
    return _fix(buf)


def _payload_len(value, flags=0, payload=16):
    h = DlcpHeader(payload_len=payload)
    buf = bytearray(encode_frame(Frame(src_ip="10.0.0.1", dst_ip="10.0.0.2", header=h,
                                       payload=bytes(payload))))
    buf[DLCP_OFF + 14:DLCP_OFF + 16] = value.to_bytes(2, "big")
    buf[DLCP_OFF + 4] = flags
    return _fix(buf)


# (what is wrong, frame, the last field the dissector may show: none past it)
MALFORMED = [
    ("version", _mutated(2, 1), "version"),
    ("type", _mutated(3, 9), None),
    ("flag bits", _mutated(4, 0x31), None),
    ("priority", _mutated(5, 8), None),
    ("magnitude class", _mutated(6, 200), None),
    ("traffic class", _mutated(7, 6), None),
    ("reserved2", _mutated(36 + 3, 5), None),
    ("truncated after the flags", _truncated(5), "flags"),
    ("truncated before the timestamp", _truncated(44), "reserved2"),
    ("payload length", _payload_len(17), None),
    ("trimmed with a payload", _payload_len(16, flags=Flags.TRIMMED), None),
]


def test_tshark_reports_what_the_codec_refuses_as_malformed(tmp_path):
    pcap = tmp_path / "bad.pcap"
    w = PcapWriter(str(pcap))
    for _, frame, _ in MALFORMED:
        w.write(frame)
    w.write(_mutated(0, 0x00))         # the magic broken: not DLCP at all, plain UDP data
    w.close()
    rows = dissect(pcap, tmp_path)
    assert len(rows) == len(MALFORMED) + 1
    names = [f.name for f in HEADER_FIELDS]
    for (what, frame, last), row in zip(MALFORMED, rows):
        with pytest.raises(WireError) as err:
            decode_frame(frame)
        assert row["_ws.expert.message"] == str(err.value), what
        assert int(row["_ws.expert.group"]) == PI_MALFORMED, what
        if last is not None:       # nothing decoded past what the header really holds
            shown = [n for n in names if row[f"dlcp.{n}"] != ""]
            assert shown == names[:names.index(last) + 1], (what, shown)
    assert all(v == "" for k, v in rows[-1].items() if k.startswith("dlcp.")), rows[-1]
    assert rows[-1]["_ws.expert.message"] == ""


def test_install_puts_it_where_wireshark_loads_it(tmp_path):
    """`dlcp-emu wireshark --install` for a user (HOME), then tshark without -X dissects."""
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-m", "dlcp_emu.cli", "wireshark", "--install"], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    installed = tmp_path / ".local" / "lib" / "wireshark" / "plugins" / "dlcp.lua"
    assert installed.read_text() == lua_dissector()
    pcap = tmp_path / "one.pcap"
    w = PcapWriter(str(pcap))
    w.write(encode_frame(Frame(header=DlcpHeader(type=PacketType.PROBE, mag_class=3))))
    w.close()
    (row,) = dissect(pcap, tmp_path, lua=None)
    assert row["dlcp.type"] == "1" and row["dlcp.mag_class"] == "3"


def test_the_readmes_filters_select_what_they_say(tmp_path):
    """A flag or the phase is a field of every DLCP frame: `== 1` selects the frames that have
    it set; the bare name only tests that the field is there (every frame)."""
    frames = _frames(random.Random(11))
    pcap = _pcap(frames, tmp_path / "f.pcap")
    headers = [decode_frame(f).header for f in frames]

    def count(expr):
        return len(dissect(pcap, tmp_path, extra=["-Y", expr]))
    trimmed = sum(bool(h.flags & Flags.TRIMMED) and h.job == 0 for h in headers)
    assert 0 < trimmed < count("dlcp.job == 0")
    assert count("dlcp.job == 0 and dlcp.flags.trimmed == 1") == trimmed
    assert count("dlcp.flags.trimmed") == len(frames)
    assert count("dlcp.tensor_id.phase == 1") == sum(split_tensor_id(h.tensor_id)[1] for h in headers) > 0
