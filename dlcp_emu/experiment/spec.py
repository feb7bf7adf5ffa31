"""Experiment specs: one TOML file names everything a run needs.

    name = "default"            # run label
    seed = 1
    time_dilation = 1.0         # link rates / D, compute times * D; results converted back;
                                # "auto": chosen before the runs from the spec's packet demand
                                # and this machine's measured costs, and said (study/dilation.py)
    byte_scale = 1.0            # gradient bytes and link rates * s (keeps the comm/compute ratio)
    mtu = 1500                  # 1500 .. 9000 (jumbo frames cut packet counts)
    time_limit_s = 300
    packet_records = true       # per-packet table (memory grows with packets: off for large runs)
    fidelity_tolerance = 0.05   # an emulated run is flagged when its fidelity estimate (how far
                                # its mean iteration or p99 tensor completion is from the
                                # model's, experiment/fidelity_estimate.py) exceeds this fraction
    engine = "auto"             # auto | native | python (dlcp_emu/experiment/engine.py): the simulated
                                # network's, the emulated switches' models and hosts' data planes

    [topology]                  # kind + the builder's own parameters (rates as real-world bit/s)
    kind = "leaf-spine"
    leaves = 2
    spines = 2
    hosts_per_leaf = 2
    host_rate_bps = 10e9
    oversubscription = 2.0

    [workload]
    model = "resnet50"          # a zoo model, or trace = "path/to/trace.csv"
    pattern = "ring"            # ring | ps | ds-sync
    workers = 4
    iterations = 5
    ps = 1                      # parameter servers (pattern = "ps")
    group_size = 2              # DS-Sync group size
    fusion_bytes = 67108864     # Horovod tensor fusion threshold; 0 disables fusion
    fusion_cycle_ms = 5.0
    placement = "spread"        # spread: ranks dealt round robin over racks; packed: rack by rack

    [transport]
    kind = "dlcp"               # tcp (kernel, emulation only) | reliable | dlcp | auto (dlcp for
                                # dlcp* presets, else reliable)
    loss_bound = 0.01           # dlcp: fraction of a tensor's bytes that may be lost
    droppable_fraction = 0.5    # dlcp: fraction of chunks (smallest magnitude) marked droppable
    drop_order = "magnitude"    # dlcp: magnitude (smallest first) | random (the magnitude-blind
                                # ablation: as many bytes droppable, chunks and classes at random)
    congestion = "newreno"      # newreno | dctcp; min_rto_us, initial_ssthresh, dctcp_alpha: docs/spec.md

    [switch]                    # a preset and/or stages (see switch_models.pipeline)
    preset = "dlcp"

    [compression]               # optional: top-k sparsification of every gradient message
    mode = "dc2"                # none | fixed (keep `ratio` of the values) | dc2 (delay-aware)
    ratio = 0.1                 # fixed: fraction of values kept (top-k by magnitude)
    min_ratio = 0.01            # dc2: the least it keeps
    target_delay_ms = 1.0       # dc2: real-world delay beyond serialisation it aims under
    increase = 0.05             # dc2: additive step back towards 1 per bucket under the target
    decrease = 0.5              # dc2: largest multiplicative cut (scaled by the excess)
    method = "topk"             # topk | randomk (keep `ratio`, or DC2's) | qsgd (8-bit levels)
    error_feedback = false      # add what compression left out to the next iteration's values

    [training]                  # optional: train a real model; its gradients are the payloads
    model = "mlp"               # a numpy multilayer perceptron (the only model)
    hidden = [512, 512]         # hidden layer widths
    dataset = "digits"          # scikit-learn's handwritten digits (shipped, no download)
    batch_size = 32             # samples per worker and iteration
    lr = 0.05                   # SGD learning rate
    momentum = 0.9
    compute_ms = 10.0           # real-world compute time of one iteration (forward + backward)
    eval_every = 10             # held-out accuracy every N iterations and at the end
    target_accuracy = 0.95      # the summary reports the first iteration reaching it
    test_fraction = 0.2         # share of the data set held out
                                # (with [training], [workload] names no model or trace, and
                                # byte_scale is 1: the payloads are the model's real values)

    [variants.dlcp-bound10]     # optional: named runs for `compare` (without --presets), each
    switch = { preset = "dlcp" }#   these tables laid over the spec's own, field by field
    transport = { loss_bound = 0.1 }

    [background]                # optional
    load = 0.2                  # fraction of host link rate, Poisson arrivals
    distribution = "websearch"  # websearch (DCTCP) | datamining (VL2)
    transport = "reliable"      # reliable (the packet transport: both backends run it alike) |
                                # tcp (kernel TCP: emulation; the simulator approximates it)

`load_spec(path)` and `parse_spec(dict)` check every field and report all problems at once,
each naming the field and what is allowed; unknown fields are errors, and so are NaN and
infinity. They also check what the fields make together, naming the field to change: the
slowest link after `byte_scale / time_dilation` must keep >= 1 bit/s, and the run's gradients
(every rank holds its own: ranks x the model's bytes x byte_scale) must fit in this machine's
memory. The workload's trace is read and checked here too, so a bad trace file is a spec
error naming `workload.trace` and the file. Nothing else escapes them but SpecError.
"""
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from switch_models import PipelineSpec, SpecError as SwitchSpecError
from dlcp_emu.host.compression import METHODS as COMPRESSION_METHODS, MODES as COMPRESSION_MODES, CompressionSpec
from dlcp_emu.host.learning import DATASETS, MODELS as TRAINING_MODELS
from dlcp_emu.host.training import TrainingSpec
from dlcp_emu.scale import Scale
from dlcp_emu.transport.message import DEFAULT_DROPPABLE_FRACTION, DEFAULT_LOSS_BOUND, DROP_ORDERS
from dlcp_emu.experiment.checks import REQUIRED, Checker, SpecError, integer, number, one_of
from dlcp_emu.experiment.engine import ENGINES
from dlcp_emu.experiment.jobs_spec import check_job_rules, parse_jobs_spec
from dlcp_emu.transport.registry import AUTO, TRANSPORTS, for_pipeline
from dlcp_emu.experiment.spec_transport import TRANSPORT_SETTINGS_FIELDS, check_congestion
from dlcp_emu.experiment.spec_checks import (
    _check_background, _check_scaled_rates, _check_sizes, _check_topology, _check_training,
    _check_workload_memory,
)
from dlcp_emu.experiment.spec_schedule import (WORKLOAD_KINDS, is_schedule, servers_of_schedule,
                                              take_schedule_workload)
from topologies import build as build_topology
from workloads import PATTERNS

DISTRIBUTIONS = ("websearch", "datamining")   # workloads.FLOW_CDFS
BACKGROUND_TRANSPORTS = ("reliable", "tcp")
PLACEMENTS = ("spread", "packed")
PAYLOADS = ("values", "sizes")   # float32 gradients, or payload-free (sizes and magnitude classes)
AUTO_DILATION = "auto"   # study/dilation.py chooses, before the runs
MAX_WORKERS = 1024
MAX_NAME = 64   # the run folder's name is <date>-<name>-<backend>, within a file name's 255


@dataclass(frozen=True)
class Spec:
    name: str
    seed: int
    time_dilation: float        # 1 until chosen when dilation_auto
    byte_scale: float
    mtu: int
    time_limit_s: float
    packet_records: bool
    topology: dict
    workload: dict
    transport: dict
    switch: dict
    background: dict | None
    compression: dict
    training: dict | None = None
    engine: str = "auto"
    payload: str = "values"
    fidelity_tolerance: float = 0.05
    dilation_auto: bool = False   # time_dilation = "auto": not yet chosen (study/dilation.py)
    variants: dict = field(default_factory=dict)   # name -> the tables it lays over the spec
    jobs: tuple = ()              # [[jobs]]: jobs_spec.Job each; () for a one-job spec
    source: str = "spec"
    raw: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def scale(self):
        """Real world <-> emulated for this run."""
        return Scale(self.time_dilation, self.byte_scale)

    def with_switch(self, switch):
        """The same experiment with another switch spec (a preset name or a table)."""
        table = {"preset": switch} if isinstance(switch, str) else dict(switch)
        return parse_spec({**self.raw, "switch": table}, self.source)

    def with_field(self, dotted, value):
        """The same experiment with one field set, named as in the file: `seed`,
        `compression.mode`, `topology.host_rate_bps`. Checked like the file (SpecError)."""
        *tables, name = dotted.split(".")
        raw = dict(self.raw)
        node = raw
        for i, t in enumerate(tables):
            sub = node.get(t, {})
            if not isinstance(sub, dict):
                raise SpecError([f"{'.'.join(tables[:i + 1])}: is not a table"], self.source)
            node[t] = dict(sub)
            node = node[t]
        node[name] = value
        return parse_spec(raw, self.source)

    def variant_specs(self):
        """[(name, Spec)] of the spec's [variants], in file order."""
        return [(name, _variant(self.raw, name, self.source)) for name in self.variants]

    def transport_for(self, pipeline):
        """The transport a run of this pipeline (preset name or [switch] table) uses; `auto`: the one
        it declares it pairs with (`PipelineSpec.paired_transport`), else the reliable one."""
        return for_pipeline(self.transport["kind"], PipelineSpec.parse(pipeline).paired_transport)

    def build_topology(self):
        params = {k: v for k, v in self.topology.items() if k != "kind"}
        return build_topology(self.topology["kind"], **params)


TOP_FIELDS = {
    "name": ("experiment", lambda v: isinstance(v, str) and len(v) <= MAX_NAME and v.isascii()
             and v.replace("-", "").replace("_", "").isalnum(),
             f"at most {MAX_NAME} ASCII letters, digits, '-' and '_' (it names the run's folder)"),
    "seed": (1, integer(0), "an integer >= 0"),
    "time_dilation": (1.0, lambda v: v == AUTO_DILATION or number(1)(v),
                      f"a number >= 1, or \"{AUTO_DILATION}\" (chosen before the runs from the spec's "
                      "packet demand and this machine's measured costs; docs/architecture.md)"),
    "byte_scale": (1.0, number(0, 1, lo_open=True), "a number in (0, 1]"),
    "mtu": (1500, integer(576, 9000), "an integer in 576..9000"),
    "time_limit_s": (300, number(1, 86400), "a number of seconds in 1..86400"),
    "packet_records": (True, lambda v: isinstance(v, bool), "true or false"),
    "fidelity_tolerance": (0.05, number(0, 1, lo_open=True),
                           "a fraction in (0, 1]: the fidelity estimate's error that flags an emulated run "
                           "(0.05 is 5%)"),
    "engine": ("auto", one_of(ENGINES), f"one of {', '.join(ENGINES)} (the compiled core or the Python models)"),
    "payload": ("values", one_of(PAYLOADS), "values (float32 gradients) or sizes (payload-free: sizes and "
                "magnitude classes only; the simulator's core)"),
    "topology": (REQUIRED, lambda v: isinstance(v, dict), "a table"),
    "workload": (REQUIRED, lambda v: isinstance(v, dict), "a table"),
    "transport": ({"kind": "reliable"}, lambda v: isinstance(v, dict), "a table"),
    "switch": ({"preset": "fifo"}, lambda v: isinstance(v, dict), "a table"),
    "background": (None, lambda v: isinstance(v, dict), "a table"),
    "compression": ({"mode": "none"}, lambda v: isinstance(v, dict), "a table"),
    "training": (None, lambda v: isinstance(v, dict), "a table"),
    "jobs": (None, lambda v: isinstance(v, list), "tables of jobs ([[jobs]]: docs/multi-job.md)"),
    "variants": ({}, lambda v: isinstance(v, dict) and all(isinstance(t, dict) for t in v.values()),
                 "a table of tables, one per named run"),
}


def _workload_fields():
    from workloads import list_models
    models = list_models()
    return {
        "kind": ("trace", one_of(WORKLOAD_KINDS), f"one of {', '.join(WORKLOAD_KINDS)}: trace replays a "
                 "data-parallel trace (these fields); the others run a schedule ([workload] of a schedule)"),
        "model": (None, one_of(models), f"one of {', '.join(models)}"),
        "trace": (None, lambda v: isinstance(v, str) and v != "", "a path to a trace file (CSV or Parquet)"),
        "pattern": ("ring", one_of(PATTERNS), f"one of {', '.join(PATTERNS)}"),
        "workers": (REQUIRED, integer(1, MAX_WORKERS), f"an integer in 1..{MAX_WORKERS}"),
        "iterations": (3, integer(1, 10_000), "an integer in 1..10000"),
        "ps": (1, integer(1, 64), "an integer in 1..64"),
        "group_size": (2, integer(1, 1024), "an integer in 1..1024"),
        "fusion_bytes": (64 * 1024 * 1024, integer(0), "an integer >= 0 (0 disables fusion)"),
        "fusion_cycle_ms": (5.0, number(0, lo_open=True), "a number of milliseconds > 0"),
        "placement": ("spread", one_of(PLACEMENTS), f"one of {', '.join(PLACEMENTS)}"),
    }


TRANSPORT_FIELDS = {
    # A transport registered after this module loads is one too: the check reads the registry.
    "kind": ("reliable", lambda v: v == AUTO or one_of(TRANSPORTS)(v), f"one of {', '.join((*TRANSPORTS, AUTO))}"),
    "loss_bound": (DEFAULT_LOSS_BOUND, number(0, 0.5), "a fraction in 0..0.5"),
    "droppable_fraction": (DEFAULT_DROPPABLE_FRACTION, number(0, 1), "a fraction in 0..1"),
    "drop_order": ("magnitude", one_of(DROP_ORDERS), f"one of {', '.join(DROP_ORDERS)}"),
    **TRANSPORT_SETTINGS_FIELDS,
}

_C = CompressionSpec()   # the defaults live there, once
COMPRESSION_FIELDS = {
    "mode": (_C.mode, one_of(COMPRESSION_MODES), f"one of {', '.join(COMPRESSION_MODES)}"),
    "ratio": (_C.ratio, number(0, 1, lo_open=True), "a fraction of values kept in (0, 1]"),
    "min_ratio": (_C.min_ratio, number(0, 1, lo_open=True), "a fraction of values kept in (0, 1]"),
    "target_delay_ms": (_C.target_delay_ns / 1e6, number(0, lo_open=True), "a number of milliseconds > 0"),
    "increase": (_C.increase, number(0, 1, lo_open=True), "a fraction in (0, 1]"),
    "decrease": (_C.decrease, number(0, 1, lo_open=True), "a fraction in (0, 1]"),
    "method": (_C.method, one_of(COMPRESSION_METHODS), f"one of {', '.join(COMPRESSION_METHODS)}"),
    "error_feedback": (_C.error_feedback, lambda v: isinstance(v, bool), "true or false"),
}

_T = TrainingSpec()
TRAINING_FIELDS = {
    "model": (_T.model, one_of(TRAINING_MODELS), f"one of {', '.join(TRAINING_MODELS)}"),
    "hidden": (list(_T.hidden), lambda v: isinstance(v, list) and 1 <= len(v) <= 8
               and all(integer(1, 4096)(x) for x in v), "a list of 1..8 layer widths in 1..4096"),
    "dataset": (_T.dataset, one_of(DATASETS), f"one of {', '.join(DATASETS)}"),
    "batch_size": (_T.batch_size, integer(1, 4096), "an integer in 1..4096"),
    "lr": (_T.lr, number(0, 10, lo_open=True), "a number in (0, 10]"),
    "momentum": (_T.momentum, number(0, 0.999), "a number in 0..0.999"),
    "compute_ms": (_T.compute_ms, number(0, 60_000, lo_open=True), "a number of milliseconds in (0, 60000]"),
    "eval_every": (_T.eval_every, integer(1), "an integer >= 1"),
    "target_accuracy": (_T.target_accuracy, number(0, 1, lo_open=True), "a fraction in (0, 1]"),
    "test_fraction": (_T.test_fraction, number(0.05, 0.5), "a fraction in 0.05..0.5"),
}

BACKGROUND_FIELDS = {
    "load": (REQUIRED, number(0, 0.95, lo_open=True), "a fraction of the host link rate in (0, 0.95]"),
    "distribution": ("websearch", one_of(DISTRIBUTIONS), f"one of {', '.join(DISTRIBUTIONS)}"),
    "transport": ("reliable", one_of(BACKGROUND_TRANSPORTS), f"one of {', '.join(BACKGROUND_TRANSPORTS)}"),
}


def parse_spec(raw, source="spec"):
    if isinstance(raw, dict) and "jobs" in raw:
        return parse_jobs_spec(raw, source, parse_spec, _check_variants)
    c = Checker()
    top = c.take(raw, "", TOP_FIELDS)
    dilation_auto = top.get("time_dilation") == AUTO_DILATION
    if dilation_auto:
        top["time_dilation"] = 1.0   # what the checks below see; the choice is checked again
    raw_workload = top.get("workload") or {}
    schedule = isinstance(raw_workload, dict) and is_schedule(raw_workload)
    workload = take_schedule_workload(c, raw_workload, source) if schedule else \
        c.take(raw_workload, "workload", _workload_fields())
    transport = c.take(top.get("transport") or {}, "transport", TRANSPORT_FIELDS)
    compression = c.take(top.get("compression") or {}, "compression", COMPRESSION_FIELDS)
    background = None
    if top.get("background") is not None:
        background = c.take(top["background"], "background", BACKGROUND_FIELDS)
    if compression.get("method") == "qsgd" and compression.get("mode") == "dc2":
        c.problems.append("compression.method: qsgd has no kept ratio for dc2 to steer; "
                          "use mode = \"fixed\" (or a sparsifier: topk, randomk)")
    training = None
    if top.get("training") is not None:
        training = c.take(top["training"], "training", TRAINING_FIELDS)
        _check_training(c, workload, top)

    if schedule and (training is not None or compression.get("mode", "none") != "none"):
        c.problems.append("workload.kind: a schedule runs without [training] and [compression]")
    if not schedule and training is None and workload and \
            (workload.get("model") is None) == (workload.get("trace") is None):
        c.problems.append("workload: give exactly one of model (a zoo name) or trace (a file)")
    if isinstance(workload.get("trace"), str) and workload["trace"]:
        path = Path(workload["trace"])
        if not path.is_absolute() and source != "spec":
            path = Path(source).parent / path
        if not path.is_file():
            c.problems.append(f"workload.trace: no file at {str(path)!r}")
        workload["trace"] = str(path)
    pattern = PATTERNS.get(workload.get("pattern")) if isinstance(workload.get("pattern"), str) else None
    if pattern is not None and pattern.regroups and isinstance(workload.get("group_size"), int) \
            and isinstance(workload.get("workers"), int) and workload["group_size"] > workload["workers"]:
        c.problems.append("workload.group_size: must be at most workload.workers")

    topology = top.get("topology") or {}
    if schedule and isinstance(topology, dict):
        servers_of_schedule(c, workload, raw_workload, topology)
    topo = _check_topology(c, topology, workload) if isinstance(topology, dict) else None
    if topo is not None and not c.problems:
        _check_scaled_rates(c, topo, top, raw)
    if topo is not None and background and not c.problems and not dilation_auto:
        _check_background(c, background, topo, top)   # flows per wall second: needs the dilation
    if top["payload"] == "sizes":
        _check_sizes(c, workload, compression, training)
    elif not c.problems and not schedule:
        _check_workload_memory(c, workload, top)
    switch = top.get("switch") or {}
    try:
        PipelineSpec.parse(switch)
    except SwitchSpecError as e:
        c.problems.append(f"switch: {e}")
    check_congestion(c, transport, switch)
    check_job_rules(c, switch, None)

    if not c.problems:
        _check_variants(c, top["variants"], raw, source)
    if c.problems:
        raise SpecError(c.problems, source)
    return Spec(name=top["name"], seed=top["seed"], time_dilation=float(top["time_dilation"]),
                byte_scale=float(top["byte_scale"]), mtu=top["mtu"],
                time_limit_s=float(top["time_limit_s"]), packet_records=top["packet_records"],
                topology=dict(topology),
                workload=workload, transport=transport, switch=dict(switch),
                background=background, compression=compression, training=training,
                engine=top["engine"], payload=top["payload"],
                fidelity_tolerance=float(top["fidelity_tolerance"]), variants=dict(top["variants"]), source=source,
                raw=raw, dilation_auto=dilation_auto)


def _variant(raw, name, source):
    """The spec with variant `name`'s tables laid over its own (a field at a time)."""
    merged = {k: v for k, v in raw.items() if k != "variants"}
    for key, value in raw["variants"][name].items():
        base = merged.get(key)
        merged[key] = {**base, **value} if isinstance(base, dict) and isinstance(value, dict) else value
    return parse_spec(merged, source)


def _check_variants(c, variants, raw, source):
    for name in variants:
        if not name.replace("-", "").replace("_", "").isalnum():
            c.problems.append(f"variants.{name}: a name of letters, digits, '-' and '_' only")
            continue
        try:
            _variant(raw, name, source)
        except SpecError as e:
            c.problems.extend(f"variants.{name}: {p}" for p in e.problems)


def load_spec(path):
    """Read and check a spec file; SpecError (naming the file) for anything wrong with it."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise SpecError([f"cannot read {path}: {e.strerror}"], str(path)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise SpecError([f"not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); "
                         "a spec is a TOML file"], str(path)) from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError([f"not valid TOML: {e}"], str(path)) from None
    except RecursionError:
        raise SpecError(["not valid TOML: arrays or tables nested too deeply"], str(path)) from None
    return parse_spec(raw, str(path))
