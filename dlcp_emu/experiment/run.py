"""One way to run an experiment, in either backend:

    s, frames = run(spec, SimBackend(), "dlcp", run_dir)      # or EmuBackend()

The steps and their order are the same for both and live here: the backend names its
transport (or refuses), the topology is scaled, the ranks placed, the plan made, the
background flows drawn; the backend runs it (`Backend.execute`); its records become the
tables and the summary, the backend adds its own figures, and every table is written.
"""
from pathlib import Path

from dlcp_emu.experiment.accuracy import add_accuracy, trace_for
from dlcp_emu.experiment.background import background_flows
from dlcp_emu.experiment.backend import Backend, Setup
from dlcp_emu.experiment.job_results import (add_slowdowns, combined_labels, job_frames, job_port_table,
                                             jobs_active_seconds)
from dlcp_emu.experiment.jobs_run import prepare_jobs
from dlcp_emu.experiment.placement import place
from dlcp_emu.experiment.summary import finish, summary
from dlcp_emu.experiment.tables import active_seconds, port_table, queue_table, tables
from dlcp_emu.experiment.topology import scaled_topology
from dlcp_emu.experiment.schedule_results import add_schedule_results, message_table
from dlcp_emu.experiment.schedule_setup import schedule_plan, servers_of
from dlcp_emu.experiment.spec_schedule import is_schedule, schedule_of
from dlcp_emu.host.plan import make_plan


def prepare(spec, backend: Backend, pipeline, run_dir=None, keep_results=False) -> Setup:
    """The run as the backend is given it (nothing started, nothing written)."""
    topology = scaled_topology(spec)
    if spec.jobs:   # the whole spec first: a backend may refuse several jobs
        backend.transport(spec, pipeline)
    jobs = prepare_jobs(spec, backend, pipeline, lambda s, p: _trace_plan(s, p, topology)) if spec.jobs else ()
    if jobs:
        transport, placement, trace, plan = jobs[0].transport, jobs[0].placement, jobs[0].trace, jobs[0].plan
    else:
        transport = backend.transport(spec, pipeline)
        placement = place(spec, topology)
        trace, plan = _trace_plan(spec, placement, topology)
    return Setup(spec, pipeline, transport, topology, placement, trace, plan,
                 background_flows(spec, topology) if spec.background else {},
                 None if run_dir is None else Path(run_dir).resolve(), keep_results, jobs)


def _trace_plan(spec, placement, topology):
    """(trace, plan) of a one-job spec: a schedule as `trace`, the ranks' programs as `plan`."""
    w = spec.workload
    if is_schedule(w):
        trace = schedule_of(w)
        return trace, schedule_plan(trace, w, spec.scale, servers_of(placement, topology, w["gpus_per_server"]))
    trace = trace_for(spec)
    return trace, make_plan(trace, spec.scale, fusion_bytes=w["fusion_bytes"], fusion_cycle_ms=w["fusion_cycle_ms"])


def run(spec, backend: Backend, pipeline, run_dir, *, log=print, keep_results=False):
    """Runs `pipeline` (a preset name or a [switch] table) of `spec` on `backend`; writes the
    run's tables and summary under run_dir. Returns (summary dict, {table name: DataFrame},
    with the backend's handles, e.g. the simulator's `hosts`). keep_results: the workers keep
    the gradients they synchronised (tests compare them)."""
    setup = prepare(spec, backend, pipeline, run_dir, keep_results)
    setup.run_dir.mkdir(parents=True, exist_ok=True)
    out = backend.execute(setup, log)
    scale, t0 = spec.scale, out.t0_ns
    its, tens, dels = tables(out.records, scale, t0_ns=t0)
    # A schedule's messages are its tensors: utilisation is averaged up to the last one done.
    msgs = message_table(out.records, scale, t0) if is_schedule(spec.workload) else None
    active = active_seconds(tens) if msgs is None else active_seconds(msgs)
    if len(setup.jobs) > 1:   # several jobs: to the last job's end (a schedule's or a trace's)
        active = jobs_active_seconds(its, tens)
    ports = port_table(out.counters, active, scale,
                       roles={sw: setup.topology.role_of(sw) for sw in out.counters})
    s = summary(spec, pipeline, setup.transport, its, tens, dels, ports, out.fidelity, out.duration_s,
                setup.plan)
    s["backend"] = backend.name
    backend.summarize(setup, out, s)
    frames = {"iterations": its, "tensors": tens, "deliveries": dels, "ports": ports,
              "queues": queue_table(out.queue_samples, t0, scale), **out.frames}
    if setup.jobs:   # per job; the figures above are of every job's tables together
        s["jobs"], by_job = job_frames(setup, out, pipeline, ports)
        frames.update(by_job)
        frames["job_ports"] = job_port_table(out.counters, setup, s["jobs"])
        s.update(combined_labels(setup))
        frames["jobs"] = add_slowdowns(s, setup, backend, pipeline, run, log)
    add_accuracy(spec, out.records, scale, s, frames, t0)
    if is_schedule(spec.workload) and len(setup.jobs) <= 1:
        add_schedule_results(setup.plan, out.records, scale, s, frames, msgs)
    finish(setup.run_dir, s, frames, out.interrupted)
    backend.close(setup, out, s)
    return s, {**frames, **out.handles}

