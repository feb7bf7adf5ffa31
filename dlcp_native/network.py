"""`NativeNetwork`: the simulator's network (`dlcp_emu.sim.SimNetwork`) in the compiled core.

Every switch is the native switch, every host a NIC at its link rate, and the event loop that
carries packets from hop to hop runs in the core: one event per hop, the same wake-ups, the
same order as the Python network, so the two agree to the nanosecond
(`tests/test_native_network.py` holds them to it).

The hosts' endpoints stay in Python. A driver talks to the network in batches, never per hop:
- `send` (one packet, now) or `send_at` (numpy columns, each packet an event at its time);
- `call_at(t)`: a timer of the driver's, which comes back from `run`;
- `handle(host)`: deliveries to that host come back from `run`; to other hosts they are
  logged, and `deliveries()` hands them over as columns;
- `run(until)` runs natively until the next events for the driver and returns them: every
  such event at one time that follows the last in the heap's order (a batch). What the
  driver schedules while it answers entry k (sends, timers) takes `major` from that entry,
  so that it is ordered as a Python loop, which would have run the entries one by one,
  would have ordered it.

Hosts and destinations are indices into `hosts` (the topology's order); a packet to a name
that is no host has `dst` -1 and is dropped by the first switch (`no_route`).
"""

import numpy as np

from switch_models import PortConfig
from switch_models.packet import DEFAULTS as PACKET_DEFAULTS
from switch_models.pipeline import PipelineSpec
from switch_models.switch import switch_seed

from . import _core
from .switch import REASONS, native_stages, port_tuple, counters_of

FOREVER = 1 << 62
DELIVER, CALLBACK, AGENT = 0, 1, 2
CARRIED_UID = 1 << 60        # uids of the packets of stacks in the core (network.hpp)
NIC_REASON = "buffer_full"   # the one reason a NIC drops
_FIELDS = ("uid", "size", "dst", "flow", "prio", "mag", "layer", "header_size", "rewrite",
           "droppable", "dlcp", "ect", "ce", "tclass", "job")
_DEFAULTS = {name: PACKET_DEFAULTS[name] for name in _FIELDS[3:]}   # a field a caller leaves out


class NativeNetwork:
    def __init__(self, topology, pipeline="fifo", seed=0, record_drops=False):
        """As `SimNetwork(topology, pipeline, seed, record_drops=...)`; raises NotNativeError
        for a pipeline with a Python-only stage."""
        self.topology = topology
        self.spec = PipelineSpec.parse(pipeline)
        # Each switch's pipeline: a server's fabric runs its own (topologies.servers).
        self._specs = {name: PipelineSpec.parse(topology.pipeline_of(name, pipeline))
                       for name in topology.switches()}
        self.switches = list(topology.switches())
        self.hosts = list(topology.hosts())
        self.host_index = {h: i for i, h in enumerate(self.hosts)}
        self._switch_index = switch_index = {s: i for i, s in enumerate(self.switches)}
        port_map = topology.port_map()
        self.port_numbers, self._configs = {}, {}
        self._port_index = {}
        core_switches = []
        for name in self.switches:
            ports = sorted((p, PortConfig(link.rate_bps, link.delay_ns, link.buffer_bytes))
                           for p, _, link in port_map[name])
            numbers = [p for p, _ in ports]
            self.port_numbers[name] = numbers
            self._configs[name] = [cfg for _, cfg in ports]
            self._port_index[name] = {n: i for i, n in enumerate(numbers)}
        for name in self.switches:
            index = self._port_index[name]
            routes = [[] for _ in self.hosts]
            mapped = {}   # a switch has few distinct next-hop sets: each mapped once
            for dst, numbers in topology.equal_cost_next_hops(name).items():
                ports = mapped.get(numbers)
                if ports is None:
                    ports = mapped[numbers] = [index[n] for n in numbers]
                routes[self.host_index[dst]] = ports
            peers = [None] * len(index)
            for port in topology.ports(name):
                peers[index[port.number]] = self._peer(port, switch_index)
            stages = native_stages(self._specs[name], switch_seed(seed, name))
            core_switches.append(([port_tuple(n, c) for n, c in zip(self.port_numbers[name], self._configs[name])],
                                  routes, stages, peers))
        core_hosts = []
        control_first = self.spec.host_queue == "priority"   # the hosts' NIC queue
        for name in self.hosts:
            (port,) = topology.ports(name)
            core_hosts.append((float(port.link.rate_bps), port.link.delay_ns, self._peer(port, switch_index),
                               control_first))
        self._core = core = _core.Network(core_switches, core_hosts, bool(record_drops))
        self.record_drops = bool(record_drops)
        self._drops = []
        # The per-packet and per-message calls of the simulator's drivers (sim/native.py,
        # sim/core_hosts.py), bound to the core: no frame of Python between them and it.
        self.send_fields = core.send              # `send`'s arguments by position, major third
        self.take_drop_columns = core.take_drops  # node, time, port, reason, uid (numpy)
        # The hosts' stacks in the core (`Network::attach_stack`, src/net/network.hpp).
        self.attach_stack, self.add_sender = core.attach_stack, core.add_sender
        self.stack_flush, self.take_completions = core.stack_flush, core.take_completions
        self.record_packets, self.packet_records = core.record_packets, core.packet_records
        self.carried_in_flight = core.carried_in_flight
        # Schedule agents in the core (src/host/schedule_agent.hpp), one a training stack.
        self.attach_schedule_agent, self.start_agent = core.attach_schedule_agent, core.start_agent
        self.agent_state, self.take_agent_records = core.agent_state, core.take_agent_records
        # A data-parallel worker's collectives in the core (src/host/worker_collectives.hpp).
        self.attach_collectives, self.begin_collective = core.attach_collectives, core.begin_collective
        self.take_ended_collective = core.take_ended_collective
        self.collectives_deliveries = core.collectives_deliveries

    def _peer(self, port, switch_index):
        if port.peer in switch_index:
            return (switch_index[port.peer], self._port_index[port.peer][port.peer_port], -1)
        return (-1, -1, self.host_index[port.peer])

    # -- what hosts do ---------------------------------------------------------------------
    def send(self, host, now, *, uid, size, dst, major=-1, **fields):
        """Host index `host` hands a packet to its NIC at `now`; False if the NIC dropped it.
        Omitted fields take Packet's defaults."""
        _check_fields("send", fields)
        return self._core.send(host, now, major, uid, size, dst,
                               *(fields.get(name, default) for name, default in _DEFAULTS.items()))

    def send_packet(self, host, pkt, now, major=-1):
        """`send` for a `switch_models.Packet` routed by host name (host: a name too)."""
        return self._core.send(self.host_index[host], now, major, pkt.uid, pkt.size,
                               self.host_index.get(pkt.dst, -1), pkt.flow, pkt.prio, pkt.mag,
                               pkt.layer, pkt.header_size, pkt.rewrite, pkt.droppable, pkt.dlcp,
                               pkt.ect, pkt.ce, pkt.tclass, pkt.job)

    def send_at(self, *, host, time, uid, size, dst, major=-1, **fields):
        """Many sends, each an event at its `time` (clamped to now), scheduled in the order
        given: what `loop.at(t, net.send, host, pkt)` does per packet in Python. Columns are
        arrays (or scalars for all); omitted fields take Packet's defaults."""
        _check_fields("send_at", fields)
        n = len(np.atleast_1d(uid))
        cols = {"host": host, "time": time, "uid": uid, "size": size, "dst": dst}
        for name, default in _DEFAULTS.items():
            cols[name] = fields.get(name, default)
        out = {}
        for name, value in cols.items():
            a = np.asarray(value)
            a = np.full(n, a) if a.ndim == 0 else a
            if a.shape != (n,):
                raise ValueError(f"send_at: {name} must have one value per packet ({n}), got shape {a.shape}")
            boolean = isinstance(_DEFAULTS.get(name), bool)
            if (a.dtype != bool) if boolean else (a.dtype.kind not in "iu"):
                raise TypeError(f"send_at: {name} must be {'booleans' if boolean else 'integers'}, got {a.dtype}")
            out[name] = np.ascontiguousarray(a, dtype=bool if boolean else np.int64)
        if n and (out["host"].min() < 0 or out["host"].max() >= len(self.hosts)):
            raise ValueError(f"send_at: host must be a host index in 0..{len(self.hosts) - 1}")
        self._core.send_at(out["host"], out["time"], *(out[f] for f in _FIELDS), major)

    def call_at(self, t, major=-1):
        """A timer at virtual time t (clamped to now): `run` returns (CALLBACK, its id, ...)."""
        return self._core.call_at(t, major)

    def handle(self, host, on=True):
        """Deliveries to host index `host` come back from `run` (else `deliveries()` has them)."""
        self._core.set_handled(host, on)

    # -- the loop -------------------------------------------------------------------------
    def run(self, until=None, max_events=None):
        """Run until no event is left, virtual time passes `until`, `max_events` have run, or
        events for the driver are due: returns those (a list, empty for the other reasons),
        each (kind, callback id, major, uid, host, time, size, rewrite, cls, ce, arrival),
        kind DELIVER or CALLBACK."""
        _, batch = self._core.run(FOREVER if until is None else until,
                                  -1 if max_events is None else max_events)
        return batch

    def next_event_time(self):
        """When the next event is due, or None."""
        return self._core.next_event_time()

    @property
    def now(self):
        return self._core.now

    @property
    def events(self):
        """Events run so far, as `EventLoop.events` counts them."""
        return self._core.events

    @property
    def major(self):
        """The core's major now: what a driver schedules under outside a batch."""
        return self._core.major

    @property
    def delivered(self):
        return self._core.delivered

    def pending(self):
        return self._core.pending()

    # -- what came out --------------------------------------------------------------------
    def deliveries(self):
        """Packets delivered to hosts no driver handles since the last call, as columns:
        uid, host (index), time, rewrite, size, cls."""
        names = ("uid", "host", "time", "rewrite", "size", "cls")
        return dict(zip(names, self._core.take_deliveries()))

    def drops(self):
        """(node, time, port number, reason, uid) of every packet a switch or NIC dropped,
        with `record_drops` (as `SimNetwork.drops`, with the uid for the packet)."""
        node, time, port, reason, uid = self._core.take_drops()
        for nd, t, p, r, u in zip(node.tolist(), time.tolist(), port.tolist(), reason.tolist(), uid.tolist()):
            name, number, why = self.where(nd, p, r)
            self._drops.append((name, t, number, why, u))
        return list(self._drops)

    def where(self, node, port, reason):
        """(node name, port number, reason) of a drop the core recorded: node and port indices
        (switches first, then the hosts' NICs, whose one port is 0), reason code."""
        n_switches = len(self.switches)
        if node < n_switches:
            name = self.switches[node]
            return name, self.port_numbers[name][port], REASONS[reason]
        return self.hosts[node - n_switches], 0, NIC_REASON

    def carried_drops(self):
        """(node name, port number, reason, job, packet key) of each dropped packet of the
        stacks in the core (with their packet records on)."""
        for node, port, reason, job, key in self._core.carried_drops():
            yield (*self.where(node, port, reason), job, key)

    def in_flight(self):
        """The uid of every packet still in the network: queued, serialising, or on a wire."""
        return self._core.in_flight()

    def conservation(self):
        """Every node's (taken in, accounted for): switches and host NICs."""
        return dict(zip(self.switches + self.hosts, map(tuple, self._core.conservation())))

    def counters(self):
        """{switch: its counters in the form of `switch_models.Switch.counters`}."""
        return {name: counters_of(name, self._specs[name], self.port_numbers[name], self._configs[name],
                                  self._core.counters(i))
                for i, name in enumerate(self.switches)}

    def nic_counters(self, host):
        """The NIC of host index `host`: rx_packets, tx_packets, tx_bytes, drops, drop_bytes."""
        return self._core.nic(host)

    def queued_bytes(self, switch):
        """{port number: live bytes queued} of one switch (its buffers' occupancy)."""
        return dict(zip(self.port_numbers[switch], self._core.queued_bytes(self._switch_index[switch])))


def _check_fields(where, fields):
    unknown = set(fields) - set(_DEFAULTS)
    if unknown:
        raise TypeError(f"{where}: unknown fields {sorted(unknown)}; allowed: {sorted(_FIELDS)}")
