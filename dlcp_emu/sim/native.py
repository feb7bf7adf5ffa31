"""The simulator's network on the native engine: `dlcp_native.NativeNetwork` behind the surface
of `SimNetwork`, so `SimHosts` and `SimBackend` drive either without knowing which.

Switches, NICs, wires and the event loop run in the core; the hosts' endpoints stay in
Python and are called per delivery and per timer, in batches. What a host schedules while it
answers a batch entry (a send, a timer) runs under that entry's `major`, which orders it
exactly as the Python loop's sequence numbers would: the two engines agree event for event
(tests/test_sim_engines.py holds whole runs to identical summaries).

The core carries packets as numbers; the Python `Packet` (its frame: header and payload) waits
here, keyed by a uid of ours, until the core delivers or drops it.
"""
from time import perf_counter, thread_time

from switch_models import REWRITE_CE

from dlcp_native.network import AGENT, CARRIED_UID, DELIVER, FOREVER, NativeNetwork

# Batches between collections of the core's drops (each frees the Packet held for it): a
# dropped packet is never delivered, so collecting late changes nothing but memory.
DROP_COLLECT_EVERY = 1024


class NativeLoop:
    """`EventLoop`'s surface (now, events, at, stop, run, pending) over the core's loop."""

    def __init__(self, net):
        self._net = net
        self._core = net.native
        self._timers = {}
        self._stop_id = None
        self._stops = 0   # the core counts a stop as an event; EventLoop does not
        self.major = -1   # the batch entry being answered: what it schedules runs in its place
        self.core_s = 0.0  # wall time inside the core's run: the rest of a run is Python's
        self.core_cpu_s = 0.0  # the same in this thread's CPU time (what a loaded machine moves less)

    @property
    def now(self):
        return self._core.now

    @property
    def events(self):
        return self._core.events - self._stops

    def at(self, t, callback, *args):
        self._timers[self._core.call_at(t, self.major)] = (callback, args)

    def stop(self):
        """As EventLoop.stop: `run` ends once the events already due now have run."""
        self._stop_id = self._core.call_at(self._core.now, self.major)

    def pending(self):
        return self._core.pending()

    def run(self, until=None, max_events=None):
        limit = FOREVER if until is None else until
        start = self._core.events
        calls = 0
        deliver, timers, agents = self._net._deliver, self._timers, self._net.agents
        try:
            while True:
                budget = None if max_events is None else max_events - (self._core.events - start)
                if budget is not None and budget <= 0:
                    break
                began, cpu = perf_counter(), thread_time()
                batch = self._core.run(limit, budget)
                self.core_s += perf_counter() - began
                self.core_cpu_s += thread_time() - cpu
                calls += 1
                if not batch or calls % DROP_COLLECT_EVERY == 0:
                    self._net._collect_drops()
                if not batch:
                    break
                for kind, callback, major, uid, host, t, _, rewrite, cls, _, _ in batch:
                    self.major = major
                    if kind == DELIVER:
                        deliver(uid, host, t, rewrite, cls)
                    elif kind == AGENT:
                        agents[callback](t)
                    elif callback == self._stop_id:
                        self._stop_id = None
                        self._stops += 1
                        return self.now
                    else:
                        fn, args = timers.pop(callback)
                        fn(*args)
        finally:
            self.major = -1
        return self.now


class NativeSimNetwork:
    """`SimNetwork(topology, pipeline, seed, record_drops=...)` on the native engine; raises
    `dlcp_native.NotNativeError` for a pipeline with a Python-only stage."""

    def __init__(self, topology, pipeline="fifo", seed=0, record_drops=False):
        self.topology = topology
        # Drops are always taken from the core: each one frees the Packet held for it.
        self.native = NativeNetwork(topology, pipeline, seed=seed, record_drops=True)
        self.record_drops = record_drops
        self.loop = NativeLoop(self)
        self.hosts = self.native.hosts
        self.switch_names = self.native.switches
        self.handlers = {}
        self.agents = {}          # stack id -> its agent's turn (a stack in the core)
        self._packets = {}        # uid -> Packet in the network
        self._next_uid = 0
        self._drop_log = []       # (node, time, port, reason, Packet), with record_drops
        for i in range(len(self.hosts)):
            self.native.handle(i)

    @property
    def delivered(self):
        return self.native.delivered

    def on_receive(self, host, handler):
        self.handlers[self.native.host_index[host]] = handler

    def on_agent(self, stack_id, turn):
        """turn(now): the agent of that stack in the core has to run."""
        self.agents[stack_id] = turn

    def send(self, host, pkt, now=None):
        now = self.loop.now if now is None else now
        uid = self._next_uid
        self._next_uid += 1
        self._packets[uid] = pkt
        self.native.send_fields(
            self.native.host_index[host], now, self.loop.major, uid, pkt.size,
            self.native.host_index.get(pkt.dst, -1), pkt.flow, pkt.prio, pkt.mag, pkt.layer,
            pkt.header_size, pkt.rewrite, pkt.droppable, pkt.dlcp, pkt.ect, pkt.ce, pkt.tclass, pkt.job)

    def _deliver(self, uid, host, t, rewrite, cls):
        pkt = self._packets.pop(uid)
        pkt.rewrite, pkt.cls, pkt.depart = rewrite, cls, t
        pkt.ce = pkt.ce or bool(rewrite & REWRITE_CE)
        handler = self.handlers.get(host)
        if handler is not None:
            handler(pkt, t)

    def _collect_drops(self):
        node, time, port, reason, uid = self.native.take_drop_columns()
        if not len(uid):
            return
        packets = self._packets
        if not self.record_drops:
            for u in uid.tolist():
                del packets[u]
            return
        for nd, t, p, r, u in zip(node.tolist(), time.tolist(), port.tolist(), reason.tolist(), uid.tolist()):
            name, number, why = self.native.where(nd, p, r)
            self._drop_log.append((name, t, number, why, packets.pop(u)))

    def carried_drops(self):
        """(node name, port number, reason, job, packet key) of each packet of the stacks in
        the core that was dropped (with their packet records on)."""
        return self.native.carried_drops()

    # -- what came out, as SimNetwork says it ----------------------------------------------
    def drops(self):
        self._collect_drops()
        return iter(self._drop_log)

    def in_flight(self):
        self._collect_drops()
        # The stacks' packets in the core carry no Packet of ours.
        return (self._packets[u] for u in self.native.in_flight().tolist() if u < CARRIED_UID)

    def conservation(self):
        return self.native.conservation()

    def counters(self):
        return self.native.counters()

    def port_numbers(self, switch):
        return list(self.native.port_numbers[switch])

    def queued_bytes(self, switch):
        return self.native.queued_bytes(switch)
