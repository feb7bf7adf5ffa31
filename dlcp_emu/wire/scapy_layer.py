"""Scapy dissector for the DLCP header, for captures and hand-built test packets.

The layout is defined in ``dlcp_emu.wire``; this module mirrors it field by field
(tests check the two agree). Scapy is far too slow for the data path, which parses
with struct at the fixed offsets of ``wire``.

Importing this module binds DLCP to UDP port DLCP_UDP_PORT in both directions.
"""

from __future__ import annotations

from scapy.fields import (
    ByteEnumField,
    ByteField,
    FlagsField,
    IntField,
    LongField,
    ShortField,
    XShortField,
)
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_bottom_up, bind_top_down

from dlcp_emu.wire import DLCP_UDP_PORT, HEADER_LEN, MAGIC, VERSION, Flags, PacketType
from dlcp_emu.wire.layout import TCLASS_GRADIENT, TRAFFIC_CLASSES

# FlagsField names bits from the least significant one up.
_FLAG_NAMES = [Flags(1 << i).name for i in range(4)]


class DLCP(Packet):
    name = "DLCP"
    fields_desc = [
        XShortField("magic", MAGIC),
        ByteField("version", VERSION),
        ByteEnumField("type", PacketType.DATA, {t.value: t.name for t in PacketType}),
        FlagsField("flags", 0, 8, _FLAG_NAMES),
        ByteField("priority", 7),
        ByteField("mag_class", 0),
        ByteEnumField("tclass", TCLASS_GRADIENT, dict(enumerate(TRAFFIC_CLASSES))),
        ShortField("job", 0),
        ShortField("src_rank", 0),
        ShortField("dst_rank", 0),
        # None: filled with the payload length on build, as scapy does for lengths.
        ShortField("payload_len", None),
        IntField("iteration", 0),
        IntField("tensor_id", 0),
        IntField("chunk_index", 0),
        IntField("chunk_count", 1),
        IntField("offset", 0),
        IntField("reserved2", 0),
        LongField("send_ts_ns", 0),
    ]

    def post_build(self, pkt: bytes, pay: bytes) -> bytes:
        if self.payload_len is None:
            n = len(pay)
            pkt = pkt[:14] + n.to_bytes(2, "big") + pkt[16:]
        return pkt + pay

    def mysummary(self) -> str:
        return self.sprintf(
            "DLCP %type% job=%job% it=%iteration% tensor=%tensor_id% "
            "chunk=%chunk_index%/%chunk_count% prio=%priority% mag=%mag_class% [%flags%]"
        )


assert len(DLCP()) == HEADER_LEN

# bind_layers would register two top-down bindings that overwrite each other, so
# dissect on either port but build UDP()/DLCP() with both ports set.
bind_bottom_up(UDP, DLCP, dport=DLCP_UDP_PORT)
bind_bottom_up(UDP, DLCP, sport=DLCP_UDP_PORT)
bind_top_down(UDP, DLCP, sport=DLCP_UDP_PORT, dport=DLCP_UDP_PORT)
