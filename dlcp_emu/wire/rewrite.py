"""What a switch changes in a frame it forwards: trimming and ECN marking, checksums kept
valid incrementally."""
from __future__ import annotations
import struct
from dlcp_emu.wire.layout import (
    ETHERTYPE_IPV4, ETH_LEN, Ecn, FRAME_OVERHEAD, Flags, HEADER_LEN, IPPROTO_UDP, IPV4_LEN, MAGIC,
    OFF_ETHERTYPE, OFF_FLAGS, OFF_IP_CHECKSUM, OFF_IP_PROTO, OFF_IP_TOS, OFF_IP_TOTAL_LEN,
    OFF_IP_VER_IHL, OFF_MAGIC, OFF_PAYLOAD_LEN, OFF_PRIORITY, OFF_UDP_CHECKSUM, OFF_UDP_LEN,
    PAYLOAD_OFF, UDP_LEN, UDP_OFF, VERSION, WireError, _U16,
)
from dlcp_emu.wire.checksum import _fold, _update, _words

# --- Switch data path helpers ------------------------------------------------------
#
# These read and patch fixed offsets only; they check just enough to not corrupt a
# frame, and never verify checksums (a switch forwards, the receiver verifies).


def trim_frame(frame) -> bytes:
    """NDP-style trim: the frame without its payload, TRIMMED set, checksums kept valid.

    payload_len keeps the original length so the receiver knows what it lost.
    Ethernet padding is dropped. A frame already trimmed comes back unchanged.
    Raises WireError if the frame is not a well-formed DLCP frame at fixed offsets.
    """
    size = len(frame)
    if size < FRAME_OVERHEAD:
        raise WireError(f"not a DLCP frame: {size} bytes, a DLCP frame has at least {FRAME_OVERHEAD}")
    (ethertype,) = _U16.unpack_from(frame, OFF_ETHERTYPE)
    if ethertype != ETHERTYPE_IPV4 or frame[OFF_IP_VER_IHL] != 0x45 or frame[OFF_IP_PROTO] != IPPROTO_UDP:
        raise WireError("not a DLCP frame: need IPv4 without options carrying UDP")
    magic, version = struct.unpack_from("!HB", frame, OFF_MAGIC)
    if magic != MAGIC or version != VERSION:
        raise WireError(f"not a DLCP frame: magic 0x{magic:04x} version {version}")
    (total_len,) = _U16.unpack_from(frame, OFF_IP_TOTAL_LEN)
    (udp_len,) = _U16.unpack_from(frame, OFF_UDP_LEN)
    (payload_len,) = _U16.unpack_from(frame, OFF_PAYLOAD_LEN)
    if ETH_LEN + total_len > size or udp_len != total_len - IPV4_LEN or udp_len < UDP_LEN + HEADER_LEN:
        raise WireError(f"inconsistent lengths: frame {size}, IP total {total_len}, UDP {udp_len}")
    carried = udp_len - UDP_LEN - HEADER_LEN
    flags = frame[OFF_FLAGS]
    if flags & Flags.TRIMMED:
        if carried:
            raise WireError(f"TRIMMED packet carries {carried} payload bytes")
        return bytes(frame[:PAYLOAD_OFF])
    if payload_len != carried:
        raise WireError(f"DLCP payload length {payload_len} inconsistent with {carried} payload bytes")

    out = bytearray(frame[:PAYLOAD_OFF])
    new_total = IPV4_LEN + UDP_LEN + HEADER_LEN
    new_udp = UDP_LEN + HEADER_LEN
    _U16.pack_into(out, OFF_IP_TOTAL_LEN, new_total)
    _U16.pack_into(out, OFF_UDP_LEN, new_udp)
    out[OFF_FLAGS] = flags | Flags.TRIMMED
    (ip_sum,) = _U16.unpack_from(out, OFF_IP_CHECKSUM)
    _U16.pack_into(out, OFF_IP_CHECKSUM, _update(ip_sum, total_len, new_total))
    (udp_sum,) = _U16.unpack_from(out, OFF_UDP_CHECKSUM)
    if udp_sum:  # 0 means the sender sent none; keep it that way
        prio = out[OFF_PRIORITY]
        # UDP length counts twice (pseudo-header and header); the flags byte shares
        # a word with priority; the payload words leave the sum entirely.
        old = 2 * udp_len + (flags << 8 | prio) + _fold(_words(frame[PAYLOAD_OFF : ETH_LEN + total_len]))
        new = 2 * new_udp + ((flags | Flags.TRIMMED) << 8 | prio)
        _U16.pack_into(out, OFF_UDP_CHECKSUM, _update(udp_sum, old, new) or 0xFFFF)
    return bytes(out)


def mark_ce(buf) -> bool:
    """Set ECN CE in place on an ECT(0)/ECT(1) IPv4 packet, fixing the IP checksum.

    Returns True if the packet carries CE afterwards (already-CE packets are left
    alone), False for Not-ECT packets and for anything that is not IPv4, which are
    left unchanged. buf must be writable (bytearray or writable memoryview).
    """
    if isinstance(buf, bytes) or (isinstance(buf, memoryview) and buf.readonly):
        raise TypeError("mark_ce needs a writable buffer (bytearray or writable memoryview)")
    if len(buf) < UDP_OFF or buf[OFF_ETHERTYPE] != 0x08 or buf[OFF_ETHERTYPE + 1] != 0x00:
        return False
    ver_ihl = buf[OFF_IP_VER_IHL]
    if ver_ihl >> 4 != 4:
        return False
    tos = buf[OFF_IP_TOS]
    ecn = tos & 3
    if ecn == Ecn.NOT_ECT:
        return False
    if ecn == Ecn.CE:
        return True
    (ip_sum,) = _U16.unpack_from(buf, OFF_IP_CHECKSUM)
    buf[OFF_IP_TOS] = tos | Ecn.CE
    _U16.pack_into(buf, OFF_IP_CHECKSUM, _update(ip_sum, ver_ihl << 8 | tos, ver_ihl << 8 | tos | Ecn.CE))
    return True
