"""The switch process's config: checked whole before anything opens (every unknown or bad
field is an error naming it), and the switch model it describes.

Config (JSON)::

    {"name": "s1", "mode": "model" | "forward", "pipeline": "dlcp" or a spec table,
     "seed": 0,
     "ports": [{"number": 1, "intf": "s1-eth1", "rate_bps": 1e8, "delay_ns": 0,
                "buffer_bytes": 262144, "peer_paced": false}, ...],
     "routes": {"00:00:00:00:00:01": [1], ...},      # dst MAC -> equal-cost egress ports
     "flood": [1, 2, 3],                               # ports on the flood tree
     "stats_path": "...json", "ready_path": "...", "pcap_dir": null,
     "pcap_ports": null (every port) or [1, 3], "pcap_max_bytes": null or bytes per file,
     "stats_interval_s": 1.0, "late_threshold_ns": 1000000, "stall_limit_ns": 20000000,
     "batch": 64,
     "parent_pid": null, "cpu": null or a CPU or a list of them, "rx_ring": true, "drain_s": 2.0,
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
from dlcp_native.switch import NativeSwitch

from dlcp_emu.emu.datapath.pcap import MIN_MAX_BYTES
from dlcp_emu.experiment.engine import ENGINES, choose_engine
from switch_models import PipelineSpec, PortConfig, Switch


RUNT_KEY = b"\x00" * 6      # route key of frames too short to carry a MAC: never routed
MODES = ("model", "forward")
CONFIG_KEYS = {"name", "mode", "pipeline", "seed", "ports", "routes", "flood", "stats_path",
               "ready_path", "pcap_dir", "pcap_ports", "pcap_max_bytes", "stats_interval_s", "late_threshold_ns", "stall_limit_ns",
               "batch", "parent_pid", "cpu", "rx_ring", "drain_s", "rt_priority",
               "queue_sample_ns", "queue_path", "engine", "wake_period_ns"}


PORT_KEYS = {"number", "intf", "rate_bps", "delay_ns", "buffer_bytes", "peer_paced"}


class ConfigError(ValueError):
    """The switch config is missing something or has a bad value; the message says what."""


def mac_bytes(text):
    parts = text.split(":")
    if len(parts) != 6 or not all(len(p) == 2 for p in parts):
        raise ConfigError(f"route key {text!r} is not a MAC like '00:00:00:00:00:01'")
    try:
        return bytes.fromhex("".join(parts))
    except ValueError:
        raise ConfigError(f"route key {text!r} is not a MAC like '00:00:00:00:00:01'") from None


def load_config(cfg):
    """Check a config mapping and fill defaults; raises ConfigError naming the bad field."""
    if not isinstance(cfg, dict):
        raise ConfigError("config must be a JSON object")
    out = dict(cfg)
    for key in ("name", "ports"):
        if key not in out:
            raise ConfigError(f"config needs {key!r}")
    out.setdefault("mode", "model")
    out.setdefault("engine", "auto")
    if out["engine"] not in ENGINES:
        raise ConfigError(f"engine must be one of {', '.join(ENGINES)}, got {out['engine']!r}")
    if out["mode"] not in MODES:
        raise ConfigError(f"mode must be one of {MODES}, got {out['mode']!r}")
    out.setdefault("pipeline", "fifo")
    out.setdefault("seed", 0)
    out.setdefault("routes", {})
    out.setdefault("flood", [])
    out.setdefault("stats_path", None)
    out.setdefault("ready_path", None)
    out.setdefault("pcap_dir", None)
    out.setdefault("pcap_ports", None)
    out.setdefault("pcap_max_bytes", None)
    out.setdefault("stats_interval_s", 1.0)
    out.setdefault("late_threshold_ns", 1_000_000)
    out.setdefault("stall_limit_ns", 20_000_000)
    out.setdefault("batch", 64)
    out.setdefault("parent_pid", None)
    out.setdefault("cpu", None)
    if out["cpu"] is not None and not isinstance(out["cpu"], list):
        out["cpu"] = [out["cpu"]]       # one CPU, or a list of them: a list from here on
    out.setdefault("rx_ring", True)
    out.setdefault("drain_s", 2.0)
    out.setdefault("rt_priority", None)
    out.setdefault("queue_sample_ns", 1_000_000)
    out.setdefault("queue_path", None)
    out.setdefault("wake_period_ns", 0)
    unknown = sorted(set(out) - CONFIG_KEYS)
    if unknown:
        raise ConfigError(f"unknown config fields {unknown}; allowed: {sorted(CONFIG_KEYS)}")
    rt = out["rt_priority"]
    if rt is not None and not (isinstance(rt, int) and 1 <= rt <= 99):
        raise ConfigError(f"rt_priority must be null or an integer in 1..99, got {rt!r}")
    ports = out["ports"]
    if not isinstance(ports, list) or not ports:
        raise ConfigError("ports must be a non-empty list of {number, intf, rate_bps, ...}")
    numbers = set()
    for p in ports:
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
        if out["mode"] == "model" and "rate_bps" not in p:
            raise ConfigError(f"port {p['number']} needs rate_bps in model mode")
    for dst, nums in out["routes"].items():
        mac_bytes(dst)
        if not nums or any(n not in numbers for n in nums):
            raise ConfigError(f"route to {dst} names ports {nums}; ports are {sorted(numbers)}")
    bad = [n for n in out["flood"] if n not in numbers]
    if bad:
        raise ConfigError(f"flood ports {bad} are not ports of this switch ({sorted(numbers)})")
    bad = [n for n in out["pcap_ports"] or () if n not in numbers]
    if out["pcap_ports"] is not None and (not isinstance(out["pcap_ports"], list) or bad):
        raise ConfigError(f"pcap_ports must be null or a list of this switch's ports "
                          f"({sorted(numbers)}), got {out['pcap_ports']!r}")
    cap = out["pcap_max_bytes"]
    if cap is not None and (not isinstance(cap, int) or cap < MIN_MAX_BYTES):
        raise ConfigError(f"pcap_max_bytes must be null or an integer >= {MIN_MAX_BYTES}, got {cap!r}")
    period = out["wake_period_ns"]
    if not isinstance(period, int) or isinstance(period, bool) or period < 0:
        raise ConfigError(f"wake_period_ns must be an integer >= 0 (wall ns; 0: act at every event), got {period!r}")
    if not isinstance(out["batch"], int) or out["batch"] < 1:
        raise ConfigError(f"batch must be an integer >= 1, got {out['batch']!r}")
    return out


def flood_table(port_numbers, flood_ports):
    """in port -> egress ports of a flooded frame: every tree port but the input one. A frame
    that arrives on a port off the tree is not flooded (it could only be looping)."""
    tree = [n for n in port_numbers if n in set(flood_ports)]
    return {n: (tuple(q for q in tree if q != n) if n in tree else ()) for n in port_numbers}


def build_switch(cfg):
    """(model, engine, why) for a config: routes keyed by destination MAC bytes, plus one key
    per port (its number) that routes a flood copy out of that port alone; the model compiled
    or Python's as cfg["engine"] says (see the module's docstring)."""
    ports = {p["number"]: PortConfig(float(p["rate_bps"]), int(p.get("delay_ns", 0)),
                                     int(p.get("buffer_bytes", 256 * 1024)))
             for p in cfg["ports"]}
    routes = {mac_bytes(dst): tuple(nums) for dst, nums in cfg["routes"].items()}
    routes.update({n: (n,) for n in ports})
    pipeline = PipelineSpec.parse(cfg["pipeline"])    # a bad one: its SpecError, as the model's
    try:
        engine, why = choose_engine(cfg.get("engine", "auto"), pipeline=pipeline)
    except ValueError as e:
        raise ConfigError(str(e)) from None
    model = NativeSwitch if engine == "native" else Switch
    return model(cfg["name"], ports, routes, pipeline, seed=cfg["seed"]), engine, why
