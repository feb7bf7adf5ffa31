"""A topology in virtual time: every switch is a `switch_models.Switch`, every host a
`switch_models.HostNic` at its link rate, so hosts are paced by their links as in the
emulator. Packets are `switch_models.Packet` objects routed by destination host name.

Per hop the loop does one arrival event: the switch takes the packet in, and what its egress
port has started serialising goes onto that link's wire with its departure time, which is
when it arrives at the peer (delay included). A wire delivers in order, so only its head is
on the event heap: the heap holds a wire per busy link, not a packet per packet in flight,
which keeps it small at scale. A port with a backlog gets a wake-up at the time it can start
the next packet. A host's NIC with a `priority` queue (the pipeline's `host_queue`) does the
same: it holds what it has not started and is woken when its link is free.
"""
from collections import deque
from typing import Callable, Iterable, Protocol, runtime_checkable

from switch_models import HostNic, Packet, PipelineSpec, PortConfig, Switch
from switch_models.nic import BUFFER_FULL

from dlcp_emu.sim.events import EventLoop, Loop


@runtime_checkable
class Network(Protocol):
    """What the simulator's hosts (`sim.hosts.SimHosts`) and run (`sim.run`) need of a
    network: `SimNetwork` (Python, the oracle) and `sim.native.NativeSimNetwork` (the
    core) both are one. (`sim.core_hosts.CoreHosts`, the endpoints in the core, needs the
    native one itself.)"""

    topology: object   # topologies.Topology, scaled
    loop: Loop

    def on_receive(self, host: str, handler: Callable[[Packet, int], None]) -> None:
        """handler(pkt, now) is called for every packet delivered to `host`."""

    def send(self, host: str, pkt: Packet, now: int | None = None) -> None:
        """A host's NIC takes `pkt` (routed by `pkt.dst`, a host name) at `now`."""

    def in_flight(self) -> Iterable[Packet]:
        """The packets still in the network."""

    def drops(self) -> Iterable[tuple]:
        """(node, time, port, reason, Packet) of every packet dropped, with record_drops."""

    def conservation(self) -> dict:
        """{node: (packets taken in, packets accounted for)}: equal where none went unsaid."""

    def counters(self) -> dict:
        """{switch: counters}, as the emulator's switches report them."""

    def port_numbers(self, switch: str) -> list:
        """The switch's port numbers, in the order queued_bytes answers."""

    def queued_bytes(self, switch: str) -> dict:
        """{port: bytes queued now}."""


class Wire:
    """One direction of a link: what its sender has started, in departure order, on its way
    to the far end; and, for a switch port, the wake-up it has asked for (a time, or None)."""
    __slots__ = ("packets", "wake_at", "head_arrives")

    def __init__(self):
        self.packets = deque()
        self.wake_at = None
        self.head_arrives = None


class SimNetwork:
    def __init__(self, topology, pipeline="fifo", seed=0, loop=None, record_drops=False):
        self.topology = topology
        self.loop = loop or EventLoop()
        self.switches = {}
        self.nics = {}
        self.handlers = {}
        self.delivered = 0
        for name in topology.switches():
            ports = {p: PortConfig(link.rate_bps, link.delay_ns, link.buffer_bytes)
                     for p, _, link in topology.port_map()[name]}
            self.switches[name] = Switch(name, ports, topology.equal_cost_next_hops(name),
                                         topology.pipeline_of(name, pipeline), seed=seed,
                                         record_drops=record_drops)
        control_first = PipelineSpec.parse(pipeline).host_queue == "priority"
        for name in topology.hosts():
            (port,) = topology.ports(name)
            self.nics[name] = HostNic(port.link.rate_bps, port.link.delay_ns, control_first=control_first)
        # What the NICs dropped, with packet records on (the switches keep their own logs).
        self.nic_drop_log = [] if record_drops else None
        # wires[node][port number]: the wire each egress leaves on (a host's NIC: port 0).
        self.wires = {name: {n: Wire() for n in sw.ports} for name, sw in self.switches.items()}
        for name in self.nics:
            self.wires[name] = {0: Wire()}
        for name in self.switches:
            for port in topology.ports(name):
                wire = self.wires[name][port.number]
                wire.head_arrives = self._far_end(wire, port.peer, port.peer_port)
        for name in self.nics:
            (port,) = topology.ports(name)
            wire = self.wires[name][0]
            wire.head_arrives = self._far_end(wire, port.peer, port.peer_port)

    @property
    def nodes(self):
        """Every switch and host NIC by name."""
        return {**self.switches, **self.nics}

    def on_receive(self, host, handler):
        """handler(pkt, now) is called for every packet delivered to `host`."""
        self.handlers[host] = handler

    def send(self, host, pkt, now=None):
        """A host hands a packet to its NIC (at the loop's time unless `now` is given)."""
        now = self.loop.now if now is None else now
        nic = self.nics[host]
        if nic.control_first:
            if nic.enqueue(pkt, now):
                self._nic_forward(nic, self.wires[host][0], now)
            elif self.nic_drop_log is not None:
                self.nic_drop_log.append((host, now, 0, BUFFER_FULL, pkt))
            return
        arrival = nic.transmit(pkt.size, now)
        if arrival is None:
            if self.nic_drop_log is not None:
                self.nic_drop_log.append((host, now, 0, BUFFER_FULL, pkt))
            return
        pkt.depart = arrival
        self._put_on(self.wires[host][0], pkt)

    def _far_end(self, wire, peer, in_port):
        """The event of a wire: its head packet reaches the far end. A closure, because this
        is the loop's innermost call and local names are the cheapest CPython has. The
        event's time is the packet's `depart`, which nothing changes while it is on the wire."""
        packets = wire.packets
        schedule = self.loop.schedule
        if peer in self.nics:
            handlers = self.handlers

            def far_end(pkt):
                self.delivered += 1
                handler = handlers.get(peer)
                if handler is not None:
                    handler(pkt, pkt.depart)
        else:
            receive, forward = self.switches[peer].receive, self._forward
            out_wires = self.wires[peer]

            def far_end(pkt):
                now = pkt.depart
                out = receive(pkt, in_port, now)
                if out is not None:
                    forward(out, out_wires[out.number], now)

        def head_arrives(_):
            pkt = packets.popleft()
            if packets:
                schedule(packets[0].depart, head_arrives, None)
            far_end(pkt)
        return head_arrives

    def _forward(self, port, wire, now):
        """Put on the wire what this port has started, and come back when it can start more."""
        if port.packets:
            port.start(now)
        started = port.hand_off()
        if started:
            packets = wire.packets
            if not packets:
                self.loop.schedule(started[0].depart, wire.head_arrives, None)
            packets.extend(started)
        if port.packets:
            self._ask_wake(wire, port.busy_until, self._forward, port)

    def _nic_forward(self, nic, wire, now):
        """A priority NIC: put on the wire what it starts now (control first), and come back
        when its link is free while packets wait (as `_forward` does for a switch port)."""
        pkt = nic.start(now)
        if pkt is not None:
            self._put_on(wire, pkt)
        if nic.control or nic.data:
            self._ask_wake(wire, nic.free_at, self._nic_forward, nic)

    def _put_on(self, wire, pkt):
        """A packet that has started goes on its wire, whose head alone is an event, so an
        idle wire gets one."""
        if not wire.packets:
            self.loop.schedule(pkt.depart, wire.head_arrives, None)
        wire.packets.append(pkt)

    def _ask_wake(self, wire, t, forward, sender):
        """A switch port or a priority NIC with a backlog comes back at `t`, when its link is
        free, unless an earlier wake-up is asked for already (a later one would find nothing
        to start): then `forward(sender, wire, t)`."""
        if wire.wake_at is None or t < wire.wake_at:
            wire.wake_at = t
            self.loop.schedule(t, self._wake, (forward, sender, wire, t))

    def _wake(self, wake):
        forward, sender, wire, t = wake
        if wire.wake_at != t:
            return   # superseded by an earlier wake-up, which rescheduled
        wire.wake_at = None
        forward(sender, wire, t)

    def in_flight(self):
        """Every packet still in the network: queued, serialising, or on a wire."""
        for wires in self.wires.values():
            for wire in wires.values():
                yield from wire.packets
        for sw in self.switches.values():
            for port in sw.ports.values():
                yield from port.inflight
                for q in port.queues:
                    yield from (p for p in q if p.queued is port)
        for nic in self.nics.values():
            yield from nic.waiting_items()

    def drops(self):
        """(node, time, port, reason, packet) of every packet a switch or NIC dropped, when
        the network keeps drop logs (`record_drops`)."""
        for name, sw in self.switches.items():
            for t, port, reason, pkt in sw.drop_log or ():
                yield name, t, port, reason, pkt
        yield from self.nic_drop_log or ()

    def conservation(self):
        """Every node's (taken in, accounted for): switches and host NICs."""
        return {name: n.conservation() for name, n in self.nodes.items()}

    def counters(self):
        return {name: sw.counters() for name, sw in self.switches.items()}

    def port_numbers(self, switch):
        return sorted(self.switches[switch].ports)

    def queued_bytes(self, switch):
        """{port number: live bytes queued} of one switch (its buffers' occupancy)."""
        return {n: port.bytes for n, port in self.switches[switch].ports.items()}
