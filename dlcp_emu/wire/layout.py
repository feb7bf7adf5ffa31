"""The layout: constants, byte offsets, structs and the enums of the DLCP header (the
whole table is in the package docstring)."""
from __future__ import annotations

import enum
import struct
from typing import NamedTuple

from switch_models.traffic import GRADIENT as TCLASS_GRADIENT, NONE as TCLASS_NONE, TOP_TRAFFIC_CLASS, TRAFFIC_CLASSES

# --- Constants ------------------------------------------------------------------

MAGIC = 0xD1C9
# 2: byte 7 of the header, reserved before, carries the traffic class.
VERSION = 2
DLCP_UDP_PORT = 9796
# Background traffic over kernel TCP connects to this port (emu/background_tcp.py); the
# simulator and the core stand in for those connections with its 5-tuple.
BACKGROUND_TCP_PORT = 5001

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
# tensor_id: the layer (a fused bucket of layers) in the high 16 bits; below it the phase bit
# (0: reduce-scatter or a parameter-server push, 1: all-gather or a pull) and the step.
TENSOR_LAYER_SHIFT = 16
TENSOR_PHASE_SHIFT = 15
TENSOR_STEP_MASK = (1 << TENSOR_PHASE_SHIFT) - 1
TENSOR_PHASES = {0: "reduce-scatter/push", 1: "all-gather/pull"}


def tensor_id(layer, phase, step):
    return layer << TENSOR_LAYER_SHIFT | phase << TENSOR_PHASE_SHIFT | step


def split_tensor_id(tid):
    """(layer, phase, step) of a tensor id."""
    return tid >> TENSOR_LAYER_SHIFT, tid >> TENSOR_PHASE_SHIFT & 1, tid & TENSOR_STEP_MASK
ETH_MIN = 60   # the shortest Ethernet frame without FCS: shorter ones are padded on a wire

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
HDR_TCLASS = 7
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
OFF_TCLASS = DLCP_OFF + HDR_TCLASS
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



def fields_at(*fields):
    """One big-endian struct that reads the given (frame offset, struct code) fields in a
    single unpack, skipping the bytes between them: how a data path reads just what it needs
    at the offsets defined here, without writing the layout again."""
    fmt, at = "!", 0
    for off, code in sorted(fields):
        if off < at:
            raise ValueError(f"field at {off} overlaps the one before it")
        fmt += (f"{off - at}x" if off > at else "") + code
        at = off + struct.calcsize("!" + code)
    return struct.Struct(fmt)


class HeaderField(NamedTuple):
    """One field of the DLCP header, as every reader of it names it: `DlcpHeader`, the scapy
    layer and the Wireshark dissector (`dlcp.<name>`, generated from this table)."""
    name: str
    offset: int     # inside the header
    code: str       # struct code (big-endian)
    label: str      # what a reader of a capture sees


HEADER_FIELDS = (
    HeaderField("magic", HDR_MAGIC, "H", "Magic"),
    HeaderField("version", HDR_VERSION, "B", "Version"),
    HeaderField("type", HDR_TYPE, "B", "Type"),
    HeaderField("flags", HDR_FLAGS, "B", "Flags"),
    HeaderField("priority", HDR_PRIORITY, "B", "Priority"),
    HeaderField("mag_class", HDR_MAG_CLASS, "B", "Magnitude class"),
    HeaderField("tclass", HDR_TCLASS, "B", "Traffic class"),
    HeaderField("job", HDR_JOB, "H", "Job"),
    HeaderField("src_rank", HDR_SRC_RANK, "H", "Source rank"),
    HeaderField("dst_rank", HDR_DST_RANK, "H", "Destination rank"),
    HeaderField("payload_len", HDR_PAYLOAD_LEN, "H", "Payload length"),
    HeaderField("iteration", HDR_ITERATION, "I", "Iteration"),
    HeaderField("tensor_id", HDR_TENSOR_ID, "I", "Tensor id"),
    HeaderField("chunk_index", HDR_CHUNK_INDEX, "I", "Chunk index"),
    HeaderField("chunk_count", HDR_CHUNK_COUNT, "I", "Chunk count"),
    HeaderField("offset", HDR_OFFSET, "I", "Offset"),
    HeaderField("reserved2", HDR_RESERVED2, "I", "Reserved 2"),
    HeaderField("send_ts_ns", HDR_SEND_TS_NS, "Q", "Send time (ns)"),
)
HEADER_FMT = ">" + "".join(f.code for f in HEADER_FIELDS)
HEADER_STRUCT = struct.Struct(HEADER_FMT)
# Ethernet + IPv4 + UDP in one go: dst, src, ethertype, ver_ihl, tos, total_len,
# id, frag, ttl, proto, ip_checksum, src_ip, dst_ip, sport, dport, udp_len, udp_checksum.
L234_STRUCT = struct.Struct("!6s6sHBBHHHBBH4s4sHHHH")
_IP_STRUCT = struct.Struct("!BBHHHBBH4s4s")
_UDP_STRUCT = struct.Struct("!HHHH")
assert HEADER_STRUCT.size == HEADER_LEN
assert HEADER_FMT == ">HBBBBBBHHHHIIIIIIQ"   # a change here is a new version of the layout
assert all(f.offset == struct.calcsize(">" + "".join(g.code for g in HEADER_FIELDS[:i]))
           for i, f in enumerate(HEADER_FIELDS)), "HEADER_FIELDS offsets do not follow their sizes"
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
