"""`NativeSwitch`: the compiled switch behind the surface of `switch_models.Switch`.

The core (`_core`, built from `src/`) knows ports and destinations as dense indices; this
wrapper maps port numbers and route keys (any hashable) to them, keeps the caller's `Packet`
objects by the core's slot, and writes back what the model changes: at `receive`, `cls`,
`arrival` and, when trimmed or marked, `size`, `rewrite`, `ce`; at `poll`, `depart`.

Differences from the Python switch, all on purpose:
- `receive` returns the egress port number (Python: the `EgressPort` object), or None.
- A packet's `depart` is set when `poll` hands it out (Python: when it starts serialising).
- Packet fields are integers that fit 64 bits; `prio` and `mag` must be in 0..7 (the Python
  model fails later, or not at all, on such packets).
- `run_batch` (no Python per packet) returns its own departures and drops; it does not add to
  `drop_log`, which records what `receive` dropped.
Across ports, `poll` lists departures in an order of its own, as the Python switch does.
"""
from dataclasses import dataclass

import numpy as np

from switch_models import classifiers, load_balancers, queue_managers, schedulers
from switch_models.packet import DEFAULTS as PACKET_DEFAULTS
from switch_models.pipeline import STAGES, PipelineSpec
from switch_models.port import check_link
from switch_models.registry import SpecError
from switch_models.switch import switch_seed
from switch_models.traffic import TOP_TRAFFIC_CLASS, TRAFFIC_CLASSES

from . import _core

# Drop reasons by the code `run_batch` returns.
REASONS = _core.REASONS
# The stages the core implements, by kind and name (the tests hold NATIVE_STAGES to it).
stage_names = _core.stage_names

# The Python classes the core implements, by stage and name. A stage registered at run time,
# or a built-in name registered again to another class, is Python-only.
NATIVE_STAGES = {
    "load_balancer": {"single": load_balancers.Single, "ecmp": load_balancers.Ecmp,
                      "spray": load_balancers.Spray, "least-loaded": load_balancers.LeastLoaded},
    "classifier": {"single": classifiers.Single, "dscp": classifiers.Dscp, "pias": classifiers.Pias,
                   "layer": classifiers.Layer, "dlcp": classifiers.Dlcp, "job": classifiers.Job},
    "queue_manager": {"droptail": queue_managers.DropTail, "ecn": queue_managers.Ecn,
                      "dlcp": queue_managers.Dlcp, "pfabric": queue_managers.PFabric,
                      "trim": queue_managers.Trim},
    "scheduler": {"fifo": schedulers.Fifo, "strict": schedulers.Strict, "drr": schedulers.Drr},
}

_INT64 = (-(1 << 63), 1 << 63)
_INT_COLUMNS = ("uid", "size", "flow", "prio", "mag", "tclass", "layer", "header_size", "rewrite", "job")
_BOOL_COLUMNS = ("droppable", "dlcp", "ect", "ce")


class NotNativeError(ValueError):
    """The pipeline has a stage the native core does not implement: run it on
    `switch_models.Switch` (the Python path)."""


@dataclass(frozen=True)
class BatchResult:
    """What `run_batch` saw leave and drop, as columns of equal length.

    departures: uid, port, depart, cls, rewrite, size (per port in order of departure);
    drops: uid, port (the input port for `no_route`), reason (an index into REASONS), time.
    """
    departures: dict
    drops: dict


class NativeSwitch:
    def __init__(self, name, ports, routes, pipeline="fifo", *, seed=0, record_drops=False,
                 default_route=None):
        """As `switch_models.Switch`: ports {number: PortConfig}; routes {destination: (port
        number, ...)}; default_route: the ports for any other destination, else no route."""
        self.name = name
        self.spec = PipelineSpec.parse(pipeline)
        stages = native_stages(self.spec, switch_seed(seed, name))
        self.drop_log = [] if record_drops else None
        self.port_numbers = tuple(number for number, _ in sorted(ports.items()))
        self._configs = [cfg for _, cfg in sorted(ports.items())]
        self._port_index = {number: i for i, number in enumerate(self.port_numbers)}
        core_ports = [port_tuple(number, cfg) for number, cfg in zip(self.port_numbers, self._configs)]
        self._route_index = {}
        core_routes = []
        for dst, numbers in routes.items():
            numbers = tuple(numbers)
            if not numbers or any(n not in self._port_index for n in numbers):
                raise ValueError(f"switch {name}: route to {dst!r} names ports {list(numbers)}; "
                                 f"ports are {sorted(self._port_index)}")
            self._route_index[dst] = len(core_routes)
            core_routes.append([self._port_index[n] for n in numbers])
        core_default = []
        if default_route is not None:
            numbers = tuple(default_route)
            if not numbers or any(n not in self._port_index for n in numbers):
                raise ValueError(f"switch {name}: default route names ports {list(numbers)}; "
                                 f"ports are {sorted(self._port_index)}")
            core_default = [self._port_index[n] for n in numbers]
        # run_batch's columns name ports by number, which the core writes if they are integers.
        numeric = all(isinstance(n, int) and _INT64[0] <= n < _INT64[1] for n in self.port_numbers)
        self._port_lut = _lookup(self.port_numbers) if numeric else None
        try:
            self._core = _core.Switch(core_ports, core_routes, core_default, stages, bool(record_drops),
                                      list(self.port_numbers) if numeric else list(range(len(core_ports))))
        except _core.SpecError as error:
            raise SpecError(str(error)) from None
        self._held = []   # the caller's Packet by the core's slot

    # -- the surface of switch_models.Switch -------------------------------------------------
    def receive(self, pkt, in_port, now):
        """Take in one packet that arrived on `in_port` at `now`; returns the number of the
        egress port it was handed to (admitted or not), or None without a route."""
        index = self._port_index[in_port]
        try:
            port, slot, cls, size, rewrite, ce, drops = self._core.receive(
                self._route_index.get(pkt.dst, -1), index, now, pkt.uid, pkt.size, pkt.flow,
                pkt.prio, pkt.mag, pkt.layer, pkt.droppable, pkt.dlcp, pkt.ect, pkt.ce,
                pkt.header_size, pkt.rewrite, pkt.tclass, pkt.job)
        except TypeError:
            _explain(pkt, now)
            raise
        if slot >= 0:
            held = self._held
            if slot >= len(held):
                held.extend([None] * (slot + 1 - len(held)))
            held[slot] = pkt
            pkt.cls = cls
            pkt.arrival = now
            if size != pkt.size or rewrite != pkt.rewrite or ce != pkt.ce:
                pkt.size, pkt.rewrite, pkt.ce = size, rewrite, ce
        if drops:
            self._take_drops(pkt)
        return None if port < 0 else self.port_numbers[port]

    def poll(self, now):
        """Packets that leave by `now`, as a list of (egress port number, packet) in order of
        departure per port; each packet's `depart` is its scheduled departure time."""
        held, numbers = self._held, self.port_numbers
        out = []
        for port, slot, depart in self._core.poll(now):
            pkt = held[slot]
            held[slot] = None
            pkt.depart = depart
            out.append((numbers[port], pkt))
        return out

    def next_event_time(self):
        """When `poll` next has something to do (possibly already past), or None if idle."""
        return self._core.next_event_time()

    def backlog(self):
        """Packets taken in but not yet released: queued plus in flight."""
        return self._core.backlog()

    def conservation(self):
        """(packets in, packets accounted): in = sent + dropped by reason + queued + in flight."""
        return self._core.conservation()

    def queued_bytes(self):
        """[live bytes queued at each port], in the order of `port_numbers`."""
        return self._core.queued_bytes()

    def buffer_bytes(self):
        """{port number: its buffer in bytes}."""
        return {n: cfg.buffer_bytes for n, cfg in zip(self.port_numbers, self._configs)}

    def counters(self):
        """Everything counted, as plain data, in the form `switch_models.Switch.counters` has."""
        return counters_of(self.name, self.spec, self.port_numbers, self._configs, self._core.counters())

    # -- batches -------------------------------------------------------------------------------
    def route_index(self, dst):
        """The index `run_batch` takes for destination `dst` (-1: not in the routes)."""
        return self._route_index.get(dst, -1)

    @property
    def core(self):
        """The compiled switch itself, for a compiled loop that drives it (`dlcp_native.datapath.Datapath`)."""
        return self._core

    def run_batch(self, *, uid, size, dst, in_port, arrival, flow=None, prio=None, mag=None,
                  layer=None, droppable=None, dlcp=None, ect=None, ce=None, header_size=None,
                  rewrite=None, tclass=None, job=None):
        """Run a sequence of arrivals to the end with no Python per packet: each packet is
        received at its `arrival` (ns) and the switch polled at that time, as a caller of
        receive and poll would, then polled at each next event until idle.

        Every field is an array (or a scalar for all packets); omitted ones take Packet's
        defaults. `dst` holds route indices (`route_index`), `in_port` port numbers. The switch
        must hold no packet when the batch starts; its state (counters, PIAS flow bytes, the
        load balancer's turn) carries on to the next call."""
        if self._core.backlog():
            raise ValueError(f"run_batch needs a switch that holds no packet; {self.name} holds "
                             f"{self._core.backlog()} (poll it until next_event_time() is None)")
        given = dict(uid=uid, size=size, flow=flow, prio=prio, mag=mag, layer=layer,
                     header_size=header_size, rewrite=rewrite, droppable=droppable, dlcp=dlcp,
                     ect=ect, ce=ce, tclass=tclass, job=job)
        n = len(np.atleast_1d(uid))
        cols = {}
        for field, value in given.items():
            if value is None:
                value = PACKET_DEFAULTS[field]
            cols[field] = _column(field, value, n, bool if field in _BOOL_COLUMNS else np.int64)
        cols["arrival"] = _column("arrival", arrival, n, np.int64)
        cols["dst"] = _column("dst", dst, n, np.int64)
        _check_range(cols, "prio", 0, 7)
        _check_range(cols, "mag", 0, 7)
        _check_range(cols, "tclass", 0, TOP_TRAFFIC_CLASS)
        _check_range(cols, "rewrite", 0, 255)
        _check_range(cols, "job", 0, 0xFFFF)
        _check_range(cols, "dst", -1, len(self._route_index) - 1)
        if self._port_lut is None:
            raise TypeError(f"run_batch needs integer port numbers; {self.name} has {list(self.port_numbers)}")
        index = self._port_lut(_column("in_port", in_port, n, np.int64))
        if index is None:
            raise ValueError(f"in_port must be a port number of {self.name} ({list(self.port_numbers)})")
        (d_uid, d_port, d_depart, d_cls, d_rewrite, d_size), (x_uid, x_port, x_reason, x_time) = \
            self._core.run_batch(cols["uid"], cols["size"], cols["dst"], cols["flow"], cols["prio"],
                                 cols["mag"], cols["layer"], cols["header_size"], cols["rewrite"],
                                 index, cols["arrival"], cols["droppable"], cols["dlcp"], cols["ect"],
                                 cols["ce"], cols["tclass"], cols["job"])
        return BatchResult(
            departures=dict(uid=d_uid, port=d_port, depart=d_depart, cls=d_cls, rewrite=d_rewrite,
                            size=d_size),
            drops=dict(uid=x_uid, port=x_port, reason=x_reason, time=x_time))

    # -- for tests -------------------------------------------------------------------------------
    def disable_idle_fast_path(self):
        """Send every packet through the queue manager and the scheduler (the Python model's
        `port.idle_limit = 0`), to check that the fast path changes nothing."""
        self._core.disable_idle_fast_path()

    def _take_drops(self, arriving):
        held, numbers, log = self._held, self.port_numbers, self.drop_log
        for now, port, reason, slot in self._core.take_drops():
            pkt = arriving if slot < 0 else held[slot]
            if slot >= 0:
                held[slot] = None
            if log is not None:
                log.append((now, numbers[port], REASONS[reason], pkt))


def counters_of(name, spec, numbers, configs, c):
    """The core's counters of one switch (ports by index, drops by code) in the form of
    `switch_models.Switch.counters`: ports by number, drops by reason."""
    ports = {}
    for number, cfg, p in zip(numbers, configs, c["ports"]):
        ports[number] = {
            "enqueued": p["enqueued"], "enqueued_bytes": p["enqueued_bytes"],
            "tx_packets": p["tx_packets"], "tx_bytes": p["tx_bytes"],
            "trimmed": p["trimmed"], "marked": p["marked"],
            "drops": {REASONS[i]: n for i, n in enumerate(p["drops"]) if n},
            "drop_bytes": p["drop_bytes"], "q_enqueued": p["q_enqueued"], "q_sent": p["q_sent"],
            "q_dropped": p["q_dropped"], "q_max_bytes": p["q_max_bytes"], "max_bytes": p["max_bytes"],
            "jobs": p["jobs"],
            "rate_bps": cfg.rate_bps, "queued_packets": p["queued_packets"],
            "queued_bytes": p["queued_bytes"], "inflight_packets": p["inflight_packets"],
        }
    return {
        "switch": name,
        "pipeline": spec.describe(),
        "rx_packets": dict(zip(numbers, c["rx_packets"])),
        "rx_bytes": dict(zip(numbers, c["rx_bytes"])),
        "no_route": c["no_route"],
        "ports": ports,
    }


def _lookup(numbers):
    """A function from an array of port numbers to port indices, or None if one is unknown."""
    numbers = np.asarray(numbers, dtype=np.int64)
    low, high = int(numbers.min()), int(numbers.max())
    if high - low < 65536:   # a table: one gather, however many packets
        table = np.full(high - low + 1, -1, dtype=np.int64)
        table[numbers - low] = np.arange(len(numbers))

        def index(column):
            if len(column) and (column.min() < low or column.max() > high):
                return None
            found = table[column - low]
            return None if len(found) and found.min() < 0 else found
    else:
        def index(column):
            found = np.minimum(np.searchsorted(numbers, column), len(numbers) - 1)
            return None if (numbers[found] != column).any() else found
    return index


def not_native(pipeline):
    """Why the core cannot run this pipeline (a preset name, a spec table or a PipelineSpec):
    its first Python-only stage, or None when the core implements every stage."""
    spec = PipelineSpec.parse(pipeline)
    for stage, registry in STAGES.items():
        name = getattr(spec, stage).name
        if NATIVE_STAGES[stage].get(name) is not registry.get(name):
            return (f"{registry.kind} {name!r} is a Python-only stage (the native core implements "
                    f"{', '.join(sorted(NATIVE_STAGES[stage]))}); run this pipeline on switch_models.Switch")
    return None


def native_stages(spec, seed):
    """{stage: (name, every parameter with defaults filled in)} for the core, or
    NotNativeError naming the first stage it does not implement."""
    why = not_native(spec)
    if why is not None:
        raise NotNativeError(why)
    stages = {}
    for stage, registry in STAGES.items():
        s = getattr(spec, stage)
        params = registry.parameters(s.name)
        if stage == "load_balancer":
            params["seed"] = seed   # as PipelineSpec.load_balancer_for: a given seed wins
        params.update(s.params)
        if "loss_tolerant" in params:   # names, checked by the spec: the core takes a flag a class
            params["loss_tolerant"] = [int(n in params["loss_tolerant"]) for n in TRAFFIC_CLASSES]
        if stage == "load_balancer" and not _INT64[0] <= params["seed"] < _INT64[1]:
            raise ValueError(f"the native switch needs a load balancer seed in 64 bits, got {params['seed']}")
        stages[stage] = (s.name, params)
    return stages


def port_tuple(number, cfg):
    """The port's settings for the core, checked as EgressPort checks them."""
    rate_bps, delay_ns, buffer_bytes = cfg.rate_bps, cfg.delay_ns, cfg.buffer_bytes
    check_link(f"port {number}", rate_bps, delay_ns, buffer_bytes)
    return (float(rate_bps), delay_ns, buffer_bytes, cfg.buffer_packets or buffer_bytes // 64,
            cfg.overhead_bytes)


def _explain(pkt, now):
    """Raise a TypeError naming the field the core could not take, if one is to blame."""
    for field, value in (("now", now), ("uid", pkt.uid), ("size", pkt.size), ("flow", pkt.flow),
                         ("prio", pkt.prio), ("mag", pkt.mag), ("tclass", pkt.tclass), ("layer", pkt.layer),
                         ("header_size", pkt.header_size), ("rewrite", pkt.rewrite)):
        if not isinstance(value, (int, np.integer)) or not _INT64[0] <= value < _INT64[1]:
            raise TypeError(f"packet uid {pkt.uid!r}: the native switch needs {field} as an integer "
                            f"in 64 bits, got {value!r}") from None


def _column(field, value, n, dtype):
    a = np.asarray(value)
    if a.ndim == 0:
        a = np.full(n, a)
    if a.ndim != 1 or len(a) != n:
        raise ValueError(f"run_batch: {field} must have one value per packet ({n}), got shape {a.shape}")
    if dtype is bool:
        if a.dtype != bool:
            raise TypeError(f"run_batch: {field} must be booleans, got {a.dtype}")
    elif a.dtype.kind not in "iu":
        raise TypeError(f"run_batch: {field} must be integers, got {a.dtype}")
    return np.ascontiguousarray(a, dtype=dtype)


def _check_range(cols, field, low, high):
    a = cols[field]
    if len(a) and (a.min() < low or a.max() > high):
        raise ValueError(f"run_batch: {field} must be in {low}..{high}, got values from {a.min()} to {a.max()}")
