"""The DLCP wire format: the one place that defines the bytes on the wire.

A DLCP packet is Ethernet / IPv4 (no options) / UDP / DLCP header / payload::

    frame off  size  layer     notes
    0          14    Ethernet  dst MAC, src MAC, EtherType 0x0800
    14         20    IPv4      IHL 5, DSCP mirrors priority, ECN, DF set, id 0
    34         8     UDP       ports default to DLCP_UDP_PORT (9796)
    42         48    DLCP      header below (DLCP_OFF)
    90         n     payload   gradient bytes (FRAME_OVERHEAD = 90)

DLCP header, big-endian, fixed HEADER_LEN = 48 bytes (offsets relative to the
header; add DLCP_OFF for the frame offset, which the OFF_* constants already do)::

    off  fmt  field        meaning
    0    H    magic        0xD1C9
    2    B    version      1
    3    B    type         PacketType: DATA=0, PROBE=1, BITMAP=2, ACK=3
    4    B    flags        Flags: DROPPABLE=0x01, RETRANSMISSION=0x02,
                           TRIMMED=0x04, LAST_CHUNK=0x08 (other bits must be 0)
    5    B    priority     0..7, 0 = highest; IP DSCP = (7 - priority) << 3
    6    B    mag_class    0..7, 7 = largest gradient magnitude (most important)
    7    B    reserved     0
    8    H    job          job id
    10   H    src_rank     source rank
    12   H    dst_rank     destination rank
    14   H    payload_len  gradient bytes carried; when TRIMMED, the original length
    16   I    iteration    training iteration
    20   I    tensor_id    layer id, 0 = first layer of the model
    24   I    chunk_index  index of this chunk within the tensor
    28   I    chunk_count  number of chunks of the tensor
    32   I    offset       byte offset of this payload inside the tensor
    36   I    reserved2    0
    40   Q    send_ts_ns   send timestamp, nanoseconds (the sender's clock)

Decoding rules (``decode_frame``), all violations raise ``WireError``:

* Only untagged Ethernet II with IPv4 without options (IHL 5) is accepted: the
  switch data path reads fields at the fixed OFF_* offsets, so a frame it could not
  parse must not decode either. VLAN tags, IPv6, IP options and IP fragments are
  rejected with a message saying so.
* The IPv4 total length is authoritative: bytes after it are Ethernet padding (or a
  captured FCS) and ignored; a total length beyond the buffer is truncation.
* UDP length must equal IP total length - 20; UDP checksum 0 means "none".
* The DLCP packet is recognised by magic and version, not by UDP port, so runs may
  use other ports (the scapy layer dissects by port, as scapy does).
* Reserved fields, unknown flag bits and priority / mag_class above 7 are rejected:
  a decoder never silently misreads a frame from another layout (change the layout
  by bumping the version), and the switch may index queues by these values.
* The DSCP is not checked against priority: networks may re-mark DSCP, the DLCP
  header is authoritative. Frame therefore has no dscp field; encoding always
  derives it from the priority.

Semantic relations (chunk_index < chunk_count, offset + payload_len within the
tensor) belong to the transports, not to the wire format, and are not checked.
"""

from __future__ import annotations

import enum
import operator
import socket
import struct
from dataclasses import dataclass, field

# --- Constants ------------------------------------------------------------------

MAGIC = 0xD1C9
VERSION = 1
DLCP_UDP_PORT = 9796

ETH_LEN = 14
IPV4_LEN = 20
UDP_LEN = 8
HEADER_LEN = 48

IP_OFF = ETH_LEN  # 14
UDP_OFF = IP_OFF + IPV4_LEN  # 34
DLCP_OFF = UDP_OFF + UDP_LEN  # 42
PAYLOAD_OFF = DLCP_OFF + HEADER_LEN  # 90
FRAME_OVERHEAD = PAYLOAD_OFF  # 90: Eth + IPv4 + UDP + DLCP

# The IPv4 total length is 16 bits; that bounds what one packet can carry.
MAX_PAYLOAD = 0xFFFF - IPV4_LEN - UDP_LEN - HEADER_LEN  # 65459

ETHERTYPE_IPV4 = 0x0800
IPPROTO_UDP = 17
IP_FLAG_DF = 0x4000
IP_FLAG_MF = 0x2000
IP_FRAG_OFFSET_MASK = 0x1FFF

# Ethernet, offsets inside the frame.
OFF_ETH_DST = 0
OFF_ETH_SRC = 6
OFF_ETHERTYPE = 12
# IPv4, offsets inside the frame.
OFF_IP_VER_IHL = IP_OFF + 0
OFF_IP_TOS = IP_OFF + 1  # DSCP << 2 | ECN
OFF_IP_TOTAL_LEN = IP_OFF + 2
OFF_IP_ID = IP_OFF + 4
OFF_IP_FRAG = IP_OFF + 6
OFF_IP_TTL = IP_OFF + 8
OFF_IP_PROTO = IP_OFF + 9
OFF_IP_CHECKSUM = IP_OFF + 10
OFF_IP_SRC = IP_OFF + 12
OFF_IP_DST = IP_OFF + 16
# UDP, offsets inside the frame.
OFF_UDP_SPORT = UDP_OFF + 0
OFF_UDP_DPORT = UDP_OFF + 2
OFF_UDP_LEN = UDP_OFF + 4
OFF_UDP_CHECKSUM = UDP_OFF + 6

# DLCP, offsets inside the header.
HDR_MAGIC = 0
HDR_VERSION = 2
HDR_TYPE = 3
HDR_FLAGS = 4
HDR_PRIORITY = 5
HDR_MAG_CLASS = 6
HDR_RESERVED = 7
HDR_JOB = 8
HDR_SRC_RANK = 10
HDR_DST_RANK = 12
HDR_PAYLOAD_LEN = 14
HDR_ITERATION = 16
HDR_TENSOR_ID = 20
HDR_CHUNK_INDEX = 24
HDR_CHUNK_COUNT = 28
HDR_OFFSET = 32
HDR_RESERVED2 = 36
HDR_SEND_TS_NS = 40
# DLCP, offsets inside the frame (what the switch data path reads with struct).
OFF_MAGIC = DLCP_OFF + HDR_MAGIC
OFF_VERSION = DLCP_OFF + HDR_VERSION
OFF_TYPE = DLCP_OFF + HDR_TYPE
OFF_FLAGS = DLCP_OFF + HDR_FLAGS
OFF_PRIORITY = DLCP_OFF + HDR_PRIORITY
OFF_MAG_CLASS = DLCP_OFF + HDR_MAG_CLASS
OFF_RESERVED = DLCP_OFF + HDR_RESERVED
OFF_JOB = DLCP_OFF + HDR_JOB
OFF_SRC_RANK = DLCP_OFF + HDR_SRC_RANK
OFF_DST_RANK = DLCP_OFF + HDR_DST_RANK
OFF_PAYLOAD_LEN = DLCP_OFF + HDR_PAYLOAD_LEN
OFF_ITERATION = DLCP_OFF + HDR_ITERATION
OFF_TENSOR_ID = DLCP_OFF + HDR_TENSOR_ID
OFF_CHUNK_INDEX = DLCP_OFF + HDR_CHUNK_INDEX
OFF_CHUNK_COUNT = DLCP_OFF + HDR_CHUNK_COUNT
OFF_OFFSET = DLCP_OFF + HDR_OFFSET
OFF_RESERVED2 = DLCP_OFF + HDR_RESERVED2
OFF_SEND_TS_NS = DLCP_OFF + HDR_SEND_TS_NS

HEADER_FMT = ">HBBBBBBHHHHIIIIIIQ"
HEADER_STRUCT = struct.Struct(HEADER_FMT)
# Ethernet + IPv4 + UDP in one go: dst, src, ethertype, ver_ihl, tos, total_len,
# id, frag, ttl, proto, ip_checksum, src_ip, dst_ip, sport, dport, udp_len, udp_checksum.
L234_STRUCT = struct.Struct("!6s6sHBBHHHBBH4s4sHHHH")
_IP_STRUCT = struct.Struct("!BBHHHBBH4s4s")
_UDP_STRUCT = struct.Struct("!HHHH")
assert HEADER_STRUCT.size == HEADER_LEN
assert L234_STRUCT.size == DLCP_OFF

_U16 = struct.Struct("!H")


class WireError(ValueError):
    """A byte string is not a valid DLCP frame; the message says what is wrong."""


class PacketType(enum.IntEnum):
    DATA = 0
    PROBE = 1
    BITMAP = 2
    ACK = 3


class Flags(enum.IntFlag):
    DROPPABLE = 0x01
    RETRANSMISSION = 0x02
    TRIMMED = 0x04
    LAST_CHUNK = 0x08


class Ecn(enum.IntEnum):
    """The two ECN bits of the IPv4 TOS byte (RFC 3168)."""

    NOT_ECT = 0
    ECT1 = 1
    ECT0 = 2
    CE = 3


_FLAG_MASK = 0x0F
_FLAG_NAMES = ", ".join(f"{f.name}=0x{f.value:02x}" for f in Flags)
_TYPE_NAMES = ", ".join(f"{t.name}={t.value}" for t in PacketType)
_TYPES = {t.value: t for t in PacketType}
# Decoding is per packet; cache the flag objects rather than build them each time.
_FLAGS = {v: Flags(v) for v in range(_FLAG_MASK + 1)}
_ECNS = tuple(Ecn)


def dscp_for_priority(priority: int) -> int:
    """DSCP mirroring a DLCP priority: priority 0 (highest) is CS7, 7 is CS0."""
    if not 0 <= priority <= 7:
        raise ValueError(f"priority must be in 0..7, got {priority!r}")
    return (7 - priority) << 3


def priority_for_dscp(dscp: int) -> int:
    """Inverse of dscp_for_priority; only the class selector bits count."""
    if not 0 <= dscp <= 63:
        raise ValueError(f"dscp must be in 0..63, got {dscp!r}")
    return 7 - (dscp >> 3)


# --- Checksums (RFC 1071, RFC 1624) ----------------------------------------------
#
# The ones' complement sum of 16-bit words is congruent to the big-endian integer
# of the bytes modulo 0xFFFF (because 2**16 == 1 mod 0xFFFF), and int.from_bytes
# plus one modulo runs in C: far faster per packet than a Python loop over words.


def _words(data) -> int:
    """The bytes as one integer, zero-padded to an even length (RFC 1071)."""
    n = int.from_bytes(data, "big")
    return n << 8 if len(data) & 1 else n


def _fold(total: int) -> int:
    """Ones' complement sum, 0..0xFFFF, of a non-negative word total.

    End-around carry never yields +0 from a non-zero total, hence 0xFFFF there.
    """
    if total == 0:
        return 0
    return total % 0xFFFF or 0xFFFF


def internet_checksum(data) -> int:
    """RFC 1071 checksum of data (odd lengths zero-padded).

    Over data that already contains a correct checksum the result is 0.
    """
    return 0xFFFF - _fold(_words(data))


def _udp_checksum(src_ip: bytes, dst_ip: bytes, segment) -> int:
    """UDP checksum over the IPv4 pseudo-header and segment; 0 is sent as 0xFFFF."""
    total = _words(src_ip) + _words(dst_ip) + IPPROTO_UDP + len(segment) + _words(segment)
    return (0xFFFF - _fold(total)) or 0xFFFF


def _update(checksum: int, old_sum: int, new_sum: int) -> int:
    """RFC 1624 eqn. 3, HC' = ~(~HC + ~m + m'), for words summing to old_sum/new_sum.

    Incremental rather than recomputed so that a switch never launders a frame that
    arrived corrupted: a bad checksum stays bad.
    """
    return 0xFFFF - _fold((0xFFFF - checksum) + (0xFFFF - _fold(old_sum)) + new_sum)


# --- Header ----------------------------------------------------------------------

_U16_MAX = 0xFFFF
_U32_MAX = 0xFFFFFFFF
_RANGES = (
    ("priority", 7),
    ("mag_class", 7),
    ("job", _U16_MAX),
    ("src_rank", _U16_MAX),
    ("dst_rank", _U16_MAX),
    ("payload_len", _U16_MAX),
    ("iteration", _U32_MAX),
    ("tensor_id", _U32_MAX),
    ("chunk_index", _U32_MAX),
    ("chunk_count", _U32_MAX),
    ("offset", _U32_MAX),
    ("send_ts_ns", 2**64 - 1),
)


def _check_int(name: str, value, hi: int) -> int:
    try:
        v = operator.index(value)  # accepts numpy integers, rejects floats
    except TypeError:
        raise ValueError(f"{name} must be an integer in 0..{hi}, got {value!r}") from None
    if not 0 <= v <= hi:
        raise ValueError(f"{name} must be in 0..{hi}, got {v}")
    return v


@dataclass(slots=True)
class DlcpHeader:
    """The 48-byte DLCP header. Magic, version and reserved fields are implicit."""

    type: PacketType = PacketType.DATA
    flags: Flags = Flags(0)
    priority: int = 7  # lowest priority, DSCP 0: the default best-effort class
    mag_class: int = 0
    job: int = 0
    src_rank: int = 0
    dst_rank: int = 0
    payload_len: int = 0
    iteration: int = 0
    tensor_id: int = 0
    chunk_index: int = 0
    chunk_count: int = 1
    offset: int = 0
    send_ts_ns: int = 0

    def validate(self) -> None:
        """Raise ValueError naming the first field out of its allowed range."""
        try:
            t = operator.index(self.type)
        except TypeError:
            t = None
        if t not in _TYPES:
            raise ValueError(f"type must be one of {_TYPE_NAMES}, got {self.type!r}")
        f = _check_int("flags", self.flags, 0xFF)
        if f & ~_FLAG_MASK:
            raise ValueError(f"flags has unknown bits 0x{f & ~_FLAG_MASK:02x}; allowed: {_FLAG_NAMES}")
        for name, hi in _RANGES:
            _check_int(name, getattr(self, name), hi)

    def pack(self) -> bytes:
        self.validate()
        return HEADER_STRUCT.pack(
            MAGIC, VERSION, self.type, self.flags, self.priority, self.mag_class, 0,
            self.job, self.src_rank, self.dst_rank, self.payload_len,
            self.iteration, self.tensor_id, self.chunk_index, self.chunk_count,
            self.offset, 0, self.send_ts_ns,
        )

    @classmethod
    def unpack(cls, buf, offset: int = 0) -> DlcpHeader:
        """Parse a header at buf[offset:]; raise WireError if it is not a valid one."""
        if offset < 0 or len(buf) - offset < HEADER_LEN:
            have = max(0, len(buf) - max(offset, 0))
            raise WireError(f"truncated DLCP header: need {HEADER_LEN} bytes, have {have}")
        (magic, version, ptype, flags, prio, mag, res, job, src, dst, plen,
         it, tensor, idx, count, off, res2, ts) = HEADER_STRUCT.unpack_from(buf, offset)
        if magic != MAGIC:
            raise WireError(f"bad DLCP magic 0x{magic:04x}, expected 0x{MAGIC:04X}")
        if version != VERSION:
            raise WireError(f"unsupported DLCP version {version}, expected {VERSION}")
        if ptype not in _TYPES:
            raise WireError(f"unknown DLCP packet type {ptype}; known: {_TYPE_NAMES}")
        if flags & ~_FLAG_MASK:
            raise WireError(f"unknown DLCP flag bits 0x{flags & ~_FLAG_MASK:02x} in flags 0x{flags:02x}")
        if prio > 7:
            raise WireError(f"DLCP priority {prio} out of range 0..7")
        if mag > 7:
            raise WireError(f"DLCP magnitude class {mag} out of range 0..7")
        if res or res2:
            raise WireError(f"DLCP reserved fields must be 0, got {res} and {res2}")
        return cls(_TYPES[ptype], _FLAGS[flags], prio, mag, job, src, dst, plen,
                   it, tensor, idx, count, off, ts)


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


__all__ = [
    "DLCP_UDP_PORT", "ETH_LEN", "IPV4_LEN", "UDP_LEN", "HEADER_LEN", "DLCP_OFF", "PAYLOAD_OFF",
    "FRAME_OVERHEAD", "MAX_PAYLOAD", "MAGIC", "VERSION", "HEADER_FMT", "HEADER_STRUCT",
    "WireError", "PacketType", "Flags", "Ecn", "DlcpHeader", "Frame",
    "encode_frame", "decode_frame", "trim_frame", "mark_ce", "internet_checksum",
    "dscp_for_priority", "priority_for_dscp",
]
__all__ += [name for name in dir() if name.startswith(("OFF_", "HDR_"))]
