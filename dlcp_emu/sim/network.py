"""A topology in virtual time: every switch is a `switch_models.Switch`, every host NIC a
one-port FIFO `Switch` at its link rate, so hosts are paced by their links as in the
emulator. Packets are `switch_models.Packet` objects routed by destination host name.

Per hop the loop does one arrival event: the switch takes the packet in, and the egress
port hands over what has started serialising (`EgressPort.take_started`) with its departure
time, which is when it arrives at the peer (delay included). A wake-up is scheduled only
while a port has a backlog.
"""
from switch_models import PortConfig, Switch

from .events import EventLoop

HOST_BUFFER_BYTES = 64 * 1024 * 1024   # a host's NIC queue: the transport's window bounds it


class SimNetwork:
    def __init__(self, topology, pipeline="fifo", seed=0, loop=None, record_drops=False):
        self.topology = topology
        self.loop = loop or EventLoop()
        self.nodes = {}
        self.peer = {}   # (node, port) -> (peer node object, peer port)
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
                         {h: (port.number,) for h in hosts if h != name}, "fifo")
            nic.is_host = True
            nic.nic_port = port.number
            self.nodes[name] = nic
        for name, node in self.nodes.items():
            node.is_host = getattr(node, "is_host", False)
            for port in node.ports.values():
                port.wake_at = None
            for port in topology.ports(name):
                self.peer[(node, port.number)] = (self.nodes[port.peer], port.peer_port)

    def on_receive(self, host, handler):
        """handler(pkt, now) is called for every packet delivered to `host`."""
        self.handlers[host] = handler

    def send(self, host, pkt, now=None):
        """A host hands a packet to its NIC (at the loop's time unless `now` is given)."""
        nic = self.nodes[host]
        now = self.loop.now if now is None else now
        port = nic.receive(pkt, nic.nic_port, now)
        if port is not None:
            self._forward(nic, port, now)

    def _arrive(self, node, in_port, pkt):
        now = self.loop.now
        if node.is_host:
            self.delivered += 1
            handler = self.handlers.get(node.name)
            if handler is not None:
                handler(pkt, now)
            return
        port = node.receive(pkt, in_port, now)
        if port is not None:
            self._forward(node, port, now)

    def _forward(self, node, port, now):
        """Hand on what this port has started, and come back when it can start more."""
        started = []
        port.take_started(now, started)
        if started:
            at, arrive = self.loop.at, self._arrive
            dst, dst_port = self.peer[(node, port.number)]
            for pkt in started:
                at(pkt.depart, arrive, dst, dst_port, pkt)
        if port.mask:
            t = port.busy_until
            if port.wake_at is None or t < port.wake_at:
                port.wake_at = t
                self.loop.at(t, self._wake, node, port, t)

    def _wake(self, node, port, t):
        if port.wake_at != t:
            return   # superseded by an earlier wake-up, which rescheduled
        port.wake_at = None
        self._forward(node, port, t)

    def conservation(self):
        """Every switch's (taken in, accounted for)."""
        return {name: n.conservation() for name, n in self.nodes.items()}

    def counters(self):
        return {name: n.counters() for name, n in self.nodes.items() if not n.is_host}
