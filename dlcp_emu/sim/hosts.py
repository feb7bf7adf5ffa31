"""Host stacks on the simulated network: each stack's packets become `switch_models.Packet`
objects carrying (header, payload), and what the switches did to them (trim, CE) is applied
on delivery, as the emulator's data path applies it to frames."""
import dataclasses

from switch_models import REWRITE_CE, REWRITE_TRIM, Packet

from ..wire import FRAME_OVERHEAD, Flags

MIN_FRAME = 60   # Ethernet minimum, without FCS


class SimHosts:
    def __init__(self, net, stacks, host_of_rank, ect=True):
        """stacks: {rank: HostStack}; host_of_rank: {rank: host name}."""
        self.net, self.loop = net, net.loop
        self.stacks = stacks
        self.host_of = dict(host_of_rank)
        self.index = {r: i for i, r in enumerate(sorted(self.host_of))}
        self.armed = {}
        self.ect = ect
        self.packets_sent = 0
        for rank, host in self.host_of.items():
            net.on_receive(host, self._receiver(rank))

    def start(self):
        now = self.loop.now
        for rank, stack in self.stacks.items():
            stack.start(now)
            self._flush(rank, now)

    def _receiver(self, rank):
        stack = self.stacks[rank]

        def deliver(pkt, now):
            h, payload = pkt.frame
            if pkt.rewrite & REWRITE_TRIM:
                h = dataclasses.replace(h, flags=h.flags | Flags.TRIMMED)
                payload = b""
            stack.receive(h, payload, now, bool(pkt.rewrite & REWRITE_CE))
            self._flush(rank, now)
        return deliver

    def _flush(self, rank, now):
        stack = self.stacks[rank]
        src = self.host_of[rank]
        send = self.net.send
        for h, payload in stack.poll(now):
            size = FRAME_OVERHEAD + len(payload)
            pkt = Packet(size if size > MIN_FRAME else MIN_FRAME, self.host_of[h.dst_rank],
                         flow=self.index[h.src_rank] << 16 | self.index[h.dst_rank],
                         prio=h.priority, mag=h.mag_class, layer=h.tensor_id >> 16,
                         droppable=bool(h.flags & Flags.DROPPABLE), dlcp=True, ect=self.ect,
                         header_size=FRAME_OVERHEAD, frame=(h, payload))
            send(src, pkt, now)
            self.packets_sent += 1
        t = stack.next_timeout()
        if t is not None and self.armed.get(rank) != t:
            self.armed[rank] = t
            self.loop.at(t, self._timer, rank, t)

    def _timer(self, rank, t):
        if self.armed.get(rank) != t:
            return
        self.armed[rank] = None
        self._flush(rank, self.loop.now)

    def done(self):
        return all(s.done for s in self.stacks.values())
