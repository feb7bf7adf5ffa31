"""Frames coming in: from the rings in order of the kernel's delivery time, and, on a port
whose peer is a paced host, over that host's link (`switch_models.HostNic`, the simulator's
NIC model) first."""
import heapq
import itertools
from operator import itemgetter

from switch_models import HostNic


class Ingress:
    def __init__(self, ports):
        """ports: the config's port entries; those with `peer_paced` face a paced host."""
        self.links = {p["number"]: HostNic(float(p["rate_bps"]), int(p.get("delay_ns", 0)))
                      for p in ports if p.get("peer_paced")}
        self.arriving = []          # heap of (arrival ns, seq, port, frame) still on a link
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
        poll (`floor`)."""
        wait = record_wait   # how long each frame waited in its ring
        offset = clock_offset
        ingress, arriving = self.links, self.arriving
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
                    if t > now:
                        heapq.heappush(arriving, (t, next(self._seq), port, f))
                        continue
                append((t if t > floor else floor, port, f))
        if arriving and arriving[0][0] <= now:
            sources += 1
            pop = heapq.heappop
            while arriving and arriving[0][0] <= now:
                t, _, port, f = pop(arriving)
                append((t if t > floor else floor, port, f))
        if sources > 1:
            out.sort(key=itemgetter(0))
        return out
