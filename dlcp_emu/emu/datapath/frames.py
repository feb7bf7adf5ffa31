"""Frames -> `Packet`: the data path's parser, and the rewrites it applies on the way out.

The real-time driver (`datapath.py`) calls `parse(frame)` once per received frame, so it
reads fixed offsets with one precompiled struct and builds nothing but the Packet. Bytes the
model never looks at stay opaque in `pkt.frame`.

What a frame becomes:
- routing key `dst`: the destination MAC as 6 bytes (what the route table is keyed by);
- `flow`: hash of the IPv4 5-tuple for TCP/UDP, of (src, dst, proto) for other IPv4 and for
  non-first fragments, of the two MACs for anything else;
- DLCP (IPv4/UDP to DLCP_UDP_PORT with the DLCP magic and version): prio, mag, layer
  (tensor id) and droppable from the header, dlcp=True, header_size=90;
- other IPv4: prio from the DSCP class selector, ect/ce from the ECN bits;
- anything else (ARP, IPv6, ...): prio 7.
`size` is the frame length padded to Ethernet's 60-byte minimum, as it would be on a wire.
"""
import struct

from dlcp_emu.wire import DLCP_UDP_PORT, FRAME_OVERHEAD, MAGIC, VERSION, mark_ce, trim_frame

from switch_models.packet import REWRITE_CE, REWRITE_TRIM, Packet

ETH_MIN = 60            # shortest Ethernet frame without FCS; shorter veth frames get padded
ETH_P_IP = 0x0800
IPPROTO_TCP = 6
IPPROTO_UDP = 17

# dst MAC, EtherType, ver/IHL, TOS, frag, proto, src IP, dst IP, sport, dport (IHL 5):
# frame offsets 0, 12, 14, 15, 20, 23, 26, 30, 34, 36. 38 bytes.
L234 = struct.Struct("!6s6xHBB4xHxB2xIIHH")
# At DLCP_OFF (42): magic, version, flags, priority, mag_class, tensor_id (offset 20).
DLCP = struct.Struct("!HBxBBB13xI")
_PORTS = struct.Struct("!HH")
_DLCP_OFF = 42
_DLCP_MIN = FRAME_OVERHEAD          # a DLCP frame carries at least its 90 header bytes
_FRAG = 0x3FFF                      # MF flag + fragment offset: not a whole datagram

# TOS byte -> (prio, ect, ce): DSCP class selector (priority_for_dscp) and the ECN bits.
TOS_TABLE = tuple((7 - (tos >> 5), (tos & 3) != 0, (tos & 3) == 3) for tos in range(256))


def is_multicast(dst):
    """Broadcast and multicast destination MACs have the group bit set."""
    return bool(dst[0] & 1)


def make_parser(dlcp_port=DLCP_UDP_PORT):
    """A `parse(frame) -> Packet` closure with everything it needs bound locally."""
    unpack = L234.unpack_from
    unpack_dlcp = DLCP.unpack_from
    unpack_ports = _PORTS.unpack_from
    tos_table = TOS_TABLE
    P = Packet

    def parse(frame):
        n = len(frame)
        size = n if n > ETH_MIN else ETH_MIN
        if n < 38:
            # Too short for an IPv4 5-tuple: route on the MAC, hash the MACs.
            dst = frame[:6]
            return P(size, dst, hash(int.from_bytes(frame[:12], "big")), 7, 0, 0, False,
                     False, False, False, 90, frame)
        dst, ethertype, vihl, tos, frag, proto, src_ip, dst_ip, sport, dport = unpack(frame)
        if ethertype != ETH_P_IP or vihl >> 4 != 4:
            return P(size, dst, hash(int.from_bytes(frame[:12], "big")), 7, 0, 0, False,
                     False, False, False, 90, frame)
        prio, ect, ce = tos_table[tos]
        if frag & _FRAG == 0 and (proto == IPPROTO_UDP or proto == IPPROTO_TCP):
            if vihl != 0x45:
                # IP options move the ports; rare enough to take the slow way.
                off = 14 + (vihl & 15) * 4
                if off + 4 > n:
                    return P(size, dst, hash((src_ip, dst_ip, proto)), prio, 0, 0, False,
                             False, ect, ce, 90, frame)
                sport, dport = unpack_ports(frame, off)
            elif dport == dlcp_port and proto == IPPROTO_UDP and n >= _DLCP_MIN:
                magic, version, flags, dprio, mag, layer = unpack_dlcp(frame, _DLCP_OFF)
                # Out-of-range priority or magnitude would index past the classifier's
                # tables: such a frame is forwarded as plain UDP instead.
                if magic == MAGIC and version == VERSION and dprio < 8 and mag < 8:
                    return P(size, dst, hash((src_ip, dst_ip, proto, sport, dport)), dprio,
                             mag, layer, bool(flags & 1), True, ect, ce, 90, frame)
            return P(size, dst, hash((src_ip, dst_ip, proto, sport, dport)), prio, 0, 0, False,
                     False, ect, ce, 90, frame)
        return P(size, dst, hash((src_ip, dst_ip, proto)), prio, 0, 0, False, False, ect, ce,
                 90, frame)

    return parse


parse = make_parser()


def copy_for(pkt, dst):
    """A copy of a parsed packet routed to `dst` (one per port when flooding: each copy is
    queued, paced and counted on its own port)."""
    return Packet(pkt.size, dst, pkt.flow, pkt.prio, pkt.mag, pkt.layer, pkt.droppable,
                  pkt.dlcp, pkt.ect, pkt.ce, pkt.header_size, pkt.frame)


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
