"""[workload] as a training schedule (docs/schedules.md): `kind = "llm"` generates one for a
zoo transformer (`workloads.llm`) under [workload.parallelism]; `kind = "chakra"` (a folder or
glob of .et files, one a rank) and `kind = "astra-text"` (an ASTRA-sim/SimAI text workload)
import one. Each rank of the schedule runs on a host (`host.schedule_agent`)."""
from pathlib import Path

from dlcp_emu.experiment.checks import REQUIRED, integer, number, one_of
from workloads.importers.chakra_et import STREAMS

SCHEDULE_KINDS = ("llm", "chakra", "astra-text")
WORKLOAD_KINDS = ("trace",) + SCHEDULE_KINDS
PLACEMENTS = ("spread", "packed")
GPUS = ("V100", "A100", "H100", "H100-PCIe")
ALGORITHM_KINDS = ("all-reduce", "reduce-scatter", "all-gather", "all-to-all", "broadcast")


def _llm_models():
    from workloads.llm import ZOO
    return tuple(ZOO)


def schedule_fields():
    models = _llm_models()
    return {
        "kind": (REQUIRED, one_of(WORKLOAD_KINDS), f"one of {', '.join(WORKLOAD_KINDS)} (trace: the fields "
                 "of the data-parallel [workload] above)"),
        "model": (None, one_of(models), f"kind llm: one of {', '.join(models)}"),
        "layers": (None, integer(1, 1024), "kind llm: an integer in 1..1024 replacing the model's layer count"),
        "path": (None, lambda v: isinstance(v, str) and v != "",
                 "kind chakra: a folder or glob of .et files; kind astra-text: a text workload file"),
        "workers": (REQUIRED, integer(1, 4096), "the schedule's ranks, an integer in 1..4096 (llm: dp x tp x pp)"),
        "iterations": (2, integer(1, 10_000), "an integer in 1..10000"),
        "placement": ("packed", one_of(PLACEMENTS), f"one of {', '.join(PLACEMENTS)} (packed keeps a TP "
                      "group in a rack)"),
        "gpu": ("A100", one_of(GPUS), f"kind llm: one of {', '.join(GPUS)} (the compute roofline)"),
        "efficiency": (0.5, number(0, 1, lo_open=True), "kind llm: a fraction of the GPU's peak in (0, 1]"),
        "gpus_per_server": (8, integer(1, 64), "an integer in 1..64: ranks a server (hierarchical "
                            "algorithms); on a topology of servers, its gpus_per_server"),
        "tp": (None, integer(1, 4096), "kind astra-text: the tensor-parallel size (default: the file's); "
               "kind chakra: the tensor-parallel size, dividing workers: activations and their gradients "
               "are reduced over tp groups, gradients over dp (default: every collective over all ranks "
               "unless the trace's pg_name says otherwise)"),
        "process_groups": (None, lambda v: isinstance(v, str) and v != "",
                           "kind chakra: a JSON file {pg_name: [ranks]}, the form of ASTRA-sim's "
                           "--comm-group-configuration: a collective whose pg_name is there runs over "
                           "those ranks (a pg_name not there is an error)"),
        "streams": ("group", one_of(STREAMS), "kind chakra: group (a rank's collectives of one process "
                    "group run one at a time in the trace's order, as a NCCL communicator runs them) or "
                    "trace (only the trace's dependencies)"),
        "time_unit": ("ns", one_of(("ns", "us")), "kind astra-text: ns or us (the file's compute times)"),
        "parallelism": ({}, lambda v: isinstance(v, dict), "kind llm: a table (see [workload.parallelism])"),
        "algorithms": ({}, lambda v: isinstance(v, dict), "a table {collective: algorithm}, e.g. "
                       "{ all-reduce = \"hierarchical\" }"),
    }


def doc_fields(trace_fields):
    """The schedule fields the data-parallel [workload] table does not have (docs/spec.md)."""
    return {k: v for k, v in schedule_fields().items() if k not in trace_fields}


def shared_fields_text(trace_fields):
    """What the schedule kinds read of the fields both tables have."""
    f = schedule_fields()
    shared = [k for k in f if k in trace_fields]
    return " ".join(f"`{k}`: {f[k][2]}{'' if f[k][0] in (REQUIRED, None) else f' (default {f[k][0]!r})'}."
                    for k in shared)


PARALLELISM_FIELDS = {
    "dp": (1, integer(1, 4096), "an integer in 1..4096"),
    "tp": (1, integer(1, 4096), "an integer in 1..4096"),
    "pp": (1, integer(1, 4096), "an integer in 1..4096"),
    "ep": (1, integer(1, 4096), "an integer in 1..4096 dividing dp"),
    "zero": (0, integer(0, 3), "0, 1, 2 or 3"),
    "micro_batches": (1, integer(1, 4096), "an integer in 1..4096"),
    "micro_batch_size": (1, integer(1, 4096), "an integer in 1..4096"),
    "seq_len": (2048, integer(1, 1 << 20), "an integer in 1..1048576 (tokens)"),
    "bucket_bytes": (25 * 2**20, integer(0), "an integer >= 0: DDP's gradient bucket"),
}

_ONLY = {"model": ("llm",), "layers": ("llm",), "gpu": ("llm",), "efficiency": ("llm",), "parallelism": ("llm",),
         "path": ("chakra", "astra-text"), "tp": ("astra-text", "chakra"), "time_unit": ("astra-text",),
         "streams": ("chakra",), "process_groups": ("chakra",)}


def take_schedule_workload(c, raw, source="spec"):
    """[workload] of a schedule kind, checked into `c` (a Checker); the dict the run reads."""
    w = c.take(raw, "workload", schedule_fields())
    kind = w.get("kind")
    for name, kinds in _ONLY.items():
        if name in raw and kind not in kinds:
            c.problems.append(f"workload.{name}: only with kind = {' or '.join(repr(k) for k in kinds)}, "
                              f"not {kind!r}")
    if kind == "llm" and w.get("model") is None:
        c.problems.append("workload.model: missing; kind llm needs a zoo model: " + ", ".join(_llm_models()))
    if kind in ("chakra", "astra-text") and w.get("path") is None:
        c.problems.append(f"workload.path: missing; kind {kind} needs "
                          + ("a folder or glob of .et files" if kind == "chakra" else "a text workload file"))
    for k, a in (w.get("algorithms") or {}).items():
        from workloads.collectives import ALGORITHMS
        if k not in ALGORITHM_KINDS:
            c.problems.append(f"workload.algorithms.{k}: unknown collective; allowed: {', '.join(ALGORITHM_KINDS)}")
        elif a not in ALGORITHMS[k]:
            c.problems.append(f"workload.algorithms.{k}: {a!r} is not allowed; must be one of "
                              f"{', '.join(ALGORITHMS[k])}")
    if kind == "llm":
        par = c.take(w.get("parallelism") or {}, "workload.parallelism", PARALLELISM_FIELDS)
        w["parallelism"] = par
        ranks = par.get("dp", 1) * par.get("tp", 1) * par.get("pp", 1)
        if isinstance(w.get("workers"), int) and ranks != w["workers"]:
            c.problems.append(f"workload.workers: {w['workers']} ranks, but workload.parallelism has dp x tp x pp "
                              f"= {ranks}; they must match")
    tp, workers = w.get("tp"), w.get("workers")
    if kind == "chakra" and isinstance(tp, int) and isinstance(workers, int) and workers % tp:
        c.problems.append(f"workload.tp: {tp} must divide workload.workers ({workers}): the ranks are "
                          "dp x tp")
    for name in ("path", "process_groups"):
        if isinstance(w.get(name), str) and source != "spec" and not Path(w[name]).is_absolute():
            w[name] = str(Path(source).parent / w[name])
    if kind == "chakra" and isinstance(w.get("process_groups"), str):
        try:
            w["process_groups"] = read_process_groups(w["process_groups"], workers)
        except ValueError as e:
            c.problems.append(f"workload.process_groups: {e}")
    w.update(pattern="ring", ps=1)   # what the data-parallel run's placement and summary read
    return w


def read_process_groups(path, ranks) -> dict:
    """{pg_name: tuple of ranks} from a JSON file of that form (ASTRA-sim's
    --comm-group-configuration); ValueError naming what is wrong."""
    import json
    try:
        groups = json.loads(Path(path).read_text())
    except OSError as e:
        raise ValueError(f"cannot read {str(path)!r}: {e.strerror or e}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{str(path)!r} is not JSON: {e}") from None
    if not isinstance(groups, dict) or not groups:
        raise ValueError(f"{str(path)!r} must hold an object {{pg_name: [ranks]}}, not {type(groups).__name__}")
    top = ranks if isinstance(ranks, int) else None
    out = {}
    for name, members in groups.items():
        ok = (isinstance(members, list) and len(members) >= 1
              and all(isinstance(r, int) and not isinstance(r, bool) and r >= 0 and (top is None or r < top)
                      for r in members) and len(set(members)) == len(members))
        if not ok:
            raise ValueError(f"{str(path)!r}: group {name!r} must be a list of distinct ranks in "
                             f"0..{top - 1 if top else 'workers-1'}, got {members!r}")
        out[name] = tuple(members)
    return out


def servers_of_schedule(c, workload, raw_workload, topology):
    """A schedule's server (its hierarchical algorithms' groups) is the topology's, when the
    topology has servers: taken from it when the workload names none, an error when they differ."""
    g = topology.get("gpus_per_server", 1)
    if not isinstance(g, int) or g <= 1:
        return
    if "gpus_per_server" not in raw_workload:
        workload["gpus_per_server"] = g
    elif raw_workload["gpus_per_server"] != g:
        c.problems.append(f"workload.gpus_per_server: {raw_workload['gpus_per_server']}, but "
                          f"topology.gpus_per_server is {g}; leave it out (it follows the topology) "
                          "or make them equal")


def is_schedule(workload):
    return workload.get("kind", "trace") in SCHEDULE_KINDS


def llm_of(w):
    """(model, parallelism, GPU roofline) of a [workload] of kind llm."""
    import dataclasses

    from workloads.llm import ZOO, Parallelism, Roofline
    model = ZOO[w["model"]]
    if w.get("layers"):
        model = dataclasses.replace(model, layers=w["layers"])
    par = Parallelism(**w["parallelism"], gpus_per_server=w["gpus_per_server"])
    return model, par, Roofline(w["gpu"], efficiency=w["efficiency"])


def schedule_of(w):
    """The validated Schedule a [workload] of a schedule kind describes (ValueError/ScheduleError
    for what the generator or importer refuses)."""
    from workloads.schedule import validate
    kind, n = w["kind"], w["workers"]
    if kind == "llm":
        from workloads.llm import llm_schedule
        s = llm_schedule(*llm_of(w))
    elif kind == "astra-text":
        from workloads.importers import load_astra_text
        s = load_astra_text(w["path"], n, w.get("tp"), w["gpus_per_server"], w["time_unit"])
    else:
        from workloads.importers.chakra_et import TP_CLASS_GROUPS, load_chakra
        from workloads.schedule import RankLayout
        tp = w.get("tp")
        by_class = dict(layout=RankLayout(dp=n // tp, tp=tp), class_groups=TP_CLASS_GROUPS) if tp else {}
        s = load_chakra(w["path"], n, streams=w["streams"], process_groups=w.get("process_groups"),
                        **by_class)
    if s.n_ranks != n:
        raise ValueError(f"workload.workers: {n}, but the schedule has {s.n_ranks} ranks")
    return validate(s)
