"""A topology in virtual time: every switch is a `switch_models.Switch`, every host NIC a
one-port FIFO `Switch` at its link rate, so hosts are paced by their links as in the
emulator. Packets are `switch_models.Packet` objects routed by destination host name.

Per hop the loop does one arrival event: the switch takes the packet in, and what its egress
port has started serialising goes onto the port's wire with its departure time, which is
when it arrives at the peer (delay included). A wire delivers in order, so only its head is
on the event heap: the heap holds a wire per busy link, not a packet per packet in flight,
which keeps it small at scale. A port with a backlog gets a wake-up at the time it can start
the next packet. A host's NIC is a FIFO whose buffer the transport's window bounds, so it
starts its whole queue at once: the same departure times, without a wake-up per packet.
"""
import heapq
from collections import deque

from switch_models import PortConfig, Switch

from .events import FOREVER, EventLoop

HOST_BUFFER_BYTES = 64 * 1024 * 1024


class SimNetwork:
    def __init__(self, topology, pipeline="fifo", seed=0, loop=None, record_drops=False):
        self.topology = topology
        self.loop = loop or EventLoop()
        self.nodes = {}
        self.handlers = {}
        self.delivered = 0
        for name in topology.switches():
            ports = {p: PortConfig(link.rate_bps, link.delay_ns, link.buffer_bytes)
                     for p, _, link in topology.port_map()[name]}
            self.nodes[name] = Switch(name, ports, topology.equal_cost_next_hops(name), pipeline,
                                      seed=seed, record_drops=record_drops)
        hosts = topology.hosts()
        for name in hosts:
            (port,) = topology.ports(name)
            nic = Switch(name, {port.number: PortConfig(port.link.rate_bps, port.link.delay_ns,
                                                        HOST_BUFFER_BYTES)},
                         {}, "fifo", default_route=(port.number,), record_drops=record_drops)
            nic.nic_port = port.number
            self.nodes[name] = nic
        host_set = set(hosts)
        for name, node in self.nodes.items():
            node.is_host = name in host_set
            for port in topology.ports(name):
                egress = node.ports[port.number]
                egress.peer = (self.nodes[port.peer], port.peer_port)
                egress.wire = deque()   # started packets on their way to the peer, in order
                egress.wake_at = None
                # How far ahead this port may start what it holds: a NIC everything, a
                # switch only what is due (a later arrival may still take precedence).
                egress.horizon = FOREVER if node.is_host else None
        for node in self.nodes.values():
            for port in node.ports.values():
                port.arrive = self._far_end(port)

    def on_receive(self, host, handler):
        """handler(pkt, now) is called for every packet delivered to `host`."""
        self.handlers[host] = handler

    def send(self, host, pkt, now=None):
        """A host hands a packet to its NIC (at the loop's time unless `now` is given)."""
        nic = self.nodes[host]
        now = self.loop.now if now is None else now
        port = nic.receive(pkt, nic.nic_port, now)
        if port is not None:
            self._forward(port, now)

    def _far_end(self, port):
        """The event of `port`'s wire: its head packet reaches the far end. A closure, because
        this is the loop's innermost call and local names are the cheapest CPython has. The
        event's time is the packet's `depart`, which nothing changes while it is on the wire."""
        node, in_port = port.peer
        wire = port.wire
        heap, seq, push = self.loop._heap, self.loop._seq, heapq.heappush
        if node.is_host:
            handlers, name = self.handlers, node.name

            def far_end(pkt):
                self.delivered += 1
                handler = handlers.get(name)
                if handler is not None:
                    handler(pkt, pkt.depart)
        else:
            receive, forward = node.receive, self._forward

            def far_end(pkt):
                now = pkt.depart
                out = receive(pkt, in_port, now)
                if out is None:
                    return
                inflight = out.inflight
                if not out.mask and len(inflight) == 1:
                    # The common case, written out: it started at once on an idle port.
                    started = inflight.pop()
                    out_wire = out.wire
                    if not out_wire:
                        push(heap, (started.depart, next(seq), out.arrive, None))
                    out_wire.append(started)
                    c = out.counters
                    c.tx_packets += 1
                    c.tx_bytes += started.size
                else:
                    forward(out, now)

        def head_arrives(_):
            pkt = wire.popleft()
            if wire:
                push(heap, (wire[0].depart, next(seq), head_arrives, None))
            far_end(pkt)
        return head_arrives

    def _forward(self, port, now):
        """Put on the wire what this port has started, and come back when it can start more."""
        if port.mask:
            port.start(port.horizon or now)
        inflight = port.inflight
        if inflight:
            wire = port.wire
            if not wire:
                self.loop.schedule(inflight[0].depart, port.arrive, None)
            wire.extend(inflight)
            c = port.counters
            c.tx_packets += len(inflight)
            c.tx_bytes += sum(p.size for p in inflight)
            inflight.clear()
        if port.mask:
            t = port.busy_until
            if port.wake_at is None or t < port.wake_at:
                port.wake_at = t
                self.loop.schedule(t, self._wake, (port, t))

    def _wake(self, wake):
        port, t = wake
        if port.wake_at != t:
            return   # superseded by an earlier wake-up, which rescheduled
        port.wake_at = None
        self._forward(port, t)

    def in_flight(self):
        """Every packet still in the network: queued, serialising, or on a wire."""
        for node in self.nodes.values():
            for port in node.ports.values():
                yield from port.wire
                yield from port.inflight
                for q in port.queues:
                    yield from (p for p in q if p.queued is port)

    def conservation(self):
        """Every switch's (taken in, accounted for)."""
        return {name: n.conservation() for name, n in self.nodes.items()}

    def counters(self):
        return {name: n.counters() for name, n in self.nodes.items() if not n.is_host}
