"""A run of several jobs ([[jobs]]): per job its tables and figures (iteration times, tail
completion per traffic class, loss against its bound, packets dropped), per job and port the
switches' counters, and each job's slowdown: its mean iteration time here over the same job's
alone, on the same placement and backend. `run_jobs` makes those alone runs itself, one a
job, each in a folder `alone-<job>` of the run (a spec of one job is its own alone run:
slowdown 1), and Jain's fairness index over the slowdowns says how evenly the jobs suffered.
"""
import numpy as np
import pandas as pd

from dlcp_emu.experiment.results import percentile, write_summary
from dlcp_emu.experiment.schedule_results import add_schedule_results, message_table
from dlcp_emu.experiment.spec import parse_spec
from dlcp_emu.experiment.spec_schedule import is_schedule
from dlcp_emu.experiment.summary import summary
from dlcp_emu.experiment.tables import tables
from dlcp_emu.host.background import JOB as BACKGROUND_JOB
from switch_models.packet import NO_JOB

# What a job's line of the summary keeps of its own summary.
JOB_KEYS = ("model", "pattern", "transport", "workers", "iteration_time_mean_s", "iteration_time_p99_s",
            "tensor_fct_p50_s", "tensor_fct_p99_s", "loss_fraction", "loss_bound", "loss_within_bound",
            "iterations_measured", "traffic_classes")
JOB_TABLE = ["job", "hosts", "start_ms", "model", "transport", "iteration_time_mean_s", "iteration_time_p99_s",
             "tensor_fct_p99_s", "loss_fraction", "loss_bound", "loss_within_bound", "dropped_packets",
             "alone_iteration_time_mean_s", "slowdown"]


def jain(values):
    """Jain's fairness index (sum x)^2 / (n sum x^2): 1 when all are equal, 1/n at worst."""
    x = np.asarray([v for v in values if v is not None], dtype=float)
    return float(x.sum() ** 2 / (len(x) * (x ** 2).sum())) if len(x) and (x ** 2).sum() > 0 else None


def jobs_active_seconds(its, tens):
    """The span link utilisation is averaged over, from the start to the last job's end: the
    last synchronised tensor or the last finished iteration (a schedule has no tensors)."""
    ends = [float(tens["done_s"].max())] if len(tens) and tens["done_s"].notna().any() else []
    if len(its) and its["total_s"].notna().any():
        ends.append(float((its["start_s"] + its["total_s"]).max()))
    return max(ends) if ends else None


def job_frames(setup, out, pipeline, ports):
    """({job: its summary}, {table: DataFrame with a `job` column}) of a run of [[jobs]]."""
    scale, t0 = setup.spec.scale, out.t0_ns
    per, parts = {}, {}
    for job in setup.jobs:
        records = [r for r in out.records if r.get("job") == job.name]
        its, tens, dels = tables(records, scale, t0_ns=t0)
        s = summary(job.spec, pipeline, job.transport, its, tens, dels, ports, out.fidelity, out.duration_s,
                    job.plan)
        frames = {"iterations": its, "tensors": tens, "deliveries": dels}
        if is_schedule(job.spec.workload):
            add_schedule_results(job.plan, records, scale, s, frames, message_table(records, scale, t0))
        else:   # a trace's messages are all gradients
            fct = tens["fct_s"].dropna() if len(tens) else []
            s["traffic_classes"] = {"gradient": {"messages": int(len(tens)), "fct_p50_s": percentile(fct, 50),
                                                 "fct_p99_s": percentile(fct, 99),
                                                 "lost_bytes": int(tens["lost_bytes"].sum()) if len(tens) else 0}}
        per[job.name] = {"hosts": list(job.placement.host_of_rank.values()),
                         "start_ms": job.spec.scale.seconds(job.start_ns) * 1e3,
                         **{k: s.get(k) for k in JOB_KEYS}}
        for name, frame in frames.items():
            if len(frame):
                parts.setdefault(name, []).append(frame.assign(job=job.name)[["job", *frame.columns]])
    return per, {name: pd.concat(p, ignore_index=True) for name, p in parts.items()}


def combined_labels(setup):
    """The run's own labels over its jobs: models and patterns joined, every rank a worker,
    no scaling factor (one job's compute over every job's iterations means nothing)."""
    jobs = setup.jobs
    if len(jobs) == 1:
        return {}   # the job's own, as its one-job spec labels it
    join = lambda key: "+".join(dict.fromkeys(str(j.spec.workload.get(key) or j.spec.workload.get("trace")
                                                  or j.spec.workload.get("kind")) for j in jobs))
    out = {"model": join("model"), "pattern": join("pattern"),
           "workers": sum(j.spec.workload["workers"] for j in jobs), "scaling_factor": None}
    return out


def job_port_table(counters, setup, jobs):
    """Per switch, egress port and job: packets and bytes sent, packets and bytes dropped
    (each column sums over the jobs to the port's own). Traffic of no training job is
    `background` (its job id) or `other` (no DLCP header: no job the switch can read).
    Each line of `jobs` (the summary's) gets its packets dropped at the switches."""
    names = {job.wire_id: job.name for job in setup.jobs} or {0: "training"}
    names = {**names, BACKGROUND_JOB: "background", NO_JOB: "other"}
    rows = [{"switch": sw, "port": int(port), "job": names.get(int(j), f"job{j}"), "tx_packets": row[0],
             "tx_bytes": row[1], "dropped": row[2], "drop_bytes": row[3]}
            for sw, c in counters.items() for port, p in c["ports"].items()
            for j, row in p.get("jobs", {}).items()]
    table = pd.DataFrame(rows, columns=["switch", "port", "job", "tx_packets", "tx_bytes", "dropped", "drop_bytes"])
    for name, line in jobs.items():
        line["dropped_packets"] = int(table.loc[table["job"] == name, "dropped"].sum())
    return table


def add_slowdowns(s, setup, backend, pipeline, run, log):
    """Each job's slowdown against its alone run (made here, `alone-<job>` under the run's
    folder), and Jain's index over them; the jobs' table."""
    jobs = s["jobs"]
    for job in setup.jobs:
        line = jobs[job.name]
        if len(setup.jobs) == 1:
            alone, line["alone_run"] = line["iteration_time_mean_s"], "this run (its only job)"
        else:
            log(f"  job {job.name} alone on its hosts ...")
            spec = alone_spec(setup.spec, job)
            folder = setup.run_dir / f"alone-{job.name}"
            a, _ = run(spec, backend, alone_pipeline(pipeline, job), folder, log=lambda _: None)
            write_summary(folder, a)
            alone, line["alone_run"] = a["jobs"][job.name]["iteration_time_mean_s"], f"alone-{job.name}"
        line["alone_iteration_time_mean_s"] = alone
        mean = line["iteration_time_mean_s"]
        line["slowdown"] = mean / alone if mean and alone else None
    s["jain_fairness"] = jain(line["slowdown"] for line in jobs.values())
    s["slowdown_from"] = "each job alone on its hosts, the same backend and switch (alone-<job> folders)"
    return pd.DataFrame([{"job": name, **{k: (", ".join(v) if k == "hosts" else v) for k, v in line.items()
                                          if k in JOB_TABLE}} for name, line in jobs.items()],
                        columns=JOB_TABLE)


def alone_spec(spec, job):
    """The spec with `job` alone: its table with its hosts as an explicit placement, the job
    classifier's rules of the other jobs left out."""
    raw = dict(spec.raw)
    table = next(t for t in raw["jobs"] if t.get("name") == job.name)
    raw["jobs"] = [{**table, "placement": list(job.placement.host_of_rank.values())}]
    raw.pop("variants", None)
    rule = (raw.get("switch") or {}).get("classifier")
    if isinstance(rule, dict) and rule.get("name") == "job":
        raw["switch"] = {**raw["switch"], "classifier": {**rule, "jobs": {
            k: v for k, v in rule.get("jobs", {}).items() if k == job.name} or {job.name: rule.get("other_class", 0)}}}
    return parse_spec(raw, spec.source)


def alone_pipeline(pipeline, job):
    """The pipeline for the job's alone run: a job classifier's classes with the job's own
    class at id 0 (alone, the job is the spec's first)."""
    if not isinstance(pipeline, dict) or not isinstance(pipeline.get("classifier"), dict) \
            or pipeline["classifier"].get("name") != "job":
        return pipeline
    rule = pipeline["classifier"]
    classes = rule["classes"]
    other = rule.get("other_class", rule.get("n_classes", 8) - 1)
    own = classes[job.wire_id] if job.wire_id < len(classes) else other
    return {**pipeline, "classifier": {**rule, "classes": [own]}}

