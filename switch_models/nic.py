"""A host's NIC and the link it drives: the frames a host sends leave one after another at
the link rate and arrive whole at the far end the link's delay later.

The one NIC model of both backends. The simulator sends every host's packets through one;
the emulator's switch port facing a paced host replays the host's link with one (the host's
token bucket hands a frame over when its first bit would leave a real NIC, so the frame is
whole at the switch one serialisation plus the delay later).
"""
from switch_models.port import ETHERNET_OVERHEAD, check_link

# A host's queue: deep enough for every window a transport keeps in flight; the emulated
# host's pacing queue holds the same.
HOST_BUFFER_BYTES = 64 * 1024 * 1024
ETH_MIN = 60   # the shortest Ethernet frame without FCS; shorter ones are padded on the wire
BUFFER_FULL = "buffer_full"


class HostNic:
    __slots__ = ("rate_bps", "delay_ns", "buffer_bytes", "ns_per_byte", "overhead", "free_at",
                 "rx_packets", "tx_packets", "tx_bytes", "drops", "drop_bytes")

    def __init__(self, rate_bps, delay_ns=0, buffer_bytes=HOST_BUFFER_BYTES,
                 overhead_bytes=ETHERNET_OVERHEAD):
        check_link("nic", rate_bps, delay_ns)
        self.rate_bps = rate_bps
        self.delay_ns = delay_ns
        self.buffer_bytes = buffer_bytes
        self.ns_per_byte = 8e9 / rate_bps
        self.overhead = overhead_bytes
        self.free_at = 0          # when the link has finished the last frame handed over
        self.rx_packets = self.tx_packets = self.tx_bytes = 0
        self.drops = {}
        self.drop_bytes = 0

    def transmit(self, size, now):
        """A frame of `size` bytes handed over at `now`: the time it has arrived whole at the
        far end, or None when the queue ahead of it (what the link has yet to send) leaves no
        room for it in `buffer_bytes` (counted as a drop)."""
        self.rx_packets += 1
        n = size if size > ETH_MIN else ETH_MIN
        start = self.free_at
        if start > now:
            if (start - now) / self.ns_per_byte + n > self.buffer_bytes:
                self.drops[BUFFER_FULL] = self.drops.get(BUFFER_FULL, 0) + 1
                self.drop_bytes += size
                return None
        else:
            start = now
        self.free_at = end = start + int((n + self.overhead) * self.ns_per_byte + 0.5)
        self.tx_packets += 1
        self.tx_bytes += size
        return end + self.delay_ns

    def conservation(self):
        """(packets taken, packets accounted): a NIC sends or drops each frame at once."""
        return self.rx_packets, self.tx_packets + sum(self.drops.values())
