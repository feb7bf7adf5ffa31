"""Frames coming in: from the rings in order of the kernel's delivery time, and, on a port
whose peer is a paced host, over that host's link (`switch_models.HostNic`, the simulator's
NIC model) first.

A `priority` host queue (the pipeline's `host_queue`) is replayed as the host's NIC sends
it: the host's shaper lets a burst of frames out at once, and a control packet the host
queued just after them would, on a FIFO link, wait behind every one, where the simulator's
NIC (and the host's own qdisc, had it held them) sends it after the frame on the wire. So
frames wait here as in the NIC's two queues, and each starts when the link is free, control
first (`is_control_frame`: the host's egress filters), strict priority without preemption."""
import heapq
import itertools
from collections import deque
from operator import itemgetter

from switch_models import HostNic

from dlcp_emu.emu.host_egress import is_control
from dlcp_emu.wire.layout import (DLCP_OFF, HDR_MAGIC, HDR_PAYLOAD_LEN, HDR_TYPE, IPPROTO_UDP, MAGIC,
                                  OFF_ETHERTYPE, OFF_IP_PROTO, OFF_IP_VER_IHL)

ETH_P_IP = 0x0800


def is_control_frame(f):
    """What a `priority` host's egress sends ahead of data (`host_egress` filters): an IPv4
    UDP frame with the DLCP magic whose type is not DATA, or a DATA one with no payload."""
    if len(f) < DLCP_OFF + HDR_PAYLOAD_LEN + 2 or f[OFF_IP_VER_IHL] != 0x45 or f[OFF_IP_PROTO] != IPPROTO_UDP:
        return False
    if int.from_bytes(f[OFF_ETHERTYPE:OFF_ETHERTYPE + 2], "big") != ETH_P_IP:
        return False
    h = DLCP_OFF
    if int.from_bytes(f[h + HDR_MAGIC:h + HDR_MAGIC + 2], "big") != MAGIC:
        return False
    return is_control(f[h + HDR_TYPE], int.from_bytes(f[h + HDR_PAYLOAD_LEN:h + HDR_PAYLOAD_LEN + 2], "big"))


class PriorityLink:
    """A paced host's link under a `priority` host queue: frames handed over wait, control
    first, until the link is free; `start_by(t)` starts those whose turn comes by t."""
    __slots__ = ("nic", "control", "data")

    def __init__(self, nic):
        self.nic = nic
        self.control = deque()   # (handed ns, frame)
        self.data = deque()

    def hand(self, t, f):
        (self.control if is_control_frame(f) else self.data).append((t, f))

    def start_by(self, t):
        """[(arrival ns, frame)] of the frames that start on the link by t, in order: each at
        the later of the link's free time and its handing over, control first among those
        handed by then."""
        out = []
        nic, control, data = self.nic, self.control, self.data
        while control or data:
            first = min(q[0][0] for q in (control, data) if q)
            at = max(nic.free_at, first)
            if at > t:
                break
            q = control if control and control[0][0] <= at else data
            _, f = q.popleft()
            # Never a drop: the link is free at `at`. What waits is bounded by the host's own
            # queues, as deep as the NIC's buffer (`host_egress`).
            out.append((nic.transmit(len(f), at), f))
        return out

    def __len__(self):
        return len(self.control) + len(self.data)


class Ingress:
    def __init__(self, ports, host_queue="fifo"):
        """ports: the config's port entries; those with `peer_paced` face a paced host, whose
        NIC queue is `host_queue` (the pipeline's)."""
        self.links = {p["number"]: HostNic(float(p["rate_bps"]), int(p.get("delay_ns", 0)))
                      for p in ports if p.get("peer_paced")}
        self.queued = ({n: PriorityLink(nic) for n, nic in self.links.items()}
                       if host_queue == "priority" else {})
        self.arriving = []          # heap of (arrival ns, seq, port, frame) still on a link
        self._seq = itertools.count()

    def next_arrival(self):
        """When the next frame still on a host's link arrives, or the next waiting one may
        start (the link free): None if neither."""
        first = self.arriving[0][0] if self.arriving else None
        if not self.queued:   # a fifo host queue: the loop asks this every turn, keep it cheap
            return first
        times = [link.nic.free_at for link in self.queued.values() if link]
        if first is not None:
            times.append(first)
        return min(times) if times else None

    def on_link(self):
        """Frames read, not yet arrived: on a host's link or waiting for it."""
        return len(self.arriving) + sum(map(len, self.queued.values()))

    def remaining(self, floor):
        """Every frame still on a link, due at once (no earlier than `floor`): at stop, so
        that each is counted."""
        for port, link in self.queued.items():
            for t, f in link.start_by(float("inf")):
                heapq.heappush(self.arriving, (t, next(self._seq), port, f))
        out = [(t if t > floor else floor, port, f) for t, _, port, f in sorted(self.arriving)]
        self.arriving.clear()
        return out

    def arrivals(self, got, now, floor, clock_offset, record_wait):
        """[(arrival ns, port, frame)] due by `now`, in order of arrival, from the frames
        just read ([(port, frames, kernel times or None)]) and those still on an ingress
        link (`arriving`).

        A frame arrived when the kernel delivered it, not when we read it: a loop that was
        late (descheduled, busy sending) then only makes packets late by what exceeds their
        own slack (serialisation, queueing), and that shows as lateness instead of silently
        shifting the schedule. How long frames waited in the rings is kept (`rx_wait`).

        A port whose peer is a paced host (`peer_paced`) emulates the host's link: its token
        bucket hands a frame over when the frame's first bit would leave a real NIC, so the
        frame arrives whole one serialisation (plus the link's delay) later, after the frame
        before it. Without this every host-to-switch hop was one frame time early against
        the simulator's NIC (emulated runs 1-3% fast). Frames not yet arrived wait in a heap.

        The model's clock never runs back: a frame due before our last poll arrives at that
        poll (`floor`)."""
        wait = record_wait   # how long each frame waited in its ring
        offset = clock_offset
        ingress, arriving, queued = self.links, self.arriving, self.queued
        out = []
        append = out.append
        sources = len(got)
        for port, frames, stamps in got:
            nic = ingress.get(port)
            ring = stamps is not None
            if not ring:                     # read time is all we know, and no wait to keep
                stamps = [now + offset] * len(frames)
            for f, st in zip(frames, stamps):
                t = st - offset
                if t > now:
                    t = now
                if ring:
                    wait(now - t)
                link = queued.get(port)
                if link is not None:
                    link.hand(t, f)
                    for a, g in link.start_by(t):
                        heapq.heappush(arriving, (a, next(self._seq), port, g))
                    continue
                if nic is not None:
                    t = nic.transmit(len(f), t)
                    if t is None:
                        continue   # counted by the NIC (its drops are in the stats)
                    if t > now:
                        heapq.heappush(arriving, (t, next(self._seq), port, f))
                        continue
                append((t if t > floor else floor, port, f))
        for port, link in queued.items():
            if link:
                for a, g in link.start_by(now):
                    heapq.heappush(arriving, (a, next(self._seq), port, g))
        if arriving and arriving[0][0] <= now:
            sources += 1
            pop = heapq.heappop
            while arriving and arriving[0][0] <= now:
                t, _, port, f = pop(arriving)
                append((t if t > floor else floor, port, f))
        if sources > 1:
            out.sort(key=itemgetter(0))
        return out
