"""Payload layouts of the control packets (the DLCP header says which; all big-endian).

ACK and BITMAP payloads start with the feedback prefix (16 bytes)::

    off  fmt  field
    0    Q    echo_ts    send_ts_ns of the packet answered: an exact RTT sample, and
                         tells which transmission of a chunk it was
    8    I    cum        every chunk below cum has arrived
    12   B    fb_flags   FB_CE | FB_COMPLETE | FB_NACK | FB_NEED_PROBE | FB_PULL
    13   B    n_extra    ACK only: number of extra chunk indices that follow
    14   H    pull       the latest pull number released to the sender (`pulls.py`;
                         0 unless the receiver paces pulls)

ACK (one per data packet; header chunk_index = the chunk that arrived): prefix, then
n_extra (<= 3) u32 chunk indices that arrived just before, so a lost ACK is repaired by
the next ones.

BITMAP (answer to a PROBE, or a NACK for a trimmed packet): prefix, then base u32 and
nbits u32, then ceil(nbits / 8) bytes: bit i (least significant bit first) says whether
chunk base + i has arrived. A large tensor's bitmap is split over several packets, each
self-describing. A NACK is a one-bit BITMAP with FB_NACK: the transmission whose send
time is echo_ts was trimmed.

PULL (a receiver that paces pulls, `pulls.py`): an ACK with FB_PULL, no extra chunks, echo_ts
and cum 0: it only carries a pull number.

PROBE (dlcp, sender -> receiver, after the last chunk): total u32, chunk_size u32,
bound_bytes u32, n_droppable u32, seg u16, nseg u16, then u32 entries
(mag_class << 29 | chunk) listing the droppable chunks, split over nseg packets. The
receiver then knows which missing chunks it may zero-fill, their magnitude classes, and
how many bytes it may lose.
"""

from __future__ import annotations

import struct

import numpy as np

FB_CE = 0x01          # the data packet answered arrived with ECN CE
FB_COMPLETE = 0x02    # the receiver has completed (delivered) the tensor
FB_NACK = 0x04        # the transmission answered was trimmed
FB_NEED_PROBE = 0x08  # the receiver lacks (part of) the probe's droppable list
FB_PULL = 0x10        # a PULL: nothing but a pull number

FEEDBACK = struct.Struct(">QIBB2x")
ACK_EXTRA = 3
ACK_STRUCTS = [struct.Struct(">QIBBH" + "I" * k) for k in range(ACK_EXTRA + 1)]
SEGMENT = struct.Struct(">II")
BITMAP_HEAD = struct.Struct(">QIBB2xII")
NACK_HEAD = struct.Struct(">QIBBHII")
PROBE_HEAD = struct.Struct(">IIIIHH")
PROBE_ENTRY_SHIFT = 29
PROBE_CHUNK_MASK = (1 << PROBE_ENTRY_SHIFT) - 1


def encode_ack(echo_ts: int, cum: int, fb_flags: int, extra, pull: int = 0) -> bytes:
    return ACK_STRUCTS[len(extra)].pack(echo_ts, cum, fb_flags, len(extra), pull, *extra)


def decode_ack(payload) -> tuple[int, int, int, tuple[int, ...]]:
    echo, cum, fl, n = FEEDBACK.unpack_from(payload)
    n = min(n, ACK_EXTRA, (len(payload) - FEEDBACK.size) // 4)
    extra = struct.unpack_from(f">{n}I", payload, FEEDBACK.size) if n > 0 else ()
    return echo, cum, fl, extra


def bitmap_bits_per_packet(payload_size: int) -> int:
    return (payload_size - BITMAP_HEAD.size) * 8


def encode_bitmaps(got: bytearray, cum: int, echo_ts: int, fb_flags: int,
                   payload_size: int) -> list[tuple[int, bytes]]:
    """(base, payload) per packet covering chunks [cum, len(got)); at least one packet."""
    n = len(got)
    per = bitmap_bits_per_packet(payload_size)
    out = []
    arr = np.frombuffer(got, dtype=np.uint8)
    base = cum
    while True:
        nbits = min(per, n - base)
        bits = np.packbits(arr[base:base + nbits], bitorder="little").tobytes() if nbits > 0 else b""
        out.append((base, BITMAP_HEAD.pack(echo_ts, cum, fb_flags, 0, base, nbits) + bits))
        base += nbits
        if base >= n:
            return out


def decode_bitmap(payload) -> tuple[int, int, int, int, np.ndarray]:
    """echo_ts, cum, fb_flags, base, and a 0/1 uint8 array for chunks base.."""
    echo, cum, fl, _, base, nbits = BITMAP_HEAD.unpack_from(payload)
    raw = np.frombuffer(payload, dtype=np.uint8, offset=BITMAP_HEAD.size)
    nbits = min(nbits, raw.size * 8)
    bits = np.unpackbits(raw, bitorder="little", count=nbits)
    return echo, cum, fl, base, bits


def encode_nack(echo_ts: int, cum: int, chunk: int, fb_flags: int = 0, pull: int = 0) -> bytes:
    return NACK_HEAD.pack(echo_ts, cum, fb_flags | FB_NACK, 0, pull, chunk, 1) + b"\x00"


def encode_probes(total: int, chunk_size: int, bound_bytes: int, droppable: bytes,
                  mag_class: bytes, payload_size: int) -> list[bytes]:
    """The payloads of one probe round (one or more packets)."""
    idx = np.flatnonzero(np.frombuffer(droppable, dtype=np.uint8))
    entries = (np.frombuffer(mag_class, dtype=np.uint8)[idx].astype(np.uint32) << PROBE_ENTRY_SHIFT) | idx.astype(np.uint32)
    per = (payload_size - PROBE_HEAD.size) // 4
    nseg = max(1, -(-len(entries) // per))
    if nseg > 0xFFFF:
        raise ValueError(f"{len(entries)} droppable chunks need more than 65535 probe packets")
    return [PROBE_HEAD.pack(total, chunk_size, bound_bytes, len(entries), seg, nseg)
            + entries[seg * per:(seg + 1) * per].astype(">u4").tobytes()
            for seg in range(nseg)]


def decode_probe(payload) -> tuple[int, int, int, int, int, int, np.ndarray]:
    """total, chunk_size, bound_bytes, n_droppable, seg, nseg, entries (uint32)."""
    head = PROBE_HEAD.unpack_from(payload)
    entries = np.frombuffer(payload, dtype=">u4", offset=PROBE_HEAD.size,
                            count=(len(payload) - PROBE_HEAD.size) // 4).astype(np.uint32)
    return (*head, entries)
