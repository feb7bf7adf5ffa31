"""The calibration grid (study/calibrate.py) against the fidelity estimate: each case's
estimate beside its measured emulated-vs-simulated difference, the coefficients a least-squares
fit would give (all specs, and each spec left out in turn), and the confusion matrix of the
flag. Writes docs/fidelity-grid.md and docs/fidelity-grid.png.

A case is a spec, preset and dilation, over its seeds: `validate` compares means over seeds,
so the measured difference is that of the means, and the estimate the mean of the seeds'.
"""
import json
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from dlcp_emu.experiment import fidelity_estimate as E

FLAG_ABOVE = 0.05   # a case measured further apart must be flagged ...
QUIET_BELOW = 0.03  # ... and one measured closer must not


def inputs(record):
    """The estimate's arguments for a grid record (what emu/run.py gives it for the run)."""
    from dlcp_emu.experiment.topology import host_frame_ns, scaled_topology
    from dlcp_emu.experiment.spec import load_spec
    from dlcp_emu.host.plan import make_plan
    from workloads import trace_of
    from dlcp_emu.study.calibrate import at_dilation
    spec = at_dilation(load_spec(f"examples/{record['spec']}.toml"), record["dilation"])
    w = spec.workload
    plan = make_plan(trace_of(w), spec.scale, fusion_bytes=w["fusion_bytes"], fusion_cycle_ms=w["fusion_cycle_ms"])
    ps = tuple(range(w["workers"], w["workers"] + (w.get("ps") or 0))) if w["pattern"] == "ps" else ()
    return {"frame_ns": host_frame_ns(scaled_topology(spec), spec.mtu),
            "compute_share": record["emu"]["scaling_factor"] or 0.0,
            "steps": E.critical_steps(w["pattern"], len(plan.buckets), workers=w["workers"], ps_ranks=ps,
                                      group_size=w["group_size"]),
            "dilation": record["dilation"], "iteration_s": record["emu"]["iteration_time_mean_s"]}


def load(path):
    rows = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    for r in rows:
        r["inputs"] = inputs(r)
        r["estimate"] = E.estimate(r["fidelity"], **r["inputs"])
    return rows


def cases(rows):
    """Seeds of one spec, preset and dilation together: [{spec, preset, dilation, seeds,
    measured (iteration, fct p99 as fractions), estimate (percent, mean over seeds)}]."""
    groups = {}
    for r in rows:
        groups.setdefault((r["spec"], r["preset"], r["dilation"]), []).append(r)
    out = []
    for (spec, preset, d), rs in sorted(groups.items()):
        emu = {k: np.mean([r["emu"][k] for r in rs]) for k in ("iteration_time_mean_s", "tensor_fct_p99_s")}
        sim = {k: np.mean([r["sim"][k] for r in rs]) for k in emu}
        est = {k: float(np.mean([r["estimate"][k] for r in rs])) for k in ("iteration_pct", "fct_p99_pct")}
        out.append({"spec": spec, "preset": preset, "dilation": d, "seeds": len(rs), "rows": rs,
                    "iteration": emu["iteration_time_mean_s"] / sim["iteration_time_mean_s"] - 1,
                    "fct_p99": emu["tensor_fct_p99_s"] / sim["tensor_fct_p99_s"] - 1, "estimate": est})
    return out


def features(r, key):
    """(fixed part, [bases of the fitted terms]) of the estimate of `key` ("iteration" or
    "fct_p99") for a record: fidelity_estimate's own bases, fractions."""
    b = E.bases(r["fidelity"], **r["inputs"])[key]
    fixed = sum(E.COEFFICIENTS[key][name] * x for name, x in b.items() if name not in E.FITTED)
    return fixed, [b[name] for name in E.FITTED]


FEATURES = E.FITTED


def fit(rows, key, measured_key):
    """Non-negative least-squares coefficients of the fitted terms for `key`, on the rows'
    measured differences (per seed): a lateness never makes a run faster."""
    fixed, x = zip(*(features(r, key) for r in rows))
    y = np.array([r[measured_key] for r in rows]) - np.array(fixed)
    coef, _ = nnls(np.array(x), y)
    return coef


def predict(r, key, coef):
    fixed, x = features(r, key)
    return 100 * (fixed + float(np.dot(coef, x)))


def leave_one_spec_out(rows, key, measured_key):
    """Each spec's rows predicted by coefficients fitted on the others: {spec: (coef, rms
    error of its rows in points)}."""
    out = {}
    for spec in sorted({r["spec"] for r in rows}):
        train = [r for r in rows if r["spec"] != spec]
        coef = fit(train, key, measured_key)
        err = [predict(r, key, coef) - 100 * r[measured_key] for r in rows if r["spec"] == spec]
        out[spec] = (coef, float(np.sqrt(np.mean(np.square(err)))))
    return out


def confusion(case_list, tolerance=FLAG_ABOVE, signed=True):
    """{(measured band, flagged): count}; bands "> 5%", "3-5%", "< 3%" of the larger of the
    mean iteration and p99 tensor completion differences: how much slower the emulation was
    (signed: what a lateness can cause), or the larger in size (an emulation faster than
    its model counts too)."""
    out = {}
    for c in case_list:
        m = max(c["iteration"], c["fct_p99"]) if signed else max(abs(c["iteration"]), abs(c["fct_p99"]))
        band = "> 5%" if m > FLAG_ABOVE else "< 3%" if m < QUIET_BELOW else "3-5%"
        flag = E.flagged(c["estimate"], tolerance)
        out[band, flag] = out.get((band, flag), 0) + 1
    return out


def scatter(case_list, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.5))
    specs = sorted({c["spec"] for c in case_list})
    for ax, key, label in ((axes[0], "iteration", "mean iteration"), (axes[1], "fct_p99", "p99 tensor completion")):
        for i, spec in enumerate(specs):
            cs = [c for c in case_list if c["spec"] == spec]
            ax.scatter([c["estimate"][f"{key}_pct"] for c in cs], [100 * c[key] for c in cs],
                       label=spec, marker="os^Dv"[i % 5])
        lim = max(5.0, *(abs(100 * c[key]) for c in case_list), *(abs(c["estimate"][f"{key}_pct"]) for c in case_list)) + 2
        ax.plot([-lim, lim], [-lim, lim], color="grey", lw=0.8)
        ax.axhspan(-5, 5, color="green", alpha=0.07)
        ax.axvline(5, color="red", lw=0.8, ls="--")
        ax.set_xlim(-3, lim)
        ax.set_ylim(-lim / 2, lim)
        ax.set_xlabel(f"estimate, % ({label})")
        ax.set_ylabel("measured emulated - simulated, %")
        ax.set_title(label)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def markdown(rows, case_list, command):
    """docs/fidelity-grid.md: the fit, every case and the confusion matrix."""
    lines = ["# Fidelity estimate against `validate`: the calibration grid", "",
             f"Generated by `{command}` from `calibration/grid.jsonl` ({len(rows)} emulated runs, "
             f"each validated against its simulation). See docs/fidelity.md for what the estimate is.", "",
             "## Coefficients", "",
             "Non-negative least squares on every run (seed) of the grid, and with each spec left out "
             "(its runs then predicted by the others' fit; rms error of those predictions, points):", "",
             "| figure | fit on | " + " | ".join(FEATURES) + " | rms of the left-out spec |",
             "| --- | --- | " + " | ".join("---" for _ in FEATURES) + " | --- |"]
    for key, label in (("iteration", "mean iteration"), ("fct_p99", "p99 tensor completion")):
        lines.append(f"| {label} | all specs | " + " | ".join(f"{c:.3f}" for c in fit(rows, key, key)) + " | |")
        for spec, (coef, rms) in leave_one_spec_out(rows, key, key).items():
            lines.append(f"| | all but {spec} | " + " | ".join(f"{c:.3f}" for c in coef) + f" | {rms:.1f} |")
    shipped = "; ".join(f"{label} " + ", ".join(f"{E.COEFFICIENTS[key][n]:g}" for n in E.FITTED)
                        for key, label in (("iteration", "mean iteration"), ("fct_p99", "p99 tensor completion")))
    lines += ["", f"Shipped (`COEFFICIENTS` in dlcp_emu/experiment/fidelity_estimate.py): {shipped}.",
              "", "## Cases", "",
              "Measured: (emulated - simulated) / simulated on the means over the seeds; estimate: the "
              "emulated runs' own, mean over the seeds, with the shipped coefficients. Flagged: the "
              f"estimate's larger figure above {FLAG_ABOVE:.0%}.", "",
              "| spec | preset | dilation | seeds | iteration measured | estimate | p99 fct measured | estimate "
              "| host wait, mean (us, wall) | in frames | flagged |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for c in case_list:
        lag = np.mean([r["fidelity"].get("host_rx_lag_mean_us") or 0 for r in c["rows"]])
        frames = lag * 1e3 / c["rows"][0]["inputs"]["frame_ns"]
        lines.append(f"| {c['spec']} | {c['preset']} | {c['dilation']:g} | {c['seeds']} | {100 * c['iteration']:+.1f}% "
                     f"| {c['estimate']['iteration_pct']:+.1f}% | {100 * c['fct_p99']:+.1f}% "
                     f"| {c['estimate']['fct_p99_pct']:+.1f}% | {lag:.0f} | {frames:.2f} "
                     f"| {'yes' if E.flagged(c['estimate'], FLAG_ABOVE) else 'no'} |")
    lines += ["", "## Confusion matrix of the flag", "",
              "Cases by the larger of their measured differences (mean iteration, p99 tensor completion); "
              "the flag must fire on every case above 5% and on none below 3%. By how much slower the "
              "emulation was (what a lateness causes), and by size (an emulation faster than its model, "
              "seed noise, counted too):", "",
              "| measured | flagged | not flagged | by size: flagged | not flagged |",
              "| --- | --- | --- | --- | --- |"]
    slower, size = confusion(case_list), confusion(case_list, signed=False)
    for band in ("> 5%", "3-5%", "< 3%"):
        lines.append(f"| {band} | {slower.get((band, True), 0)} | {slower.get((band, False), 0)} "
                     f"| {size.get((band, True), 0)} | {size.get((band, False), 0)} |")
    lines += ["", "![estimate against measured](fidelity-grid.png)", ""]
    return "\n".join(lines)


def write(grid_path, docs_dir, command):
    rows = load(grid_path)
    for r in rows:
        r["iteration"], r["fct_p99"] = r["iteration_difference"], r["fct_p99_difference"]
    case_list = cases(rows)
    docs = Path(docs_dir)
    (docs / "fidelity-grid.md").write_text(markdown(rows, case_list, command))
    scatter(case_list, docs / "fidelity-grid.png")
    return case_list
