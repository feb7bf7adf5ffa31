"""Several training jobs on one fabric: a spec's `[[jobs]]`.

    [[jobs]]
    name = "resnet"             # unique: letters, digits, '-' and '_'
    placement = "packed"        # packed: fill servers and leaves in order | spread: round robin
                                # over the leaves | random (with `seed`) | a list of host names
    start_ms = 0.0              # real-world milliseconds after the run's start
    seed = 1                    # random placement's draw (default: the spec's seed)
    [jobs.workload]             # as [workload]: a zoo model, a trace or a schedule
    [jobs.transport]            # laid over the spec's [transport], field by field

Each job is checked as the one-job spec it would be (the spec less [[jobs]], with the job's
workload and transport), so every field means what it means there. A spec with one
[workload] is a one-job spec, unchanged. Placements are made here, before anything runs:
overlapping explicit hosts, more ranks than hosts left and an unknown host are errors naming
the job's field. Policies take the hosts no explicit placement took, job by job in file order.

A job's id on the wire (the header's job field) is its index, but the background's id (1,
`host.background.JOB`) is skipped: jobs are 0, 2, 3, ... so the first job is the one-job
spec's training job (0) in every table and in the core.
"""
import dataclasses
import random
from dataclasses import dataclass

from switch_models import PipelineSpec, SpecError as SwitchSpecError

from dlcp_emu.experiment.checks import REQUIRED, Checker, SpecError, number, integer, one_of
from dlcp_emu.host.background import JOB as BACKGROUND_JOB
from workloads import PATTERNS

POLICIES = ("packed", "spread", "random")
MAX_JOBS = 16


@dataclass(frozen=True)
class Job:
    name: str
    index: int            # in file order
    wire_id: int          # the header's job field (`wire_id`)
    spec: object          # the one-job Spec this job is alone
    start_ms: float       # real-world
    hosts: tuple          # rank -> host name, by rank (workers first, then parameter servers)


def wire_id(index):
    """The job field of job `index`'s packets: its index, skipping the background's."""
    return index if index < BACKGROUND_JOB else index + 1


def _is_name(v):
    return isinstance(v, str) and 0 < len(v) <= 32 and v.isascii() and v.replace("-", "").replace("_", "").isalnum()


JOB_FIELDS = {
    "name": (REQUIRED, _is_name, "at most 32 ASCII letters, digits, '-' and '_'"),
    "placement": ("packed", lambda v: one_of(POLICIES)(v) or (
        isinstance(v, list) and len(v) > 0 and all(isinstance(h, str) for h in v)),
        f"one of {', '.join(POLICIES)}, or a list of host names (one a rank)"),
    "start_ms": (0.0, number(0, 3_600_000), "a number of milliseconds in 0..3600000"),
    "seed": (None, integer(0), "an integer >= 0 (random placement's draw)"),
    "workload": (REQUIRED, lambda v: isinstance(v, dict), "a table (as [workload])"),
    "transport": ({}, lambda v: isinstance(v, dict), "a table (laid over [transport])"),
}


def ranks_of(workload):
    """How many hosts a job's workload takes: its workers, and its parameter servers."""
    pattern = PATTERNS.get(workload.get("pattern"))
    return workload["workers"] + (workload.get("ps", 0) if pattern is not None and pattern.uses_ps else 0)


def parse_jobs(raw, source, parse_one):
    """(the first job's one-job Spec, (Job, ...)) of a spec with [[jobs]]; SpecError naming
    every bad field. parse_one: `spec.parse_spec` (this module sits below it)."""
    c = Checker()
    jobs = raw["jobs"]
    if not (isinstance(jobs, list) and 1 <= len(jobs) <= MAX_JOBS and all(isinstance(j, dict) for j in jobs)):
        raise SpecError([f"jobs: must be 1..{MAX_JOBS} tables ([[jobs]]), one a job"], source)
    for key, why in (("workload", "each job has its own ([jobs.workload])"),
                     ("training", "jobs train no real model")):
        if key in raw:
            c.problems.append(f"{key}: a spec of [[jobs]] has no [{key}]: {why}")
    base = {k: v for k, v in raw.items() if k not in ("jobs", "variants")}
    parsed = []
    for i, table in enumerate(jobs):
        job = c.take(table, f"jobs[{i}]", JOB_FIELDS)
        if not isinstance(job.get("workload"), dict) or not isinstance(job.get("transport"), dict):
            continue
        if "placement" in job["workload"]:
            c.problems.append(f"jobs[{i}].workload.placement: a job is placed by jobs[{i}].placement")
        transport = {**(raw.get("transport") or {}), **job["transport"]}
        try:
            one = parse_one({**base, "workload": job["workload"], "transport": transport,
                             **({"switch": _without_job_rules(raw["switch"])} if "switch" in raw else {})},
                            source)
        except SpecError as e:
            c.problems.extend(f"jobs[{i}].{p}" if p.startswith(("workload", "transport")) else f"jobs[{i}]: {p}"
                              for p in e.problems)
            continue
        parsed.append((i, job, one))
    names = [j["name"] for _, j, _ in parsed]
    for name in sorted({n for n in names if names.count(n) > 1}):
        c.problems.append(f"jobs: the name {name!r} is given to more than one job; names must be unique")
    if c.problems:
        raise SpecError(c.problems, source)
    placed = _place(c, [(i, job, one) for i, job, one in parsed], parsed[0][2], raw)
    if c.problems:
        raise SpecError(c.problems, source)
    out = tuple(Job(job["name"], i, wire_id(i), one, float(job["start_ms"]), placed[i])
                for i, job, one in parsed)
    return parsed[0][2], out


def parse_jobs_spec(raw, source, parse_one, check_variants):
    """The Spec of a spec with [[jobs]]: the first job's one-job Spec with every job, the
    job classifier's rules resolved (`check_job_rules`) and the spec's variants checked."""
    first, jobs = parse_jobs(raw, source, parse_one)
    c = Checker()
    switch = check_job_rules(c, raw.get("switch") or {}, {j.name: j.wire_id for j in jobs})
    variants = raw.get("variants", {})
    if not (isinstance(variants, dict) and all(isinstance(t, dict) for t in variants.values())):
        c.problems.append("variants: must be a table of tables, one per named run")
    elif not c.problems:
        check_variants(c, variants, raw, source)
    if c.problems:
        raise SpecError(c.problems, source)
    return dataclasses.replace(first, name=raw.get("name", first.name), switch=switch, variants=dict(variants),
                               jobs=jobs, raw=raw)


def check_job_rules(c, switch, ids):
    """The [switch] table with a job classifier's rules, `jobs = {name = class}`, as the
    switch model's `classes` (a class by job id; ids no rule names go to `other_class`).
    ids: {job name: wire id}, None for a one-job spec (which has no jobs to name)."""
    rule = switch.get("classifier") if isinstance(switch, dict) else None
    if not isinstance(rule, dict) or rule.get("name") != "job":
        return switch
    where = "switch.classifier"
    if ids is None:
        c.problems.append(f"{where}: the job classifier names jobs of [[jobs]]; this spec has one [workload]")
        return switch
    if "classes" in rule:
        c.problems.append(f"{where}.classes: name the jobs instead: jobs = {{name = class, ...}}")
        return switch
    jobs = rule.get("jobs")
    if not (isinstance(jobs, dict) and jobs and all(isinstance(v, int) and not isinstance(v, bool)
                                                     for v in jobs.values())):
        c.problems.append(f"{where}.jobs: a table of job name = class (an integer), one a job; "
                          f"jobs: {', '.join(ids)}")
        return switch
    unknown = [name for name in jobs if name not in ids]
    if unknown:
        c.problems.append(f"{where}.jobs: no job {unknown[0]!r} in this spec; jobs: {', '.join(ids)}")
        return switch
    n = rule.get("n_classes", 8)
    other = rule.get("other_class", n - 1 if isinstance(n, int) else 0)
    classes = [other] * (max(ids[name] for name in jobs) + 1)
    for name, cls in jobs.items():
        classes[ids[name]] = cls
    out = {**switch, "classifier": {**{k: v for k, v in rule.items() if k != "jobs"}, "classes": classes}}
    try:
        PipelineSpec.parse(out)
    except SwitchSpecError as e:
        c.problems.append(f"switch: {e}")
    return out


def _place(c, parsed, first, raw):
    """{job index: hosts by rank}: explicit placements first (checked against each other),
    then each policy's job, in file order, on the hosts left."""
    topo = first.build_topology()
    hosts = topo.hosts()
    taken, out = {}, {}
    for i, job, one in parsed:
        want = job["placement"]
        if not isinstance(want, list):
            continue
        n = ranks_of(one.workload)
        unknown = [h for h in want if h not in hosts]
        if unknown:
            c.problems.append(f"jobs[{i}].placement: no host {unknown[0]!r} in the topology; hosts: "
                              f"{hosts[0]}..{hosts[-1]}")
            continue
        if len(want) != n or len(set(want)) != n:
            c.problems.append(f"jobs[{i}].placement: {len(want)} host(s) for {n} rank(s); give one distinct "
                              f"host a rank (workers, then parameter servers)")
            continue
        for h in want:
            if h in taken:
                c.problems.append(f"jobs[{i}].placement: host {h} is also placed for jobs[{taken[h]}]; "
                                  "explicit placements must not overlap (a host runs one job)")
                break
            taken[h] = i
        out[i] = tuple(want)
    for i, job, one in parsed:
        if i in out or isinstance(job["placement"], list):
            continue
        free = [h for h in hosts if h not in taken]
        n = ranks_of(one.workload)
        if n > len(free):
            c.problems.append(f"jobs[{i}].workload.workers: job {job['name']!r} has {n} rank(s) but only "
                              f"{len(free)} host(s) are left of {len(hosts)}; fewer ranks, or a larger topology")
            continue
        seed = job["seed"] if job["seed"] is not None else raw.get("seed", 1)
        out[i] = tuple(_policy(job["placement"], free, n, topo, seed))
        taken.update({h: i for h in out[i]})
    return out


def _policy(policy, free, n, topo, seed):
    if policy == "random":
        return random.Random(seed).sample(free, n)
    if policy == "spread":   # round robin over the switches hosts hang under (leaves; servers)
        racks = {}
        for h in free:
            racks.setdefault(topo.attached_switch(h)[0], []).append(h)
        columns = list(racks.values())
        free = [col[k] for k in range(max(map(len, columns))) for col in columns if k < len(col)]
    return free[:n]          # packed: the topology's order is server by server, leaf by leaf


def _without_job_rules(switch):
    """The switch table as a one-job spec checks it: a job classifier's rules name jobs,
    which only the whole spec knows (`job_rules` resolves them)."""
    if not isinstance(switch, dict) or not isinstance(switch.get("classifier"), dict) \
            or switch["classifier"].get("name") != "job":
        return switch
    return {**switch, "classifier": "single"}
