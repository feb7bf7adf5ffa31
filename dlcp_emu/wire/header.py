"""The DLCP header: its fields, checked, and their bytes."""
from __future__ import annotations

import operator
from dataclasses import dataclass

from dlcp_emu.wire.layout import (
    Flags, HEADER_LEN, HEADER_STRUCT, MAGIC, PacketType, TCLASS_GRADIENT, TOP_TRAFFIC_CLASS, VERSION,
    WireError, _FLAGS, _FLAG_MASK, _FLAG_NAMES, _TYPES, _TYPE_NAMES,
)

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
    ("tclass", TOP_TRAFFIC_CLASS),
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
    """The 48-byte DLCP header. Magic, version and the reserved field are implicit. `tclass`
    (last, so that positional construction by the older fields still holds) is the traffic
    class code of `switch_models.traffic`: a gradient unless the sender says otherwise."""

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
    tclass: int = TCLASS_GRADIENT

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
            MAGIC, VERSION, self.type, self.flags, self.priority, self.mag_class, self.tclass,
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
        (magic, version, ptype, flags, prio, mag, tclass, job, src, dst, plen,
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
        if tclass > TOP_TRAFFIC_CLASS:
            raise WireError(f"DLCP traffic class {tclass} out of range 0..{TOP_TRAFFIC_CLASS}")
        if res2:
            raise WireError(f"DLCP reserved field must be 0, got {res2}")
        return cls(_TYPES[ptype], _FLAGS[flags], prio, mag, job, src, dst, plen,
                   it, tensor, idx, count, off, ts, tclass)
