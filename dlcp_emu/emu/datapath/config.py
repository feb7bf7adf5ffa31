"""The switch process's config (`SwitchProcessConfig`): checked whole before anything opens
(every unknown, missing or bad field is an error naming it), and the switch model it describes.

Its fields, as its JSON file has them::

    {"name": "s1", "mode": "model" | "forward", "pipeline": "dlcp" or a spec table,
     "seed": 0,
     "ports": [{"number": 1, "intf": "s1-eth1", "rate_bps": 1e8, "delay_ns": 0,
                "buffer_bytes": 262144, "peer_paced": false}, ...],
     "routes": {"00:00:00:00:00:01": [1], ...},      # dst MAC -> equal-cost egress ports
     "flood": [1, 2, 3],                               # ports on the flood tree
     "stats_path": "...json", "ready_path": "...", "pcap_dir": null,
     "pcap_ports": null (every port) or [1, 3], "pcap_max_bytes": null or bytes per file,
     "stats_interval_s": 1.0, "late_threshold_ns": 1000000, "stall_limit_ns": 20000000,
     "rx_batch": 64,
     "parent_pid": null, "cpu": null or a list of CPUs, "rx_ring": true, "drain_s": 2.0,
     "rt_priority": null or 1..99,
     "queue_path": "...i64" or null, "queue_sample_ns": 1000000,
     "engine": "auto" | "native" | "python", "wake_period_ns": 0}

engine: the switch model's, as `experiment.engine.choose_engine` picks it for the pipeline:
the compiled one (`dlcp_native.NativeSwitch`, identical to `switch_models.Switch`,
tests/test_native_*.py), the Python one, or auto: native unless the pipeline has a stage only
Python has.

wake_period_ns (model mode): the loop acts at most once a period of wall-clock time (0: at every frame and
departure). Frames that arrive meanwhile wait in their ring, their arrival times being the
kernel's stamps, so the model sees them exact; departures due meanwhile go out together, late
by at most the period (and counted as late). Each wake-up costs a context switch and a timer:
on a 2-core VM, acting per frame cost ~27 us a frame and most of the machine.

queue_path: where queue occupancy samples go (`streams.RowWriter`: t_ns and the queued
bytes of each port, one row at most every queue_sample_ns, appended each stats interval);
null: none are taken.
"""
from dataclasses import dataclass, field
from typing import Any, ClassVar

from dlcp_native.switch import NativeSwitch

from dlcp_emu.emu.datapath.pcap import MIN_MAX_BYTES
from dlcp_emu.emu.process_config import ConfigError, ProcessConfig
from dlcp_emu.experiment.engine import ENGINES, choose_engine
from switch_models import PipelineSpec, PortConfig, Switch


RUNT_KEY = b"\x00" * 6      # route key of frames too short to carry a MAC: never routed
MODES = ("model", "forward")
PORT_KEYS = {"number", "intf", "rate_bps", "delay_ns", "buffer_bytes", "peer_paced"}

__all__ = ["ConfigError", "SwitchProcessConfig", "build_switch", "flood_table", "mac_bytes"]


def mac_bytes(text):
    parts = text.split(":")
    if len(parts) != 6 or not all(len(p) == 2 for p in parts):
        raise ConfigError(f"route key {text!r} is not a MAC like '00:00:00:00:00:01'")
    try:
        return bytes.fromhex("".join(parts))
    except ValueError:
        raise ConfigError(f"route key {text!r} is not a MAC like '00:00:00:00:00:01'") from None


@dataclass(frozen=True, kw_only=True)
class SwitchProcessConfig(ProcessConfig):
    """One switch process's config (the module's docstring says what each field means); a
    bad value raises ConfigError naming the field, whether built here or read from a file."""

    program: ClassVar[str] = "dlcp_emu.emu.datapath"     # the module that runs it (`python -m`)

    name: str
    ports: list
    mode: str = "model"
    pipeline: Any = "fifo"
    seed: int = 0
    routes: dict = field(default_factory=dict)
    flood: list = field(default_factory=list)
    stats_path: str | None = None
    ready_path: str | None = None
    pcap_dir: str | None = None
    pcap_ports: list | None = None
    pcap_max_bytes: int | None = None
    stats_interval_s: float = 1.0
    late_threshold_ns: int = 1_000_000
    stall_limit_ns: int = 20_000_000
    rx_batch: int = 64
    parent_pid: int | None = None
    cpu: list | None = None
    rx_ring: bool = True
    drain_s: float = 2.0
    rt_priority: int | None = None
    queue_sample_ns: int = 1_000_000
    queue_path: str | None = None
    engine: str = "auto"
    wake_period_ns: int = 0

    def __post_init__(self):
        if self.engine not in ENGINES:
            raise ConfigError(f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        if self.mode not in MODES:
            raise ConfigError(f"mode must be one of {MODES}, got {self.mode!r}")
        if isinstance(self.cpu, int):   # one CPU, or a list of them: a list from here on
            object.__setattr__(self, "cpu", [self.cpu])
        if self.cpu is not None and not (isinstance(self.cpu, list) and all(isinstance(c, int) for c in self.cpu)):
            raise ConfigError(f"cpu must be null, a CPU number or a list of them, got {self.cpu!r}")
        rt = self.rt_priority
        if rt is not None and not (isinstance(rt, int) and 1 <= rt <= 99):
            raise ConfigError(f"rt_priority must be null or an integer in 1..99, got {rt!r}")
        numbers = self._check_ports()
        for dst, nums in self.routes.items():
            mac_bytes(dst)
            if not nums or any(n not in numbers for n in nums):
                raise ConfigError(f"route to {dst} names ports {nums}; ports are {sorted(numbers)}")
        bad = [n for n in self.flood if n not in numbers]
        if bad:
            raise ConfigError(f"flood ports {bad} are not ports of this switch ({sorted(numbers)})")
        bad = [n for n in self.pcap_ports or () if n not in numbers]
        if self.pcap_ports is not None and (not isinstance(self.pcap_ports, list) or bad):
            raise ConfigError(f"pcap_ports must be null or a list of this switch's ports "
                              f"({sorted(numbers)}), got {self.pcap_ports!r}")
        cap = self.pcap_max_bytes
        if cap is not None and (not isinstance(cap, int) or cap < MIN_MAX_BYTES):
            raise ConfigError(f"pcap_max_bytes must be null or an integer >= {MIN_MAX_BYTES}, got {cap!r}")
        period = self.wake_period_ns
        if not isinstance(period, int) or isinstance(period, bool) or period < 0:
            raise ConfigError(f"wake_period_ns must be an integer >= 0 (wall ns; 0: act at every event), got {period!r}")
        if not isinstance(self.rx_batch, int) or self.rx_batch < 1:
            raise ConfigError(f"rx_batch must be an integer >= 1, got {self.rx_batch!r}")

    def _check_ports(self):
        """The set of port numbers, each port's fields checked."""
        if not isinstance(self.ports, list) or not self.ports:
            raise ConfigError("ports must be a non-empty list of {number, intf, rate_bps, ...}")
        numbers = set()
        for p in self.ports:
            if not isinstance(p, dict) or "number" not in p or "intf" not in p:
                raise ConfigError(f"each port needs 'number' and 'intf', got {p!r}")
            if not isinstance(p["number"], int) or p["number"] < 1 or p["number"] in numbers:
                raise ConfigError(f"port numbers must be distinct integers >= 1, got {p['number']!r}")
            numbers.add(p["number"])
            unknown = sorted(set(p) - PORT_KEYS)
            if unknown:
                raise ConfigError(f"port {p['number']}: unknown fields {unknown}; allowed: {sorted(PORT_KEYS)}")
            if not isinstance(p.get("peer_paced", False), bool):
                raise ConfigError(f"port {p['number']}: peer_paced must be true or false, got {p['peer_paced']!r}")
            if self.mode == "model" and "rate_bps" not in p:
                raise ConfigError(f"port {p['number']} needs rate_bps in model mode")
        return numbers


def flood_table(port_numbers, flood_ports):
    """in port -> egress ports of a flooded frame: every tree port but the input one. A frame
    that arrives on a port off the tree is not flooded (it could only be looping)."""
    tree = [n for n in port_numbers if n in set(flood_ports)]
    return {n: (tuple(q for q in tree if q != n) if n in tree else ()) for n in port_numbers}


def build_switch(cfg):
    """(model, engine, why) for a config: routes keyed by destination MAC bytes, plus one key
    per port (its number) that routes a flood copy out of that port alone; the model compiled
    or Python's as cfg.engine says (see the module's docstring)."""
    ports = {p["number"]: PortConfig(float(p["rate_bps"]), int(p.get("delay_ns", 0)),
                                     int(p.get("buffer_bytes", 256 * 1024)))
             for p in cfg.ports}
    routes = {mac_bytes(dst): tuple(nums) for dst, nums in cfg.routes.items()}
    routes.update({n: (n,) for n in ports})
    pipeline = PipelineSpec.parse(cfg.pipeline)    # a bad one: its SpecError, as the model's
    try:
        engine, why = choose_engine(cfg.engine, pipeline=pipeline)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    model = NativeSwitch if engine == "native" else Switch
    return model(cfg.name, ports, routes, pipeline, seed=cfg.seed), engine, why
