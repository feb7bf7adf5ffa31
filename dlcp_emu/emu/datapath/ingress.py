"""Frames coming in: from the rings in order of the kernel's delivery time, and, on a port
whose peer is a paced host, over that host's link (`switch_models.HostNic`, the simulator's
NIC model) first."""
import heapq
import itertools
from operator import itemgetter

from switch_models import ETHERNET_OVERHEAD, HostNic
from switch_models.nic import ETH_MIN


class Ingress:
    def __init__(self, ports):
        """ports: the config's port entries; those with `peer_paced` face a paced host."""
        self.links = {p["number"]: HostNic(float(p["rate_bps"]), int(p.get("delay_ns", 0)))
                      for p in ports if p.get("peer_paced")}
        self.arriving = []          # heap of (arrival ns, seq, port, frame) still on a link
        # The links whose far end paces what it sends (a paced host, a switch), for burst
        # smoothing (`link_time`): ns a byte, and when the last frame in arrived.
        self.ns_per_byte = {p["number"]: 8e9 / float(p["rate_bps"]) for p in ports
                            if p.get("rate_bps") and (p.get("peer_paced") or p.get("peer_switch"))}
        self.link_last = dict.fromkeys(self.ns_per_byte, -(1 << 62))
        self._seq = itertools.count()

    def next_arrival(self):
        """When the next frame still on a host's link arrives, or None."""
        return self.arriving[0][0] if self.arriving else None

    def remaining(self, floor):
        """Every frame still on a link, due at once (no earlier than `floor`): at stop, so
        that each is counted."""
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
        poll (`floor`), and no sooner than its link delivers it after the frame before it
        (`link_time`)."""
        wait = record_wait   # how long each frame waited in its ring
        offset = clock_offset
        ingress, arriving = self.links, self.arriving
        link_time = self.link_time
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
                if nic is not None:
                    t = nic.transmit(len(f), t)
                    if t is None:
                        continue   # counted by the NIC (its drops are in the stats)
                t = link_time(port, t, len(f), floor)
                if t > now and t > floor:     # still on its link
                    heapq.heappush(arriving, (t, next(self._seq), port, f))
                    continue
                append((t, port, f))
        if arriving and arriving[0][0] <= now:
            sources += 1
            pop = heapq.heappop
            while arriving and arriving[0][0] <= now:
                t, _, port, f = pop(arriving)
                append((t if t > floor else floor, port, f))
        if sources > 1:
            out.sort(key=itemgetter(0))
        return out

    def link_time(self, port, t, size, floor):
        """When a frame of `size` bytes that came in on `port` at `t` (its kernel time, or its
        host link's) arrives for the model: no sooner than the model's clock (`floor`), nor
        than one serialisation at the link's rate after the frame before it on that link.

        Burst smoothing. A switch whose loop was late (a wake-up period, housekeeping, the
        machine busy) reads at once the frames that came in meanwhile, and its upstream's
        late frames come in together; given all the same time they reached an egress port
        faster than any link could carry them (two spines' late frames together at 1.5 times
        the host port's rate), and its queue built up and dropped where the simulator's never
        did. A link delivers a frame one serialisation after the one before it at the
        earliest: the frames keep their spacing, late as a whole."""
        if t < floor:
            t = floor
        ns_per_byte = self.ns_per_byte.get(port)
        if ns_per_byte:
            n = size if size > ETH_MIN else ETH_MIN
            spaced = self.link_last[port] + int((n + ETHERNET_OVERHEAD) * ns_per_byte + 0.5)
            if t < spaced:
                t = spaced
            self.link_last[port] = t
        return t
