"""A run of several jobs ([[jobs]], experiment/jobs_spec.py) as the backends are given it:
each job placed on its hosts, its own trace or schedule and plan, its transport, its start.
A one-job run is the same as one job of this kind (`job_setups`), so a backend builds every
run by one loop over its jobs."""
from dataclasses import dataclass
from typing import Any

from dlcp_emu.experiment.placement import Placement
from workloads import PATTERNS


@dataclass(frozen=True)
class JobSetup:
    name: str              # "" for a one-job spec's job
    wire_id: int           # the header's job field (jobs_spec.wire_id)
    spec: Any              # the one-job Spec this job is alone
    transport: str         # the transport this backend runs for the job
    placement: Placement
    trace: Any
    plan: Any
    start_ns: int = 0      # emulated ns after the run's start


def job_placement(job):
    """The job's Placement from its hosts (jobs_spec placed them: workers, then parameter servers)."""
    w = job.spec.workload
    n = w["workers"]
    ps = tuple(range(n, len(job.hosts))) if PATTERNS[w["pattern"]].uses_ps else ()
    return Placement(n, ps, dict(enumerate(job.hosts)))


def prepare_jobs(spec, backend, pipeline, make_plan):
    """(JobSetup, ...) of a spec of [[jobs]]. make_plan(job spec, placement) -> (trace, plan):
    experiment.run's, so a job's plan is made as a one-job spec's is."""
    out = []
    for job in spec.jobs:
        placement = job_placement(job)
        trace, plan = make_plan(job.spec, placement)
        out.append(JobSetup(job.name, job.wire_id, job.spec, backend.transport(job.spec, pipeline), placement,
                            trace, plan, job.spec.scale.delay_ns(int(round(job.start_ms * 1e6)))))
    return tuple(out)


def job_setups(setup):
    """The run's jobs: its [[jobs]], or its one job."""
    if setup.jobs:
        return setup.jobs
    return (JobSetup("", 0, setup.spec, setup.transport, setup.placement, setup.trace, setup.plan),)
