"""The switch: route -> load balancer -> classifier -> queue manager -> scheduler -> port.

Sans-I/O, in the manner of h11: the caller hands in packets with the current time
(`receive`), asks what leaves by a time (`poll`), and asks when it next has to ask
(`next_event_time`). The emulator's data path calls it with the monotonic clock, the
simulator with virtual time, tests with whatever they like.
"""
import zlib
from dataclasses import dataclass

from switch_models.pipeline import PipelineSpec
from switch_models.port import ETHERNET_OVERHEAD, EgressPort

NO_ROUTE = "no_route"


def switch_seed(seed, name):
    """The seed of one switch's load balancer: the run's seed salted by the switch's name, so
    that hops do not all make the same hash choice, and an emulated and a simulated switch of
    one name (Python or native) choose alike."""
    return seed * 1_000_003 ^ zlib.crc32(name.encode())


@dataclass(frozen=True)
class PortConfig:
    rate_bps: float
    delay_ns: int = 0
    buffer_bytes: int = 256 * 1024
    buffer_packets: int | None = None
    overhead_bytes: int = ETHERNET_OVERHEAD


class Switch:
    def __init__(self, name, ports, routes, pipeline="fifo", *, seed=0, record_drops=False,
                 default_route=None):
        """ports: {port number: PortConfig}; routes: {destination: (port number, ...)} with the
        equal-cost egress ports toward each destination; default_route: the ports for any
        other destination (a host's NIC: one port for all), else those have no route."""
        self.name = name
        self.spec = PipelineSpec.parse(pipeline)
        self.load_balancer = self.spec.load_balancer_for(switch_seed(seed, name))
        self.classifier = self.spec.classifier_for()
        self._choose, self._classify = self.load_balancer.choose, self.classifier.classify
        self.drop_log = [] if record_drops else None
        n_classes = self.classifier.n_classes
        self.ports = {}
        for number, cfg in sorted(ports.items()):
            self.ports[number] = EgressPort(
                number, rate_bps=cfg.rate_bps, delay_ns=cfg.delay_ns, buffer_bytes=cfg.buffer_bytes,
                buffer_packets=cfg.buffer_packets, overhead_bytes=cfg.overhead_bytes,
                qm=self.spec.queue_manager_for(), scheduler=self.spec.scheduler_for(),
                n_classes=n_classes, drop_log=self.drop_log)
        self.routes = {}
        # One tuple object per distinct set of ports: a fat-tree switch has a thousand routes
        # but a handful of port sets, and a small working set is what keeps lookups fast.
        port_sets = {}
        for dst, numbers in routes.items():
            numbers = tuple(numbers)
            candidates = port_sets.get(numbers)
            if candidates is None:
                bad = [n for n in numbers if n not in self.ports]
                if not numbers or bad:
                    raise ValueError(f"switch {name}: route to {dst!r} names ports {list(numbers)}; "
                                     f"ports are {sorted(self.ports)}")
                candidates = port_sets[numbers] = tuple(self.ports[n] for n in numbers)
            self.routes[dst] = candidates
        self.default = None
        if default_route is not None:
            numbers = tuple(default_route)
            if not numbers or any(n not in self.ports for n in numbers):
                raise ValueError(f"switch {name}: default route names ports {list(numbers)}; "
                                 f"ports are {sorted(self.ports)}")
            self.default = tuple(self.ports[n] for n in numbers)
        self.rx_packets = {n: 0 for n in self.ports}
        self.rx_bytes = {n: 0 for n in self.ports}
        self.no_route = 0
        self._busy = set()   # ports with queued or in-flight packets

    def receive(self, pkt, in_port, now):
        """Take in one packet that arrived on `in_port` at `now`; returns the egress port it
        was handed to (admitted or not), or None without a route."""
        size = pkt.size
        self.rx_packets[in_port] += 1
        self.rx_bytes[in_port] += size
        candidates = self.routes.get(pkt.dst, self.default)
        if candidates is None:
            self.no_route += 1
            if self.drop_log is not None:
                self.drop_log.append((now, in_port, NO_ROUTE, pkt))
            return
        # The load balancer is asked only when there is a choice to make.
        port = candidates[0] if len(candidates) == 1 else self._choose(pkt, candidates)
        pkt.cls = self._classify(pkt)
        pkt.arrival = now
        self._busy.add(port)
        if port.busy_until <= now:
            if not port.mask and size <= port.idle_limit:
                port.send_idle(pkt, now)
                return port
            # Serialisations due before this arrival start first, among earlier arrivals
            # only (causal), and the queue manager then sees the true occupancy.
            port.start(now)
        port.qm.enqueue(port, pkt, now)
        return port

    def poll(self, now):
        """Packets that leave by `now`, as a list of (egress port number, packet) in order of
        departure per port; each packet's `depart` is its scheduled departure time."""
        out = []
        idle = []
        for port in self._busy:
            port.start(now)
            port.release(now, out)
            if not port.mask and not port.inflight:
                idle.append(port)
        for port in idle:
            self._busy.discard(port)
        return out

    def next_event_time(self):
        """When `poll` next has something to do (possibly already past), or None if idle."""
        t = None
        for port in self._busy:
            e = port.next_event()
            if e is not None and (t is None or e < t):
                t = e
        return t

    # -- accounting --------------------------------------------------------------------
    def backlog(self):
        """Packets taken in but not yet released: queued plus in flight."""
        return sum(p.packets + len(p.inflight) for p in self.ports.values())

    def counters(self):
        """Everything counted, as plain data: per input port, per egress port and queue."""
        return {
            "switch": self.name,
            "pipeline": self.spec.describe(),
            "rx_packets": dict(self.rx_packets),
            "rx_bytes": dict(self.rx_bytes),
            "no_route": self.no_route,
            "ports": {n: {**p.counters.as_dict(), "rate_bps": p.rate_bps, "queued_packets": p.packets,
                          "queued_bytes": p.bytes, "inflight_packets": len(p.inflight)}
                      for n, p in self.ports.items()},
        }

    def queued_bytes(self):
        """[live bytes queued at each port], in port number order (the buffer occupancy)."""
        return [p.bytes for p in self.ports.values()]   # ports are made in number order

    def buffer_bytes(self):
        """{port number: its buffer in bytes}."""
        return {n: p.buffer_bytes for n, p in self.ports.items()}

    def conservation(self):
        """(packets in, packets accounted): in = sent + dropped by reason + queued + in flight.
        The two are equal unless a packet was lost without a reason."""
        taken = sum(self.rx_packets.values())
        accounted = self.no_route
        for p in self.ports.values():
            c = p.counters
            accounted += c.tx_packets + sum(c.drops.values()) + p.packets + len(p.inflight)
        return taken, accounted
