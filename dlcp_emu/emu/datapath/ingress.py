"""Frames coming in: from the rings in order of the kernel's delivery time, and, on a port
whose peer is a paced host, over that host's link (`switch_models.HostNic`, the simulator's
NIC model) first.

A `priority` host queue (the pipeline's `host_queue`) is replayed as the host's NIC sends
it: the host's shaper lets a burst of frames out at once, and a control packet the host
queued just after them would, on a FIFO link, wait behind every one, where the simulator's
NIC (and the host's own qdisc, had it held them) sends it after the frame on the wire. So
frames wait in that NIC's two queues (`HostNic.enqueue_item`, the simulator's own model),
and each starts when the link is free, control first (`is_control_frame`: the host's egress
filters), strict priority without preemption."""
import heapq
import itertools
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


def hand(nic, t, f):
    """A paced host hands frame f to its link, a `priority` NIC (`HostNic.enqueue_item`), at
    t: [(arrival ns, frame)] of the frames that start by t, f among them if the link is free.
    The frames whose turn came before t start first (f, handed later, cannot pass them);
    at t itself f goes in the NIC's order, control first."""
    out = start_by(nic, t, before=True)
    if nic.enqueue_item(f, len(f), is_control_frame(f), t):   # else counted by the NIC
        got = nic.start_item(t)
        if got is not None:
            out.append((got[1], got[0]))
    return out


def start_by(nic, t, before=False):
    """[(arrival ns, frame)] of the frames waiting on a `priority` NIC that start by t (before
    t if `before`), in order. Each was handed over before the link fell free (`hand` starts
    a frame at once on a free link), so it starts when the link is free, control first."""
    out = []
    while nic.control or nic.data:
        at = nic.free_at
        if at > t or before and at == t:
            break
        f, arrival = nic.start_item(at)
        out.append((arrival, f))
    return out


class Ingress:
    def __init__(self, ports, host_queue="fifo"):
        """ports: the config's port entries; those with `peer_paced` face a paced host, whose
        NIC queue is `host_queue` (the pipeline's)."""
        self.links = {p["number"]: HostNic(float(p["rate_bps"]), int(p.get("delay_ns", 0)),
                                           control_first=host_queue == "priority")
                      for p in ports if p.get("peer_paced")}
        self.queued = {n: nic for n, nic in self.links.items() if nic.control_first}
        self.arriving = []          # heap of (arrival ns, seq, port, frame) still on a link
        self._seq = itertools.count()

    def next_arrival(self):
        """When the next frame still on a host's link arrives, or the next waiting one may
        start (the link free): None if neither."""
        first = self.arriving[0][0] if self.arriving else None
        if not self.queued:   # a fifo host queue: the loop asks this every turn, keep it cheap
            return first
        times = [nic.free_at for nic in self.queued.values() if nic.control or nic.data]
        if first is not None:
            times.append(first)
        return min(times) if times else None

    def on_link(self):
        """Frames read, not yet arrived: on a host's link or waiting for it."""
        return len(self.arriving) + sum(nic.waiting() for nic in self.queued.values())

    def remaining(self, floor):
        """Every frame still on a link, due at once (no earlier than `floor`): at stop, so
        that each is counted."""
        for port, nic in self.queued.items():
            for t, f in start_by(nic, float("inf")):
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
                if port in queued:
                    for a, g in hand(nic, t, f):
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
        for port, nic in queued.items():
            if nic.control or nic.data:
                for a, g in start_by(nic, now):
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
