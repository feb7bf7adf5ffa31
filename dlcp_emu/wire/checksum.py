"""Internet checksums (RFC 1071) and their incremental update (RFC 1624)."""
from __future__ import annotations

from dlcp_emu.wire.layout import IPPROTO_UDP

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
