"""Run one spec under several switch presets (and seeds) and put the results side by side.

    results/<run-id>/<preset>/seed-<k>/   the tables of each run
    results/<run-id>/summary.json         {"presets": {preset: figures}, ...}
    results/<run-id>/spec.toml            the spec as given

A preset's figures are the mean over its seeds; each seed's own figures are kept under
`per_seed`. A run that stops early (Ctrl-C, time limit, crash) still writes what it has.

`vary=[(field, values), ...]` also sweeps spec fields (`compression.mode`,
`background.load`): every preset runs with every combination of values, labelled
`<preset>,<field's last name>=<value>,...`.

`jobs=N` runs N simulated runs side by side, each in a process of its own (a core each):
the same figures as one at a time (every run is seeded), in about 1/N of the time. An
emulation has the machine to itself, so emulated runs go one at a time. `cluster` hands the
simulated runs to a Dask cluster instead (study/cluster.py, docs/cluster.md): the same run
folder; a run that fails there is listed under `failed` with its error, the others kept.
"""
import concurrent.futures.process
import itertools
import json
import shutil
import time
from pathlib import Path

import numpy as np

from switch_models import PipelineSpec

from dlcp_emu.experiment import results
from dlcp_emu.experiment.fidelity_estimate import combine_estimates
from dlcp_emu.study.pools import check_memory as _check_memory_side_by_side
from dlcp_emu.study.pools import side_by_side as _side_by_side
from dlcp_emu.study.compare_table import print_json, table  # noqa: F401 (compare.table)
from dlcp_emu.study.job_table import combine_jobs

FIGURES = ("iteration_time_mean_s", "iteration_time_p99_s", "tensor_fct_p50_s", "tensor_fct_p99_s",
           "tensor_fct_p999_s", "loss_fraction", "link_utilization", "scaling_factor", "exposed_comm_mean_s")


def backend_for(name, emu_options=None):
    """The backend a run is handed (`experiment.run`): "sim" (virtual time) or "emu"
    (Mininet); emu_options: more arguments of EmuBackend (capture=, live=)."""
    if name == "sim":
        from dlcp_emu.sim.run import SimBackend
        return SimBackend()
    from dlcp_emu.emu.run import EmuBackend
    return EmuBackend(**(emu_options or {}))


def run_one(spec, preset, run_dir, backend, log):
    """One run on `backend` (a Backend: backend_for) -> its summary."""
    from dlcp_emu.experiment.run import run
    s, _ = run(spec, backend, preset, run_dir, log=log)
    return s


def preset_name(pipeline):
    """What a run under this pipeline (a preset name or a [switch] table) is called."""
    return PipelineSpec.parse(pipeline).name


def variants(spec, presets, vary=()):
    """[(label, preset, spec)] to run, every spec checked before anything runs. presets None:
    the spec's own [variants], each named by its name and run with its [switch]."""
    if presets is None:
        bases = [(name, v.switch, v) for name, v in spec.variant_specs()]
    else:
        bases = [(preset_name(p), p, spec) for p in presets]
    out = []
    for name, preset, base in bases:
        specs = [("", base)]
        for field, values in vary or ():
            leaf = field.rsplit(".", 1)[-1]
            specs = [(f"{label},{leaf}={v}", _with_field(s, field, v))
                     for (label, s), v in itertools.product(specs, values)]
        out += [(name + label, preset, s) for label, s in specs]
    return out


def _with_field(spec, field, value):
    """The spec with one --vary value set; its problems are named against the flag."""
    from dlcp_emu.experiment.spec import SpecError
    try:
        return spec.with_field(field, value)
    except SpecError as e:
        raise SpecError(e.problems, f"--vary {field}={value!r}") from None


def dry_run(spec, presets, seeds=1, backend="emu", vary=None, jobs=1):
    """What `compare` would run, every variant checked as far as a run's set-up goes (the
    scaled topology, the plan from the trace, the transport the backend has), without
    running: lines to print. Raises what the set-up would (ValueError, RuntimeError)."""
    from dlcp_emu.experiment.spec_schedule import is_schedule
    from dlcp_emu.experiment.topology import scaled_topology
    from dlcp_emu.host.plan import make_plan
    from dlcp_emu.sim.run import sim_transport
    from workloads import trace_of
    runs = variants(spec, presets, vary)
    lines = [f"{spec.source}: {len(runs)} variant(s) x {seeds} seed(s) would run ({backend}"
             + (f", {jobs} at a time" if jobs > 1 else "") + "):"]
    for label, preset, v in runs:
        transport = sim_transport(v, preset) if backend == "sim" else \
            v.transport_for(preset)
        topo = scaled_topology(v)
        w = v.workload
        if is_schedule(w):
            lines.append(f"  {label}: {transport} transport ({v.transport['congestion']}), " + _schedule_line(v, topo))
            continue
        plan = make_plan(trace_of(w), v.scale, fusion_bytes=w["fusion_bytes"],
                         fusion_cycle_ms=w["fusion_cycle_ms"])
        lines.append(f"  {label}: {transport} transport ({v.transport['congestion']}), {w['workers']} workers ({w['pattern']}) "
                     f"on {topo.name}, {len(plan.buckets)} buckets, "
                     f"{plan.bytes_per_iteration:,} bytes an iteration"
                     + (", time_dilation auto: chosen before the runs from the spec's simulated "
                        "packet demand and this machine's measured costs" if v.dilation_auto else ""))
    return lines


def _schedule_line(spec, topo):
    """What a dry run says of a schedule run: its ranks, messages and bytes an iteration."""
    from dlcp_emu.experiment.placement import place
    from dlcp_emu.experiment.schedule_setup import schedule_plan, servers_of
    from dlcp_emu.experiment.spec_schedule import schedule_of
    w = spec.workload
    plan = schedule_plan(schedule_of(w), w, spec.scale, servers_of(place(spec, topo), topo, w["gpus_per_server"]))
    return (f"{w['workers']} ranks of a {w['kind']} schedule ({w.get('model') or w.get('path')}) on {topo.name}, "
            f"{plan.n_messages} messages, {int(plan.gid_nbytes.sum()):,} bytes an iteration")


def dilations(runs, log=print, machine=None):
    """[(label, preset, spec, choice)]: each run with a time_dilation of "auto" chosen
    (study/dilation.py), once per spec apart from its switch, so that the presets compare at
    one dilation; choice is what decided it (None where the spec gave a number). Chosen alike
    for the simulator: its figures hardly depend on the dilation, but what it draws does
    (background flows for the time limit, which is wall-clock seconds at that dilation)."""
    from dlcp_emu.study import dilation
    out, chosen = [], {}
    for label, preset, v in runs:
        if not v.dilation_auto:
            out.append((label, preset, v, None))
            continue
        key = json.dumps({k: x for k, x in v.raw.items() if k not in ("switch", "variants")},
                         sort_keys=True, default=str)
        if key not in chosen:
            machine = machine or dilation.measure_machine()
            chosen[key] = dilation.resolve(v, preset, log, machine=machine)[1]
        choice = chosen[key]
        out.append((label, preset, v.with_field("time_dilation", float(choice["dilation"])), choice))
    return out


def check_jobs(jobs, backend, cluster=None):
    """ValueError naming --jobs (--cluster) where runs cannot go side by side (on a cluster);
    RuntimeError where nothing answers at a cluster's address."""
    if jobs != 1 and backend != "sim":
        raise ValueError(f"--jobs {jobs}: only simulated runs (--backend sim) run side by side; "
                         "an emulation has the machine to itself")
    if cluster is not None:
        from dlcp_emu.study.cluster import check_cluster, reach
        check_cluster(cluster, backend, jobs)
        reach(cluster)


def compare(spec, presets, seeds=1, backend="emu", root="results", log=print, vary=None,
            emu_options=None, jobs=1, machine=None, cluster=None):
    """`machine`: the costs "auto" dilations are chosen from (study.dilation.Machine); measured
    when not given. `cluster`: "local" (a Dask cluster of `jobs` processes here, or a
    process a core) or a scheduler's address; simulated runs only."""
    check_jobs(jobs, backend, cluster)
    runs = dilations(variants(spec, presets, vary), log, machine)
    tasks = [Task(label, preset, v_spec if k == 0 else v_spec.with_field("seed", v_spec.seed + k), k, choice)
             for label, preset, v_spec, choice in runs for k in range(seeds)]
    if cluster == "local":   # a running cluster's workers have their own machines' memory
        from dlcp_emu.study.cluster import local_workers
        _check_memory_side_by_side(tasks, local_workers(jobs), local_cluster=True)
    elif jobs > 1 and cluster is None:
        _check_memory_side_by_side(tasks, jobs)
    run_dir = results.new_run_dir(root, f"{spec.name}-{backend}")
    if spec.source != "spec" and Path(spec.source).is_file():
        shutil.copy(spec.source, run_dir / "spec.toml")
    summary = {"spec": spec.name, "backend": backend, "seeds": seeds, "presets": {},
               "started": time.strftime("%Y-%m-%d %H:%M:%S"), "complete": False}
    start = time.monotonic()
    if vary:
        summary["vary"] = [{"field": f, "values": list(v)} for f, v in vary]
    results.point_latest(run_dir)
    done = {label: {} for label, *_ in runs}   # label -> {seed index: summary}

    def record(task, s):
        if task.choice is not None:
            s["time_dilation_choice"] = task.choice
        for c in s.get("captures", ()):   # relative to summary.json's folder
            c["file"] = str(task.folder / c["file"])
        done[task.label][task.k] = s
        summary["presets"][task.label] = _combine([done[task.label][k] for k in sorted(done[task.label])])
        results.write_summary(run_dir, summary)
        if s.get("interrupted"):
            raise KeyboardInterrupt

    def fail(task, error):   # a run that raised on a cluster's worker: said, the rest kept
        summary.setdefault("failed", []).append({"run": task.label, "seed": task.spec.seed, "error": error})
        results.write_summary(run_dir, summary)

    try:
        if cluster is not None:
            from dlcp_emu.study.cluster import on_cluster
            on_cluster(tasks, cluster, jobs, run_dir, record, fail, log)
        elif jobs == 1:
            on = backend_for(backend, emu_options)
            for task in tasks:
                log(f"{task.label} (seed {task.spec.seed}, {task.transport} transport, {backend}):")
                record(task, run_one(task.spec, task.preset, run_dir / task.folder, on, log))
        else:
            _side_by_side(tasks, jobs, run_dir, record, log)
        summary["complete"] = all(s.get("completed") for s in summary["presets"].values()) \
            and not summary.get("failed")
    except KeyboardInterrupt:
        summary["stopped_because"] = "interrupted (Ctrl-C)"
        log("interrupted: keeping what was measured so far")
    except concurrent.futures.process.BrokenProcessPool as e:
        summary["stopped_because"] = f"a simulation process died ({e}); the runs it held are lost"
        log(f"{summary['stopped_because']}: keeping what was measured so far")
    finally:
        summary["runs"] = sum(len(d) for d in done.values())
        summary["elapsed_s"] = round(time.monotonic() - start, 1)
        results.write_summary(run_dir, summary)
    return run_dir, summary


class Task:
    """One run of a comparison: a variant (label) under one of its seeds (k from 0)."""

    def __init__(self, label, preset, spec, k, choice):
        self.label, self.preset, self.spec, self.k, self.choice = label, preset, spec, k, choice
        self.transport = spec.transport_for(preset)
        self.folder = Path(label) / f"seed-{spec.seed}"


def _combine(per_seed):
    out = dict(per_seed[0])
    for key in (k for k in FIGURES if k in out):   # exposed_comm_mean_s: schedule runs only
        values = [s[key] for s in per_seed if s.get(key) is not None]
        out[key] = float(np.mean(values)) if values else None
    out["compression"] = _mean_numbers([s.get("compression", {}) for s in per_seed])
    if "exposed_comm_by_dim_s" in out:   # a schedule's: a dimension a seed did not wait on counts 0
        dims = dict.fromkeys(d for s in per_seed for d in s.get("exposed_comm_by_dim_s") or {})
        out["exposed_comm_by_dim_s"] = {d: float(np.mean([(s.get("exposed_comm_by_dim_s") or {}).get(d, 0.0)
                                                          for s in per_seed])) for d in dims}
    if "traffic_classes" in out:   # a schedule's: each class's figures, the mean over the seeds that have it
        out["traffic_classes"] = {c: _mean_numbers([s["traffic_classes"][c] for s in per_seed
                                                    if c in (s.get("traffic_classes") or {})])
                                  for c in dict.fromkeys(c for s in per_seed for c in s.get("traffic_classes") or {})}
    if "accuracy" in out:
        acc = [s["accuracy"] for s in per_seed]
        out["accuracy"] = _mean_numbers(acc)
        # A mean over the seeds that reached the target alone would flatter: say how many did.
        out["accuracy"]["seeds_reaching_target"] = sum(a["iterations_to_target"] is not None for a in acc)
        if out["accuracy"]["seeds_reaching_target"] < len(acc):
            out["accuracy"]["iterations_to_target"] = out["accuracy"]["time_to_target_s"] = None
    out["loss_within_bound"] = all(s["loss_within_bound"] for s in per_seed)
    if out.get("jobs"):
        out["jobs"], out["jain_fairness"] = combine_jobs(per_seed)
    out["completed"] = all(s.get("completed") for s in per_seed)
    fid = [s["fidelity"] for s in per_seed]
    worst = {}   # every figure of the seeds' fidelity, its worst (largest) over the seeds
    for key in dict.fromkeys(k for f in fid for k, v in f.items() if _number(v)):
        values = [f[key] for f in fid if _number(f.get(key))]
        worst[key] = max(values) if values else None
    # Each kind of process's CPU seconds, a mean over the seeds.
    cpus = [f["cpu_s"] for f in fid if f.get("cpu_s")]
    if cpus:
        worst["cpu_s"] = {k: _mean_or_none([c.get(k) for c in cpus]) for k in cpus[0]}
    out["fidelity"] = {**worst, "fell_behind": any(f.get("fell_behind") for f in fid)}
    if any("estimate" in f for f in fid):   # emulated: the seeds' mean, as the figures are
        out["fidelity"].update(combine_estimates(fid))
    if fid and fid[0].get("jobs"):   # several jobs emulated: each job's own estimate too (emu/job_fidelity.py)
        out["fidelity"]["jobs"] = {name: combine_estimates([f["jobs"][name] for f in fid]) for name in fid[0]["jobs"]}
    if fid and "cpus" in fid[0]:   # the processes' placement (emu/placement.py), the same each run
        out["fidelity"]["cpus"] = fid[0]["cpus"]
    if len(per_seed) > 1:
        out["per_seed"] = per_seed
    return out


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _mean_or_none(values):
    values = [v for v in values if v is not None]
    return round(float(np.mean(values)), 3) if values else None


def _mean_numbers(dicts):
    """The first dict, with every number replaced by its mean over the dicts that have it."""
    out = dict(dicts[0])
    for k in out:
        values = [d[k] for d in dicts if isinstance(d.get(k), (int, float)) and not isinstance(d[k], bool)]
        if values:
            out[k] = float(np.mean(values))
    return out
