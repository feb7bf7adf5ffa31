"""ASTRA-sim 1 / SimAI (AICB) per-layer text workloads -> Schedule.

Line 1: the parallelism (DATA, MODEL, HYBRID_DATA_MODEL, HYBRID_MODEL_DATA,
HYBRID_TRANSFORMER, HYBRID_TRANSFORMER_FWD_IN_BCKWD), then optional ``key: value`` pairs
(``model_parallel_NPU_group: 8 ep: 1 pp: 1 vpp: 8 ga: 1 all_gpus: 64 ...``, SimAI's);
line 2: the number of layers; then one line a layer of 12 whitespace-separated fields:

    name reserved fwd_compute fwd_comm_type fwd_comm_size ig_compute ig_comm_type ig_comm_size
    wg_compute wg_comm_type wg_comm_size update_time

Compute times are simulator ticks: nanoseconds (``time_unit`` says otherwise: "us"). Comm
types: NONE, ALLREDUCE, ALLGATHER, REDUCESCATTER, ALLTOALL, BROADCAST, optionally suffixed
``_EP`` or ``_DP_EP`` (SimAI: the expert or expert-data group).

Groups: DATA puts every collective on all ranks; MODEL too; the hybrids put forward and
input-gradient collectives on the model-parallel (tp) group, weight-gradient ones on the
data-parallel group, with tp = ``model_parallel_NPU_group`` (or the ``tp`` argument) and the
rank layout of ``workloads.schedule.layout`` (tp fastest). ``_EP`` -> the ep group,
``_DP_EP`` -> the edp group (``ep`` from the header).

Dependencies, as ASTRA-sim and Chakra's text converter run a layer: forward compute after
the previous layer's forward collective; backward from the last layer: input-gradient
compute after the previous input-gradient collective and weight-gradient compute, its
collective after it, weight-gradient compute after the input-gradient compute, its
collective after it and after the previous weight-gradient collective (one communication
stream), the update after that collective. Traffic classes: forward -> activation,
input gradient -> activation-gradient, weight gradient -> gradient, ALLTOALL -> all-to-all,
a weight-phase ALLGATHER -> parameters.
"""

from __future__ import annotations

from pathlib import Path

from workloads.schedule.layout import RankLayout
from workloads.schedule.ops import OpKind as K
from workloads.schedule.ops import RankOps, Schedule, ScheduleError, assemble
from workloads.schedule.ops import TrafficClass as C

POLICIES = ("DATA", "MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA", "HYBRID_TRANSFORMER",
            "HYBRID_TRANSFORMER_FWD_IN_BCKWD")
COMM = {"ALLREDUCE": K.ALL_REDUCE, "ALLGATHER": K.ALL_GATHER, "REDUCESCATTER": K.REDUCE_SCATTER,
        "ALLTOALL": K.ALL_TO_ALL, "BROADCAST": K.BROADCAST}
FIELDS = ("name", "reserved", "fwd_compute", "fwd_comm_type", "fwd_comm_size", "ig_compute",
          "ig_comm_type", "ig_comm_size", "wg_compute", "wg_comm_type", "wg_comm_size",
          "update_time")
UNITS = {"ns": 1e-3, "us": 1.0}


def _comm(text: str, where: str) -> tuple[K | None, str | None]:
    """(kind, group suffix) of a comm type; NONE -> (None, None)."""
    if text == "NONE":
        return None, None
    for suffix in ("_DP_EP", "_EP", ""):
        base = text[: len(text) - len(suffix)] if suffix else text
        if text.endswith(suffix) and base in COMM:
            return COMM[base], suffix or None
    raise ScheduleError(f"{where}: comm type {text!r} unknown; allowed: NONE, "
                        f"{', '.join(COMM)} (optionally with _EP or _DP_EP)")


def _number(text: str, where: str, field: str, cast=int):
    try:
        v = cast(text)
    except ValueError:
        v = None
    if v is None or v < 0:
        raise ScheduleError(f"{where}: {field} must be a number >= 0, got {text!r}")
    return v


def parse_text(text: str, source: str = "<text>") -> tuple[str, dict, list[dict]]:
    """(policy, header settings, layers) of a text workload; errors name the line."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) < 2:
        raise ScheduleError(f"{source}: needs a parallelism line and a layer count")
    head = lines[0].split()
    policy = head[0]
    if policy not in POLICIES:
        raise ScheduleError(f"{source} line 1: parallelism {policy!r} unknown; allowed: "
                            f"{', '.join(POLICIES)}")
    settings = {}
    for i in range(1, len(head)):
        if head[i].endswith(":") and i + 1 < len(head):
            try:
                settings[head[i][:-1]] = int(head[i + 1])
            except ValueError:
                raise ScheduleError(f"{source} line 1: {head[i]} needs an integer, "
                                    f"got {head[i + 1]!r}") from None
    count = _number(lines[1].strip(), f"{source} line 2", "the layer count")
    if len(lines) - 2 != count:
        raise ScheduleError(f"{source}: line 2 announces {count} layers, {len(lines) - 2} follow")
    layers = []
    for n, line in enumerate(lines[2:], start=3):
        cols = line.split()
        where = f"{source} line {n}"
        if len(cols) != len(FIELDS):
            raise ScheduleError(f"{where}: a layer has {len(FIELDS)} fields "
                                f"({' '.join(FIELDS)}), got {len(cols)}")
        row = dict(zip(FIELDS, cols))
        for f in ("fwd_compute", "ig_compute", "wg_compute", "update_time"):
            row[f] = _number(row[f], where, f, float)
        for f in ("fwd_comm_size", "ig_comm_size", "wg_comm_size"):
            row[f] = _number(row[f], where, f)
        for p in ("fwd", "ig", "wg"):
            row[f"{p}_comm"] = _comm(row[f"{p}_comm_type"], f"{where} {p}_comm_type")
        layers.append(row)
    return policy, settings, layers


def load_astra_text(path, ranks: int, tp: int | None = None, gpus_per_server: int = 8,
                    time_unit: str = "ns") -> Schedule:
    """The schedule of a text workload run on ``ranks`` ranks (see the module doc)."""
    path = Path(path)
    return astra_text_schedule(path.read_text(), ranks, tp, gpus_per_server, time_unit,
                               source=str(path))


def astra_text_schedule(text: str, ranks: int, tp: int | None = None, gpus_per_server: int = 8,
                        time_unit: str = "ns", source: str = "<text>") -> Schedule:
    if time_unit not in UNITS:
        raise ScheduleError(f"time_unit {time_unit!r} unknown; allowed: {', '.join(UNITS)}")
    policy, settings, layers = parse_text(text, source)
    if "all_gpus" in settings and settings["all_gpus"] != ranks:
        raise ScheduleError(f"{source}: the workload is for all_gpus: {settings['all_gpus']} "
                            f"ranks, asked for {ranks}")
    if settings.get("pp", 1) != 1 or settings.get("ga", 1) != 1:
        raise ScheduleError(f"{source} line 1: pp and ga must be 1 (pipelines and gradient "
                            f"accumulation of text workloads are not imported), got "
                            f"pp: {settings.get('pp', 1)} ga: {settings.get('ga', 1)}")
    hybrid = policy.startswith("HYBRID")
    if hybrid:
        tp = tp or settings.get("model_parallel_NPU_group")
        if not tp or ranks % tp:
            raise ScheduleError(f"{source}: {policy} needs a model-parallel group size that "
                                f"divides {ranks} ranks (model_parallel_NPU_group: or tp=), got {tp}")
    ep = settings.get("ep", 1)
    layout = RankLayout(dp=ranks // (tp or 1) if hybrid else ranks, tp=tp if hybrid else 1,
                        ep=ep, gpus_per_server=gpus_per_server)
    groups, names = list(layout.groups), list(layout.group_names)
    everyone = len(groups)
    groups.append(tuple(range(ranks)))
    names.append("all")
    scale = UNITS[time_unit]
    labels: dict[str, int] = {}
    per_rank = []
    for r in range(ranks):
        def group(phase: str, suffix) -> int:
            if suffix == "_EP":
                return layout.group_of(r, "ep")
            if suffix == "_DP_EP":
                return layout.group_of(r, "edp")
            if not hybrid:
                return everyone
            return layout.group_of(r, "dp" if phase == "wg" else "tp")
        per_rank.append(_rank_ops(layers, scale, group, labels).arrays())
    meta = {"importer": "workloads.importers.astra_text", "source": source, "policy": policy,
            **{f"header_{k}": v for k, v in settings.items()}}
    return assemble(ranks, per_rank, groups, names, labels, meta)


def _rank_ops(layers, scale, group, labels) -> RankOps:
    ops = RankOps(labels)

    def comm(layer, i, phase, deps, tclass):
        kind, suffix = layer[f"{phase}_comm"]
        if kind is None:
            return -1
        if kind == K.ALL_TO_ALL:
            tclass = C.ALL_TO_ALL
        elif phase == "wg" and kind == K.ALL_GATHER:
            tclass = C.PARAMETERS
        return ops.add(kind, f"{phase} {layer['name']}#{i}", deps, group=group(phase, suffix),
                       nbytes=layer[f"{phase}_comm_size"], tclass=tclass, layer=i)

    prev = -1
    for i, layer in enumerate(layers):
        c = ops.add(K.COMPUTE, f"fwd {layer['name']}#{i}", [prev],
                    duration_us=layer["fwd_compute"] * scale, layer=i)
        f = comm(layer, i, "fwd", [c], C.ACTIVATION)
        prev = f if f >= 0 else c
    wg, chain = -1, -1
    for i in range(len(layers) - 1, -1, -1):
        layer = layers[i]
        ig = ops.add(K.COMPUTE, f"ig {layer['name']}#{i}", [prev, wg],
                     duration_us=layer["ig_compute"] * scale, layer=i)
        g = comm(layer, i, "ig", [ig], C.ACTIVATION_GRADIENT)
        wg = ops.add(K.COMPUTE, f"wg {layer['name']}#{i}", [ig],
                     duration_us=layer["wg_compute"] * scale, layer=i)
        w = comm(layer, i, "wg", [wg, chain], C.GRADIENT)
        if w >= 0:
            chain = w
            if layer["update_time"] > 0:
                ops.add(K.COMPUTE, f"update {layer['name']}#{i}", [w],
                        duration_us=layer["update_time"] * scale, layer=i)
        prev = g if g >= 0 else ig
    return ops
