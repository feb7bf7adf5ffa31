"""`dlcp-emu validate`: the same spec emulated and simulated, side by side.

One model, two clocks: the emulator (Mininet, real frames, wall clock) and the simulator
(virtual time) run the same switch models, transports and agents, so their mean iteration
times should agree; how closely is the simulator's fidelity, and this measures it. Each
preset runs `seeds` times in each backend; the figure compared is the mean over seeds, with
the spread across seeds beside it (single runs of one seed vary by several percent in
emulation: host timers are late by milliseconds, and some policies amplify that).

    results/<stamp>-<spec>-validate/validation.json   the comparison (this module's output)
    results/<stamp>-<spec>-emu/, ...-sim/             the two `compare` runs it made

One seed of either backend is one draw: an emulated run does not replay its seed's exact
meeting of flows (the kernel's timing decides which packet a queue takes first), and moves
about as much as the simulator does from seed to seed (docs/fidelity.md). So the simulator
also runs further seeds (`noise_seeds` in all), and the report gives the spread a difference
of two agreeing backends would have at this many seeds: the noise a verdict sits in.
"""
import math

import numpy as np

from dlcp_emu.study import compare, compare_table, dilation
from dlcp_emu.experiment import results
from dlcp_emu.jsonio import write_json_atomic

FIGURES = (("iteration_time_mean_s", "iter mean"), ("tensor_fct_p99_s", "fct p99"))
NOISE_SEEDS = 5    # the simulator's seeds the noise is measured over (a few seconds each)
# A spec of [[jobs]]: each job's figures too (compare's `jobs`, study/job_table.py).
JOB_FIGURES = (("iteration_time_mean_s", "iter mean"), ("alone_iteration_time_mean_s", "alone"),
               ("slowdown", "slowdown"))


def validate(spec, presets, seeds=1, tolerance=0.05, root="results", log=print, noise_seeds=NOISE_SEEDS):
    # Both backends at the dilation the emulation chooses: the simulator's draws (background
    # flows over the time limit, rounding of scaled times) follow the dilation too.
    spec, choice = dilation.resolve(spec, presets[0], log)
    runs = {}
    for backend in ("emu", "sim"):
        log(f"== {backend} ==")
        run_dir, summary = compare.compare(spec, presets, seeds=seeds, backend=backend, root=root, log=log)
        runs[backend] = {"dir": str(run_dir), "summary": summary}
    extra = max(0, noise_seeds - seeds)
    if extra:   # the seeds after those compared: how far one seed moves
        log(f"== sim, seeds {spec.seed + seeds}-{spec.seed + noise_seeds - 1}: the noise ==")
        noise_dir, noise = compare.compare(spec.with_field("seed", spec.seed + seeds), presets, seeds=extra,
                                           backend="sim", root=root, log=log)
    rows = []
    for pipeline in presets:
        preset = compare.preset_name(pipeline)   # a [switch] table runs under its pipeline's name
        row = {"preset": preset}
        for key, _ in FIGURES:
            vals = {b: _per_seed(runs[b]["summary"]["presets"].get(preset), key) for b in runs}
            e, s = (float(np.mean(v)) if v else None for v in (vals["emu"], vals["sim"]))
            row[key] = {"emu": e, "sim": s, "emu_seeds": vals["emu"], "sim_seeds": vals["sim"],
                        "difference": None if not (e and s) else (e - s) / s}
            more = _per_seed(noise["presets"].get(preset), key) if extra else []
            row[key]["difference_sd"] = difference_sd(vals["sim"] + more, seeds)
        fid = (runs["emu"]["summary"]["presets"].get(preset) or {}).get("fidelity", {})
        # What the emulated runs estimated of their own error, beside the error measured here.
        row["fidelity_estimate"] = fid.get("estimate")
        row["emulation_fidelity"] = compare_table.fidelity_cell({"backend": "emulation", "fidelity": fid})
        d = row["iteration_time_mean_s"]["difference"]
        row["within_tolerance"] = d is not None and abs(d) <= tolerance
        row["seeds_to_resolve"] = seeds_to_resolve(row["iteration_time_mean_s"]["difference_sd"], seeds, tolerance)
        jobs = _jobs({b: runs[b]["summary"]["presets"].get(preset) or {} for b in runs}, tolerance)
        for name, line in jobs.items():   # what the emulated runs estimated of each job's error
            own = (fid.get("jobs") or {}).get(name)
            line["emulation_fidelity"] = compare_table.fidelity_cell({"fidelity": own}) if own else "-"
        if jobs:   # several jobs: each job's own figures side by side too
            row["jobs"] = jobs
        rows.append(row)
    out = {"spec": spec.name, "seeds": seeds, "tolerance": tolerance, "presets": rows,
           "noise_seeds": max(seeds, noise_seeds),
           "runs": {b: r["dir"] for b, r in runs.items()} | ({"sim_noise": str(noise_dir)} if extra else {}),
           "complete": all(r["summary"]["complete"] for r in runs.values()) and (not extra or noise["complete"])}
    if choice is not None:
        out["time_dilation_choice"] = choice
    out_dir = results.new_run_dir(root, f"{spec.name}-validate")
    write_json_atomic(out_dir / "validation.json", out, indent=2)
    return out_dir, out


def difference_sd(sim_seeds, seeds):
    """The standard deviation of (emulated mean - simulated mean) / simulated mean over
    `seeds` seeds each, were both backends drawn from the simulator's spread over its seeds
    (`sim_seeds`, one figure each): sd / mean * sqrt(2 / seeds); None under three seeds."""
    if len(sim_seeds) < 3:
        return None
    return float(np.std(sim_seeds, ddof=1) / np.mean(sim_seeds) * np.sqrt(2 / seeds))


def seeds_to_resolve(sd, seeds, tolerance):
    """The fewest seeds at which the noise of a difference (`sd` at `seeds` seeds) is within
    the tolerance: it falls as 1/sqrt(seeds). None without a measured noise."""
    if sd is None or tolerance <= 0:
        return None
    return max(1, math.ceil(seeds * (sd / tolerance) ** 2 - 1e-9))


def _jobs(by_backend, tolerance):
    """{job: {figure: {"emu", "sim", "difference"}, "within_tolerance"}} of a preset of a
    spec with [[jobs]] (its summaries' `jobs`, seeds averaged), or {} of a one-job spec."""
    emu, sim = (by_backend[b].get("jobs") or {} for b in ("emu", "sim"))
    out = {}
    for name in emu:
        line = {}
        for key, _ in JOB_FIGURES:
            e, s = emu[name].get(key), (sim.get(name) or {}).get(key)
            line[key] = {"emu": e, "sim": s, "difference": None if not (e and s) else (e - s) / s}
        d = line["iteration_time_mean_s"]["difference"]
        line["within_tolerance"] = d is not None and abs(d) <= tolerance
        out[name] = line
    return out


def _per_seed(summary, key):
    if summary is None:
        return []
    per = summary.get("per_seed") or [summary]
    return [v for v in (_figure(s, key) for s in per) if v is not None]


def _figure(s, key):
    """A run's figure; a schedule run's tensors are its DP gradient messages (it has no
    buckets): its fct p99 is theirs."""
    if key == "tensor_fct_p99_s" and s.get(key) is None and s.get("traffic_classes"):
        return (s["traffic_classes"].get("gradient") or {}).get("fct_p99_s")
    return s.get(key)


def table(report):
    head = ["preset"]
    for _, label in FIGURES:
        head += [f"{label} emu", f"{label} sim", "diff", "noise"]
    head += [f"within {report['tolerance'] * 100:g}%", "emulation's estimate"]
    rows = []
    for r in report["presets"]:
        row = [r["preset"]]
        for key, _ in FIGURES:
            f = r[key]
            sd = f.get("difference_sd")
            row += [_ms(f["emu"], f["emu_seeds"]), _ms(f["sim"], f["sim_seeds"]),
                    "-" if f["difference"] is None else f"{f['difference'] * 100:+.1f}%",
                    "-" if sd is None else f"±{sd * 100:.1f}%"]
        row += ["yes" if r["within_tolerance"] else "NO", r["emulation_fidelity"]]
        rows.append(row)
    return _aligned(head, rows) + (f"\n(ms, real-world; mean over {report['seeds']} seed(s) ± their standard "
                               "deviation; diff = (emulated - simulated) / simulated, on the means;"
                               + _noise_note(report.get("noise_seeds", report["seeds"])) + " a schedule's"
                               "\n fct: its gradient messages' completion;"
                               "\n emulation's estimate: what the emulated runs estimated of their own error, see `compare`)"
                               ) + _unresolved(report) + _job_table(report)


def _unresolved(report):
    """The presets whose noise is above the tolerance: their verdict, either way, is as likely
    one seed's draw as the backends' difference."""
    seeds, tol = report["seeds"], report["tolerance"]
    rows = [r for r in report["presets"] if (r.get("seeds_to_resolve") or 0) > seeds]
    if not rows:
        return ""
    each = ", ".join(f"{r['preset']} ±{r['iteration_time_mean_s']['difference_sd'] * 100:.1f}% "
                     f"(--seeds {r['seeds_to_resolve']})" for r in rows)
    return (f"\nnoise above the {tol * 100:g}% tolerance at {seeds} seed(s), so the verdict cannot tell: "
            f"{each} would bring it within")


def _noise_note(seeds):
    if seeds < 3:
        return "\n noise: none measured (under three of the simulator's seeds);"
    return ("\n noise: one standard deviation of diff were the backends to agree, from the simulator's"
            f" spread over {seeds} seeds (docs/fidelity.md);")


def _job_table(report):
    """Per job and preset, emulated against simulated ("" for a one-job spec)."""
    head = ["job", "preset"]
    for _, label in JOB_FIGURES:
        head += [f"{label} emu", f"{label} sim", "diff"]
    head += [f"within {report['tolerance'] * 100:g}%", "emulation's estimate"]
    rows = []
    for name in dict.fromkeys(j for r in report["presets"] for j in r.get("jobs", {})):
        for r in report["presets"]:
            line = r.get("jobs", {}).get(name)
            if line is None:
                continue
            row = [name, r["preset"]]
            for key, _ in JOB_FIGURES:
                f = line[key]
                row += [_job_cell(key, f["emu"]), _job_cell(key, f["sim"]),
                        "-" if f["difference"] is None else f"{f['difference'] * 100:+.1f}%"]
            rows.append(row + ["yes" if line["within_tolerance"] else "NO", line.get("emulation_fidelity", "-")])
    if not rows:
        return ""
    return ("\n\nper job (iteration mean and its alone run, ms; slowdown = mean / alone; "
            "within: the job's iteration mean)\n" + _aligned(head, rows))


def _job_cell(key, value):
    if value is None:
        return "-"
    return f"{value:.3f}" if key == "slowdown" else f"{value * 1e3:.1f}"


def _aligned(head, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    lines = ["  ".join(str(x).rjust(w) for x, w in zip(line, widths)) for line in [head, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _ms(mean, per_seed):
    if mean is None:
        return "-"
    if len(per_seed) > 1:
        return f"{mean * 1e3:.1f} ± {np.std(per_seed, ddof=1) * 1e3:.1f}"
    return f"{mean * 1e3:.1f}"
