"""Which of the transports' packets are ECN-capable: one rule, read by both backends (the UDP
driver sets ECT(0) on these packets, the simulator makes them `ect` Packets), so an `ecn`
queue manager marks the same packets emulated and simulated.

What a sender sends (data, probes) is ECT(0): its congestion window answers a CE echo. A
receiver's feedback (ACK, BITMAP) is not, as pure acknowledgements are not in TCP (RFC 3168
6.1.4): nobody would slow down for a mark on them.
"""
from dlcp_emu.wire import PacketType

ECN_CAPABLE_TYPES = frozenset({PacketType.DATA, PacketType.PROBE})


def ecn_capable(h) -> bool:
    """Whether the packet with header `h` leaves ECT(0)."""
    return h.type in ECN_CAPABLE_TYPES
