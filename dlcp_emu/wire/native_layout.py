"""The wire layout of the compiled core (`dlcp_native/src/wire/wire_layout.hpp`), generated
from `layout` as the Wireshark dissector is, so that the C++ cannot drift from it: the
DLCP header's field offsets and sizes, packet types, flag bits, traffic classes and ranges, the Ethernet,
IPv4 and UDP offsets and lengths, and the ports.

    python -m dlcp_emu.wire.native_layout     # regenerate (a test checks it is current)
"""
from __future__ import annotations

import sys
from pathlib import Path

from dlcp_emu.wire import layout
from dlcp_emu.wire.header import _RANGES

PATH = "dlcp_native/src/wire/wire_layout.hpp"   # in the repository, relative to its root

_SIZE = {"B": 1, "H": 2, "I": 4, "Q": 8}
# Lengths are signed: the core subtracts them from sizes (mtu - IPV4_LEN - ...).
_LENGTHS = ("ETH_LEN", "IPV4_LEN", "UDP_LEN", "HEADER_LEN", "FRAME_OVERHEAD", "MAX_PAYLOAD")
_FRAME = ("IP_OFF", "UDP_OFF", "DLCP_OFF", "PAYLOAD_OFF")


def _lines(kind, names, fmt=str):
    return "\n".join(f"constexpr {kind} {n} = {fmt(getattr(layout, n))};" for n in names)


def cpp_header() -> str:
    """The whole header."""
    offsets = [n for n in vars(layout) if n.startswith("OFF_")]
    fields = "\n".join(
        f"constexpr size_t HDR_{f.name.upper()} = {f.offset}, HDR_{f.name.upper()}_SIZE = {_SIZE[f.code]};"
        for f in layout.HEADER_FIELDS)
    types = ", ".join(f"{t.name} = {t.value}" for t in layout.PacketType)
    flags = "\n".join(f"constexpr uint8_t FLAG_{f.name} = 0x{f.value:02X};" for f in layout.Flags)
    ranges = dict(_RANGES)
    return _TEMPLATE.format(
        magic=f"0x{layout.MAGIC:04X}", version=layout.VERSION, dlcp_port=layout.DLCP_UDP_PORT,
        tcp_port=layout.BACKGROUND_TCP_PORT, lengths=_lines("int64_t", _LENGTHS),
        frame=_lines("size_t", _FRAME), offsets=_lines("size_t", offsets), fields=fields,
        ethertype=f"0x{layout.ETHERTYPE_IPV4:04X}", proto=layout.IPPROTO_UDP,
        df=f"0x{layout.IP_FLAG_DF:04X}", mf=f"0x{layout.IP_FLAG_MF:04X}",
        frag_mask=f"0x{layout.IP_FRAG_OFFSET_MASK:04X}", types=types, flags=flags,
        flag_mask=f"0x{layout._FLAG_MASK:02X}", top_prio=ranges["priority"], top_mag=ranges["mag_class"],
        layer_shift=layout.TENSOR_LAYER_SHIFT, phase_shift=layout.TENSOR_PHASE_SHIFT,
        step_mask=f"0x{layout.TENSOR_STEP_MASK:04X}", top_tclass=layout.TOP_TRAFFIC_CLASS,
        tclasses=", ".join(f"TCLASS_{n.upper().replace('-', '_')} = {i}"
                           for i, n in enumerate(layout.TRAFFIC_CLASSES)))


_TEMPLATE = """\
// The DLCP wire layout for the compiled core: Ethernet / IPv4 / UDP / DLCP header / payload.
//
// GENERATED from dlcp_emu/wire/layout.py by `python -m dlcp_emu.wire.native_layout`:
// edit the layout or the generator (dlcp_emu/wire/native_layout.py), not this file.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dlcp::wire {{

constexpr uint16_t MAGIC = {magic};
constexpr uint8_t VERSION = {version};
constexpr uint16_t DLCP_UDP_PORT = {dlcp_port};
constexpr uint16_t BACKGROUND_TCP_PORT = {tcp_port};  // kernel TCP's background server

// Lengths in bytes (signed: sizes are computed with them).
{lengths}

// Where each layer starts in a frame.
{frame}

// Fields, offsets inside the frame.
{offsets}

// The DLCP header's fields: offset inside the header, and size in bytes (big-endian).
{fields}

constexpr uint16_t ETHERTYPE_IPV4 = {ethertype};
constexpr uint8_t IPPROTO_UDP = {proto};
constexpr uint16_t IP_FLAG_DF = {df}, IP_FLAG_MF = {mf}, IP_FRAG_OFFSET_MASK = {frag_mask};

enum PacketType : uint8_t {{ {types} }};

{flags}
constexpr uint8_t FLAG_MASK = {flag_mask};  // every flag above; other bits are refused

constexpr uint8_t TOP_PRIORITY = {top_prio}, TOP_MAG_CLASS = {top_mag};

// Traffic classes (switch_models/traffic.py): what a message carries.
enum TrafficClass : uint8_t {{ {tclasses} }};
constexpr uint8_t TOP_TRAFFIC_CLASS = {top_tclass};

// A tensor id: the layer in the high bits, then the phase bit, then the step.
constexpr int TENSOR_LAYER_SHIFT = {layer_shift}, TENSOR_PHASE_SHIFT = {phase_shift};
constexpr uint32_t TENSOR_STEP_MASK = {step_mask};

}}  // namespace dlcp::wire
"""


def main(argv=None):
    root = Path(argv[0]) if argv else Path(__file__).resolve().parents[2]
    (root / PATH).write_text(cpp_header())
    print(f"wrote {root / PATH}")


if __name__ == "__main__":
    main(sys.argv[1:])
