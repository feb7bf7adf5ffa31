"""A comparison of specs with [[jobs]]: per job and preset its iteration times, its slowdown
against itself alone, its loss against its bound and the tail completion of each traffic
class, and per preset Jain's index over the slowdowns: which policy helps which job. Seeds
are averaged figure by figure, as the presets' own figures are (study/compare.py)."""
import numpy as np

FIGURES = ("iteration_time_mean_s", "iteration_time_p99_s", "alone_iteration_time_mean_s", "slowdown",
           "loss_fraction")


def combine_jobs(per_seed):
    """The seeds' `jobs` with each figure a mean over the seeds, and Jain's index likewise."""
    out = {}
    for name, line in per_seed[0]["jobs"].items():
        lines = [s["jobs"][name] for s in per_seed]
        out[name] = {**line, **{k: _mean([x.get(k) for x in lines]) for k in FIGURES},
                     "loss_within_bound": all(x.get("loss_within_bound") for x in lines)}
    return out, _mean([s.get("jain_fairness") for s in per_seed])


def _mean(values):
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


def _ms(v):
    return "-" if v is None else f"{v * 1e3:.1f}"


def job_table(summary):
    """The plain-text table, or "" when no preset ran [[jobs]]."""
    presets = {p: s for p, s in summary["presets"].items() if s.get("jobs")}
    if not presets:
        return ""
    classes = list(dict.fromkeys(c for s in presets.values() for line in s["jobs"].values()
                                 for c in (line.get("traffic_classes") or {})))
    head = ["job", "preset", "iter mean", "iter p99", "alone", "slowdown", "loss",
            *(f"{c} p99" for c in classes)]
    rows = []
    jobs = list(dict.fromkeys(j for s in presets.values() for j in s["jobs"]))
    for job in jobs:
        for preset, s in presets.items():
            line = s["jobs"].get(job)
            if line is None:
                continue
            tc = line.get("traffic_classes") or {}
            rows.append([job, preset, _ms(line["iteration_time_mean_s"]), _ms(line["iteration_time_p99_s"]),
                         _ms(line.get("alone_iteration_time_mean_s")),
                         "-" if line.get("slowdown") is None else f"{line['slowdown']:.3f}",
                         f"{(line.get('loss_fraction') or 0) * 100:.3f}%"
                         + ("" if line.get("loss_within_bound", True) else " > bound"),
                         *(_ms(tc[c].get("fct_p99_s")) if c in tc else "-" for c in classes)])
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    lines = ["  ".join(str(x).rjust(w) for x, w in zip(r, widths)) for r in [head, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    fair = "  ".join(f"{p} {s['jain_fairness']:.3f}" for p, s in presets.items()
                     if s.get("jain_fairness") is not None)
    return ("\n\nper job (slowdown: iteration mean against the job alone on its hosts; "
            "<class> p99: tail completion, ms)\n" + "\n".join(lines) + f"\nJain's fairness over the slowdowns: {fair}")
