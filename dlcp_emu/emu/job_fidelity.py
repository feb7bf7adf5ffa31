"""The fidelity verdict of an emulated run of several jobs ([[jobs]]): each job judged by its
own hosts' figures and its own plan (its compute, the steps of its collectives, its mean
iteration), the switches' figures shared; the run's verdict is its worst job's. A ResNet
ring and an LLM's schedule on one fabric keep their schedules differently: the LLM's many
short steps feel a host's wake-up where the ring's few long ones do not."""
from dlcp_emu.experiment.fidelity import host_fidelity, judge
from dlcp_emu.experiment.fidelity_estimate import critical_steps, worst_pct
from dlcp_emu.experiment.results import measured_iterations
from dlcp_emu.experiment.tables import tables
from dlcp_emu.host.schedule_plan import SchedulePlan


def plan_steps(spec, placement, plan):
    """The collective's steps an iteration on the critical path of a job's plan."""
    if isinstance(plan, SchedulePlan):
        return plan.critical_steps
    return critical_steps(spec.workload["pattern"], len(plan.buckets), workers=placement.workers,
                          ps_ranks=placement.ps_ranks, group_size=spec.workload["group_size"])


def job_verdicts(jobs, records, switch_figures, *, frame_ns, dilation, tolerance):
    """{job name: {"estimate", "estimate_flagged", "fell_behind", "behind_because", host
    figures}}: each job's records (their `job`) judged as a one-job run of its plan would be.
    switch_figures: the run's `switch_fidelity` (every job crosses the same switches)."""
    out = {}
    for job in jobs:
        own = [r for r in records if r.get("job") == job.name]
        fig = {**switch_figures, **host_fidelity(own, job.plan.compute_ns, frame_ns)}
        its, _, _ = tables(own, job.spec.scale)
        done = measured_iterations(its)
        mean = float(done["total_s"].mean()) if len(done) else None
        compute_s = job.spec.scale.seconds(job.plan.compute_ns)
        verdict = judge(fig, frame_ns=frame_ns, compute_share=compute_s / mean if mean else None,
                        iteration_s=mean, dilation=dilation, tolerance=tolerance,
                        steps=plan_steps(job.spec, job.placement, job.plan))
        out[job.name] = {**{k: fig[k] for k in fig if k not in switch_figures}, **verdict}
    return out


def worst_verdict(verdicts):
    """The run's verdict from its jobs' (job_verdicts): the estimate of the job furthest off,
    flagged if any job is, every job's fixed-rule reasons (named by job)."""
    name = max(verdicts, key=lambda n: abs(worst_pct(verdicts[n]["estimate"])))
    v = verdicts[name]
    return {"estimate": v["estimate"], "estimate_of_job": name, "tolerance": v["tolerance"],
            "estimate_flagged": any(x["estimate_flagged"] for x in verdicts.values()),
            "fell_behind": any(x["fell_behind"] for x in verdicts.values()),
            "behind_because": list(dict.fromkeys(b for x in verdicts.values() for b in x["behind_because"]))}
