"""A host's NIC and the link it drives: the frames a host sends leave one after another at
the link rate and arrive whole at the far end the link's delay later.

The one NIC model of both backends. The simulator sends every host's packets through one;
the emulator's switch port facing a paced host replays the host's link with one (the host's
token bucket hands a frame over when its first bit would leave a real NIC, so the frame is
whole at the switch one serialisation plus the delay later).

Two queues, as a pipeline's `host_queue` says (`switch_models.pipeline`):
- `fifo` (`transmit`): one queue; a frame's departure follows from the frames before it, so
  it is known the moment the frame is handed over.
- `priority` (`enqueue`, then `start` whenever the link is free): control packets and bare
  headers (`packet.is_header`: ACKs, NACKs, pulls, probes, bitmaps) leave ahead of every
  data packet waiting, strict priority without preemption, as NDP's hosts send them (htsim's
  host queue). A frame's departure is known only when it starts, so the driver wakes the NIC
  at `free_at` while `waiting`. `enqueue_item`/`start_item` take any item with its size and
  class: the emulated switch replays a priority host's link with them on frames (control as
  `dlcp_emu.emu.host_egress.is_control` says).
"""
from collections import deque

from switch_models.packet import is_header
from switch_models.port import ETHERNET_OVERHEAD, check_link

# A host's queue: deep enough for every window a transport keeps in flight; the emulated
# host's pacing queue holds the same.
HOST_BUFFER_BYTES = 64 * 1024 * 1024
ETH_MIN = 60   # the shortest Ethernet frame without FCS; shorter ones are padded on the wire
BUFFER_FULL = "buffer_full"
HOST_QUEUES = ("fifo", "priority")


class HostNic:
    __slots__ = ("rate_bps", "delay_ns", "buffer_bytes", "ns_per_byte", "overhead", "free_at",
                 "rx_packets", "tx_packets", "tx_bytes", "drops", "drop_bytes",
                 "control_first", "control", "data", "queued_bytes")

    def __init__(self, rate_bps, delay_ns=0, buffer_bytes=HOST_BUFFER_BYTES,
                 overhead_bytes=ETHERNET_OVERHEAD, control_first=False):
        check_link("nic", rate_bps, delay_ns)
        self.rate_bps = rate_bps
        self.delay_ns = delay_ns
        self.buffer_bytes = buffer_bytes
        self.ns_per_byte = 8e9 / rate_bps
        self.overhead = overhead_bytes
        self.free_at = 0          # when the link has finished the last frame it started
        self.rx_packets = self.tx_packets = self.tx_bytes = 0
        self.drops = {}
        self.drop_bytes = 0
        self.control_first = control_first   # the `priority` host queue
        self.control = deque()    # priority: (item, size) of control packets and headers waiting
        self.data = deque()       # priority: (item, size) of the rest waiting
        self.queued_bytes = 0     # priority: wire bytes waiting (frame and overhead each)

    def transmit(self, size, now):
        """A frame of `size` bytes handed over at `now`: the time it has arrived whole at the
        far end, or None when the queue ahead of it (what the link has yet to send) leaves no
        room for it in `buffer_bytes` (counted as a drop)."""
        self.rx_packets += 1
        n = size if size > ETH_MIN else ETH_MIN
        start = self.free_at
        if start > now:
            if (start - now) / self.ns_per_byte + n > self.buffer_bytes:
                self._drop(size)
                return None
        else:
            start = now
        self.free_at = end = start + int((n + self.overhead) * self.ns_per_byte + 0.5)
        self.tx_packets += 1
        self.tx_bytes += size
        return end + self.delay_ns

    def enqueue(self, pkt, now):
        """The `priority` queue takes `pkt` at `now`, a control packet if a bare header
        (`enqueue_item`)."""
        return self.enqueue_item(pkt, pkt.size, is_header(pkt), now)

    def start(self, now):
        """The packet that starts on the link at `now`, control first (its `depart` set: when
        it is whole at the far end); None while the link is busy or nothing waits."""
        got = self.start_item(now)
        if got is None:
            return None
        pkt, depart = got
        pkt.depart = depart
        return pkt

    def enqueue_item(self, item, size, is_control, now):
        """The `priority` queue takes `item`, a frame of `size` bytes, at `now`, behind the
        other control items if `is_control`, else behind the data. Any item: the simulator's
        packets, or the frames the emulated switch replays on a paced host's link. False (a
        drop) when what the link has yet to send, the frame it is sending and those waiting,
        leaves no room for it in `buffer_bytes`, as `transmit` counts it."""
        self.rx_packets += 1
        n = size if size > ETH_MIN else ETH_MIN
        ahead = self.queued_bytes
        if self.free_at > now:
            ahead = ahead + (self.free_at - now) / self.ns_per_byte
        if ahead + n > self.buffer_bytes:
            self._drop(size)
            return False
        (self.control if is_control else self.data).append((item, size))
        self.queued_bytes += n + self.overhead
        return True

    def start_item(self, now):
        """(item, when it is whole at the far end) for the item that starts on the link at
        `now`, control first; None while the link is busy or nothing waits."""
        if self.free_at > now:
            return None
        q = self.control or self.data
        if not q:
            return None
        item, size = q.popleft()
        n = size if size > ETH_MIN else ETH_MIN
        self.queued_bytes -= n + self.overhead
        self.free_at = end = now + int((n + self.overhead) * self.ns_per_byte + 0.5)
        self.tx_packets += 1
        self.tx_bytes += size
        return item, end + self.delay_ns

    def waiting(self):
        """Packets in the `priority` queue not yet started."""
        return len(self.control) + len(self.data)

    def waiting_items(self):
        """The items in the `priority` queue not yet started, control first."""
        for q in (self.control, self.data):
            for item, _ in q:
                yield item

    def _drop(self, size):
        self.drops[BUFFER_FULL] = self.drops.get(BUFFER_FULL, 0) + 1
        self.drop_bytes += size

    def conservation(self):
        """(packets taken, packets accounted): sent, dropped or still waiting."""
        return self.rx_packets, self.tx_packets + sum(self.drops.values()) + self.waiting()
