"""Whole frames: Ethernet / IPv4 / UDP / DLCP header / payload, encoded and strictly decoded."""
from __future__ import annotations

import socket
from dataclasses import dataclass, field

from dlcp_emu.wire.layout import (
    DLCP_OFF, DLCP_UDP_PORT, ETHERTYPE_IPV4, ETH_LEN, Ecn, FRAME_OVERHEAD, Flags, HEADER_LEN,
    IPPROTO_UDP, IPV4_LEN, IP_FLAG_DF, IP_FLAG_MF, IP_FRAG_OFFSET_MASK, IP_OFF, L234_STRUCT,
    MAX_PAYLOAD, OFF_ETHERTYPE, OFF_ETH_DST, OFF_ETH_SRC, OFF_IP_CHECKSUM, OFF_UDP_CHECKSUM,
    PAYLOAD_OFF, UDP_LEN, UDP_OFF, WireError, _ECNS, _IP_STRUCT, _U16, _UDP_STRUCT,
    dscp_for_priority,
)
from dlcp_emu.wire.checksum import _fold, _udp_checksum, _words, internet_checksum
from dlcp_emu.wire.header import DlcpHeader, _check_int

# --- Frame -----------------------------------------------------------------------


def _mac_bytes(value, name: str) -> bytes:
    if isinstance(value, (bytes, bytearray, memoryview)):
        b = bytes(value)
        if len(b) == 6:
            return b
    elif isinstance(value, str):
        parts = value.split(":")
        if len(parts) == 6 and all(len(p) == 2 for p in parts):
            try:
                return bytes.fromhex("".join(parts))
            except ValueError:
                pass
    raise ValueError(f"{name} must be 6 bytes or a string like 'aa:bb:cc:dd:ee:ff', got {value!r}")


def _ip_bytes(value, name: str) -> bytes:
    try:
        return socket.inet_pton(socket.AF_INET, value)
    except (OSError, TypeError):
        raise ValueError(f"{name} must be a dotted IPv4 address like '10.0.0.1', got {value!r}") from None


@dataclass(slots=True)
class Frame:
    """One DLCP packet as it travels on an Ethernet link.

    MACs are normalised to 6-byte ``bytes`` on construction (a colon-separated
    string is accepted), so a decoded frame compares equal to the one encoded.
    """

    src_mac: bytes = b"\x00" * 6
    dst_mac: bytes = b"\xff" * 6
    src_ip: str = "0.0.0.0"
    dst_ip: str = "0.0.0.0"
    sport: int = DLCP_UDP_PORT
    dport: int = DLCP_UDP_PORT
    ttl: int = 64
    ecn: int = Ecn.NOT_ECT
    header: DlcpHeader = field(default_factory=DlcpHeader)
    payload: bytes = b""

    def __post_init__(self) -> None:
        if type(self.src_mac) is not bytes or len(self.src_mac) != 6:
            self.src_mac = _mac_bytes(self.src_mac, "src_mac")
        if type(self.dst_mac) is not bytes or len(self.dst_mac) != 6:
            self.dst_mac = _mac_bytes(self.dst_mac, "dst_mac")


def encode_frame(frame: Frame) -> bytes:
    """The frame's bytes: Ethernet / IPv4 / UDP / DLCP / payload, checksums filled.

    Raises ValueError naming the offending field and what is allowed.
    """
    h = frame.header
    hdr = h.pack()
    payload = frame.payload
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        raise ValueError(f"payload must be bytes, got {type(payload).__name__}")
    n = len(payload)
    if h.flags & Flags.TRIMMED:
        if n:
            raise ValueError(f"payload must be empty when TRIMMED is set (payload_len keeps the original length), got {n} bytes")
        if h.payload_len > MAX_PAYLOAD:
            raise ValueError(f"payload_len must be in 0..{MAX_PAYLOAD}, got {h.payload_len}")
    else:
        if n > MAX_PAYLOAD:
            raise ValueError(f"payload must be at most {MAX_PAYLOAD} bytes (IPv4 total length limit), got {n}")
        if h.payload_len != n:
            raise ValueError(f"payload_len must equal len(payload) = {n} unless TRIMMED, got {h.payload_len}")
    sport = _check_int("sport", frame.sport, 0xFFFF)
    dport = _check_int("dport", frame.dport, 0xFFFF)
    ttl = _check_int("ttl", frame.ttl, 0xFF)
    ecn = _check_int("ecn", frame.ecn, 3)
    src_ip = _ip_bytes(frame.src_ip, "src_ip")
    dst_ip = _ip_bytes(frame.dst_ip, "dst_ip")
    dst_mac = _mac_bytes(frame.dst_mac, "dst_mac")
    src_mac = _mac_bytes(frame.src_mac, "src_mac")

    udp_len = UDP_LEN + HEADER_LEN + n
    buf = bytearray(FRAME_OVERHEAD + n)
    L234_STRUCT.pack_into(
        buf, 0, dst_mac, src_mac, ETHERTYPE_IPV4,
        0x45, dscp_for_priority(h.priority) << 2 | ecn, IPV4_LEN + udp_len,
        0, IP_FLAG_DF, ttl, IPPROTO_UDP, 0, src_ip, dst_ip,
        sport, dport, udp_len, 0,
    )
    buf[DLCP_OFF:PAYLOAD_OFF] = hdr
    buf[PAYLOAD_OFF:] = payload
    mv = memoryview(buf)
    _U16.pack_into(buf, OFF_IP_CHECKSUM, internet_checksum(mv[IP_OFF:UDP_OFF]))
    _U16.pack_into(buf, OFF_UDP_CHECKSUM, _udp_checksum(src_ip, dst_ip, mv[UDP_OFF:]))
    mv.release()
    return bytes(buf)


def decode_frame(buf) -> Frame:
    """Parse and verify a frame; raise WireError (only) if it is not a valid one.

    See the module docstring for the rules. Bytes after the IPv4 total length are
    ignored as Ethernet padding.
    """
    size = len(buf)
    if size < ETH_LEN:
        raise WireError(f"truncated Ethernet header: need {ETH_LEN} bytes, have {size}")
    (ethertype,) = _U16.unpack_from(buf, OFF_ETHERTYPE)
    if ethertype != ETHERTYPE_IPV4:
        raise WireError(f"not IPv4: EtherType 0x{ethertype:04x}, expected 0x0800 (VLAN tags are not supported)")
    if size < UDP_OFF:
        raise WireError(f"truncated IPv4 header: need {UDP_OFF} bytes, have {size}")
    ver_ihl, tos, total_len, _, frag, ttl, proto, _, src_ip, dst_ip = _IP_STRUCT.unpack_from(buf, IP_OFF)
    if ver_ihl >> 4 != 4:
        raise WireError(f"not IPv4: IP version {ver_ihl >> 4}")
    if ver_ihl & 0x0F != 5:
        raise WireError(f"IPv4 header length (IHL) {ver_ihl & 0x0F}: only 5 (20 bytes, no options) is supported")
    if internet_checksum(buf[IP_OFF:UDP_OFF]) != 0:
        (got,) = _U16.unpack_from(buf, OFF_IP_CHECKSUM)
        raise WireError(f"bad IPv4 header checksum 0x{got:04x}")
    if frag & (IP_FLAG_MF | IP_FRAG_OFFSET_MASK):
        raise WireError("IPv4 fragment (MF set or fragment offset non-zero): fragments are not supported")
    if proto != IPPROTO_UDP:
        raise WireError(f"not UDP: IP protocol {proto}, expected {IPPROTO_UDP}")
    if total_len < IPV4_LEN + UDP_LEN:
        raise WireError(
            f"IP total length {total_len} is less than the {IPV4_LEN + UDP_LEN} bytes of the IPv4 and UDP headers"
        )
    if ETH_LEN + total_len > size:
        raise WireError(
            f"truncated: IP total length {total_len} exceeds the {size - ETH_LEN} bytes after the Ethernet header"
        )
    sport, dport, udp_len, udp_sum = _UDP_STRUCT.unpack_from(buf, UDP_OFF)
    if udp_len != total_len - IPV4_LEN:
        raise WireError(
            f"UDP length {udp_len} inconsistent with IP total length {total_len} (expected {total_len - IPV4_LEN})"
        )
    end = ETH_LEN + total_len
    if udp_sum != 0 and _fold(
        _words(src_ip) + _words(dst_ip) + IPPROTO_UDP + udp_len + _words(buf[UDP_OFF:end])
    ) != 0xFFFF:
        raise WireError(f"bad UDP checksum 0x{udp_sum:04x}")
    if udp_len < UDP_LEN + HEADER_LEN:
        raise WireError(f"truncated DLCP header: need {HEADER_LEN} bytes, UDP carries {udp_len - UDP_LEN}")
    header = DlcpHeader.unpack(buf, DLCP_OFF)
    carried = udp_len - UDP_LEN - HEADER_LEN
    if header.flags & Flags.TRIMMED:
        if carried:
            raise WireError(f"TRIMMED packet must carry no payload, but {carried} bytes follow the DLCP header")
        if header.payload_len > MAX_PAYLOAD:
            raise WireError(f"TRIMMED packet's payload length {header.payload_len} exceeds the maximum {MAX_PAYLOAD}")
    elif header.payload_len != carried:
        raise WireError(
            f"DLCP payload length {header.payload_len} inconsistent with UDP length {udp_len} "
            f"({carried} payload bytes after the header)"
        )
    return Frame(
        bytes(buf[OFF_ETH_SRC:OFF_ETHERTYPE]), bytes(buf[OFF_ETH_DST:OFF_ETH_SRC]),
        socket.inet_ntoa(src_ip), socket.inet_ntoa(dst_ip),
        sport, dport, ttl, _ECNS[tos & 3], header, bytes(buf[PAYLOAD_OFF:end]),
    )
