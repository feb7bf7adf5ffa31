"""Frames -> `Packet`: the data path's parser, and the rewrites it applies on the way out.

The real-time driver (`process.py`) calls `parse(frame)` once per received frame, so it
reads the fixed offsets of `dlcp_emu.wire` with one precompiled struct and hands the fields to
the header -> Packet codec both drivers share (`dlcp_emu.wire.packet`). Bytes the model never
looks at stay opaque in `pkt.frame`.

What a frame becomes:
- routing key `dst`: the destination MAC as 6 bytes (what the route table is keyed by);
- `flow`: hash of the IPv4 5-tuple for TCP/UDP, of (src, dst, proto) for other IPv4 and for
  non-first fragments, of the two MACs for anything else;
- DLCP (IPv4/UDP to DLCP_UDP_PORT with the DLCP magic): what the codec makes of the
  header (prio, mag, layer, droppable, dlcp=True);
- other IPv4: prio from the DSCP class selector, ect/ce from the ECN bits;
- anything else (ARP, IPv6, ...): prio 7.
Frames a switch cannot classify are refused, as a reason in place of a Packet, and the
data path drops and counts them: MALFORMED (shorter than an Ethernet header; IPv4 with a
header length below 20 bytes, or a header or total length past the frame's end) and
INVALID_DLCP (the DLCP port and magic, but a header the codec refuses: another version, an
unknown type or flag bit, priority or magnitude class above 7, a traffic class beyond the known ones, a non-zero
reserved field, or
cut short). Forwarding them as plain traffic would let a broken header choose its queue.
`size` is the frame length padded to Ethernet's 60-byte minimum, as it would be on a wire.
"""
import struct

from switch_models.packet import REWRITE_CE, REWRITE_TRIM, Packet

from dlcp_emu.wire import mark_ce, trim_frame
from dlcp_emu.wire.layout import (
    DLCP_OFF, DLCP_UDP_PORT, FRAME_OVERHEAD, HDR_FLAGS, HDR_JOB, HDR_MAG_CLASS, HDR_MAGIC,
    HDR_PRIORITY, HDR_RESERVED2, HDR_TCLASS, HDR_TENSOR_ID, HDR_TYPE, HDR_VERSION, MAGIC, OFF_ETH_DST,
    OFF_ETHERTYPE, OFF_IP_DST, OFF_IP_FRAG, OFF_IP_PROTO, OFF_IP_SRC, OFF_IP_TOS,
    OFF_IP_TOTAL_LEN, OFF_IP_VER_IHL, OFF_UDP_DPORT, OFF_UDP_SPORT, TOP_TRAFFIC_CLASS, VERSION, PacketType,
    fields_at,
)
from dlcp_emu.wire.layout import _FLAG_MASK, _TYPES
from dlcp_emu.wire.packet import dlcp_packet, plain_packet

ETH_P_IP = 0x0800
IPPROTO_TCP = 6
IPPROTO_UDP = 17

# What the parser reads, each at its offset (IHL 5): dst MAC, EtherType, ver/IHL, TOS,
# total length, frag, proto, src IP, dst IP, sport, dport; then of a DLCP header: magic,
# version, type, flags, priority, mag_class, tclass, tensor_id, reserved2.
L234 = fields_at((OFF_ETH_DST, "6s"), (OFF_ETHERTYPE, "H"), (OFF_IP_VER_IHL, "B"), (OFF_IP_TOS, "B"),
                 (OFF_IP_TOTAL_LEN, "H"), (OFF_IP_FRAG, "H"), (OFF_IP_PROTO, "B"), (OFF_IP_SRC, "I"),
                 (OFF_IP_DST, "I"), (OFF_UDP_SPORT, "H"), (OFF_UDP_DPORT, "H"))
DLCP = fields_at((HDR_MAGIC, "H"), (HDR_VERSION, "B"), (HDR_TYPE, "B"), (HDR_FLAGS, "B"),
                 (HDR_PRIORITY, "B"), (HDR_MAG_CLASS, "B"), (HDR_TCLASS, "B"), (HDR_JOB, "H"),
                 (HDR_TENSOR_ID, "I"), (HDR_RESERVED2, "I"))
_MAGIC = fields_at((HDR_MAGIC, "H"))
_PORTS = struct.Struct("!HH")
_DLCP_MIN = FRAME_OVERHEAD          # a DLCP frame carries at least its 90 header bytes
_FRAG = 0x3FFF                      # MF flag + fragment offset: not a whole datagram
_ETH_LEN = 14
_IP_MIN = _ETH_LEN + 20             # an Ethernet header and an IPv4 header without options

# Why a frame is refused (the drop reasons the data path counts them under).
MALFORMED = "malformed"
INVALID_DLCP = "invalid_dlcp"

# TOS byte -> (prio, ect, ce): DSCP class selector (priority_for_dscp) and the ECN bits.
TOS_TABLE = tuple((7 - (tos >> 5), (tos & 3) != 0, (tos & 3) == 3) for tos in range(256))


def is_multicast(dst):
    """Broadcast and multicast destination MACs have the group bit set."""
    return bool(dst[0] & 1)


def make_parser(dlcp_port=DLCP_UDP_PORT):
    """A `parse(frame) -> Packet | MALFORMED | INVALID_DLCP` closure with everything it needs
    bound locally."""
    unpack = L234.unpack_from
    unpack_dlcp = DLCP.unpack_from
    unpack_magic = _MAGIC.unpack_from
    unpack_ports = _PORTS.unpack_from
    tos_table = TOS_TABLE
    plain, dlcp = plain_packet, dlcp_packet
    types = frozenset(_TYPES)
    data_type = int(PacketType.DATA)
    flag_bits = ~_FLAG_MASK & 0xFF

    def parse(frame):
        n = len(frame)
        if n < 38:
            if n < _ETH_LEN:
                return MALFORMED
            if n < _IP_MIN and frame[12] == 8 and frame[13] == 0:
                return MALFORMED    # IPv4 without room for its header
            # Too short for an IPv4 5-tuple: route on the MAC, hash the MACs.
            return plain(n, frame[:6], hash(int.from_bytes(frame[:12], "big")), frame=frame)
        dst, ethertype, vihl, tos, total, frag, proto, src_ip, dst_ip, sport, dport = unpack(frame)
        if ethertype != ETH_P_IP or vihl >> 4 != 4:
            return plain(n, dst, hash(int.from_bytes(frame[:12], "big")), frame=frame)
        ihl = (vihl & 15) * 4
        if ihl < 20 or total < ihl or _ETH_LEN + total > n:
            return MALFORMED
        prio, ect, ce = tos_table[tos]
        if frag & _FRAG == 0 and (proto == IPPROTO_UDP or proto == IPPROTO_TCP):
            if vihl != 0x45:
                # IP options move the ports; rare enough to take the slow way.
                off = _ETH_LEN + ihl
                if off + 4 > n:
                    return MALFORMED
                sport, dport = unpack_ports(frame, off)
            elif dport == dlcp_port and proto == IPPROTO_UDP:
                if n < _DLCP_MIN:
                    if n >= DLCP_OFF + 2 and unpack_magic(frame, DLCP_OFF)[0] == MAGIC:
                        return INVALID_DLCP      # a DLCP header cut short
                else:
                    (magic, version, ptype, flags, dprio, mag, tclass, job, tensor_id,
                     res2) = unpack_dlcp(frame, DLCP_OFF)
                    if magic == MAGIC:
                        # What the codec refuses, a switch refuses: a bad field would choose
                        # the frame's queue (priority, magnitude) or mean something unknown.
                        if (version != VERSION or ptype not in types or flags & flag_bits
                                or dprio > 7 or mag > 7 or tclass > TOP_TRAFFIC_CLASS or res2):
                            return INVALID_DLCP
                        # wire.flow.flow_hash, written inline: a call a packet costs here.
                        return dlcp(n, dst, hash((src_ip, dst_ip, proto, sport, dport)), dprio, mag,
                                    tensor_id, flags, ect, ce, frame, tclass, job,
                                    ptype != data_type)
            return plain(n, dst, hash((src_ip, dst_ip, proto, sport, dport)), prio, ect, ce, frame)
        return plain(n, dst, hash((src_ip, dst_ip, proto)), prio, ect, ce, frame)

    return parse


parse = make_parser()


def copy_for(pkt, dst):
    """A copy of a parsed packet routed to `dst` (one per port when flooding: each copy is
    queued, paced and counted on its own port)."""
    return Packet(pkt.size, dst, pkt.flow, pkt.prio, pkt.mag, pkt.layer, pkt.droppable,
                  pkt.dlcp, pkt.ect, pkt.ce, pkt.header_size, pkt.frame, tclass=pkt.tclass, job=pkt.job)


def apply_rewrite(pkt):
    """The frame to transmit for a packet whose `rewrite` bits are set: trimmed to its DLCP
    header and/or ECN CE marked, checksums kept valid. A frame the rewrite cannot apply to
    (the model trims only DLCP packets and marks only ECN-capable ones) goes out unchanged."""
    frame = pkt.frame
    rewrite = pkt.rewrite
    if rewrite & REWRITE_TRIM:
        frame = trim_frame(frame)
    if rewrite & REWRITE_CE:
        buf = bytearray(frame)
        mark_ce(buf)
        frame = bytes(buf)
    return frame
