"""The compiled core's wire layout (dlcp_native/src/wire/wire_layout.hpp) is what
dlcp_emu/wire/layout.py generates, and says what the layout says: every field of the DLCP
header at its offset and size, every frame offset, flag, type, length and port."""
import re
from pathlib import Path

from dlcp_emu.wire import layout
from dlcp_emu.wire.native_layout import PATH, cpp_header

ROOT = Path(__file__).resolve().parent.parent
SIZES = {"B": 1, "H": 2, "I": 4, "Q": 8}


def constants(text):
    """{name: value} of every `NAME = integer` the header declares."""
    return {name: int(value, 0) for name, value in re.findall(r"\b([A-Z][A-Z0-9_]*) = (0x[0-9A-F]+|\d+)\b", text)}


def test_shipped_header_is_generated_from_the_layout():
    assert (ROOT / PATH).read_text() == cpp_header(), (
        f"{PATH} is not what dlcp_emu/wire/layout.py generates: run `python -m dlcp_emu.wire.native_layout`")


def test_header_says_what_the_layout_says():
    got = constants(cpp_header())
    want = {n: getattr(layout, n) for n in vars(layout) if n.startswith("OFF_")}
    for f in layout.HEADER_FIELDS:
        want[f"HDR_{f.name.upper()}"] = f.offset
        want[f"HDR_{f.name.upper()}_SIZE"] = SIZES[f.code]
    want.update({f"FLAG_{f.name}": f.value for f in layout.Flags})
    want.update({t.name: t.value for t in layout.PacketType})
    want.update({n: getattr(layout, n) for n in (
        "MAGIC", "VERSION", "DLCP_UDP_PORT", "BACKGROUND_TCP_PORT", "ETH_LEN", "IPV4_LEN", "UDP_LEN",
        "HEADER_LEN", "FRAME_OVERHEAD", "MAX_PAYLOAD", "IP_OFF", "UDP_OFF", "DLCP_OFF", "PAYLOAD_OFF",
        "ETHERTYPE_IPV4", "IPPROTO_UDP", "IP_FLAG_DF", "IP_FLAG_MF", "IP_FRAG_OFFSET_MASK",
        "TENSOR_LAYER_SHIFT", "TENSOR_PHASE_SHIFT", "TENSOR_STEP_MASK")})
    want.update(FLAG_MASK=layout._FLAG_MASK, TOP_PRIORITY=7, TOP_MAG_CLASS=7,
                TOP_TRAFFIC_CLASS=len(layout.TRAFFIC_CLASSES) - 1)
    want.update({"TCLASS_" + n.upper().replace("-", "_"): code for code, n in enumerate(layout.TRAFFIC_CLASSES)})
    assert {k: got.get(k) for k in want} == want
    assert not set(got) - set(want), f"the header declares what the test does not check: {set(got) - set(want)}"
