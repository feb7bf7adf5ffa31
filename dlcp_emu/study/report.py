"""`dlcp-emu report RUN`: plots of a compare/run folder, one PNG each, and beside each a CSV of
the figures it states, computed by the statistics' own rules (what `summary.json` and the
table say: iteration 0 left out, each figure a mean over seeds of that seed's figure).

- fct_cdf.png: CDF of tensor (bucket) completion time per preset, log time axis; the legend
  gives the table's p50 and p99;
- iteration_time.png: per preset the table's mean (bar) and p99 (diamond), the measured
  iterations' min..max (line), the planned compute (dashed);
- queue_occupancy.png: queued bytes over time at one named port, the same for every preset,
  one panel a preset (the port that queued most over all presets, or `port`);
- loss_by_magnitude.png: zero-filled gradient bytes by magnitude class, per preset (the
  classes add up to the table's loss);
- jobs.png (runs of [[jobs]]): each job's iteration time over the run, one line a job, one
  panel a preset (study/job_plot.py);
- compression.png (runs that compressed): each bucket's kept ratio over time and the delay
  DC2 steers by;
- accuracy.png (runs that trained): held-out accuracy against real-world time and against
  iterations, mean of the replicas and seeds, with the lossless one-process baseline;
- schedule_classes.png (schedule runs, in place of fct_cdf.png): per traffic class the
  messages' completion, and each preset's compute and exposed communication
  (study/report_schedule.py);
- report.html: all of it on one self-contained page (study/report_page.py).
"""
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from dlcp_emu.experiment.results import measured_iterations, percentile
from dlcp_emu.study import report_schedule
from dlcp_emu.study.job_plot import job_plot


def _frames(run_dir, name):
    """{preset: DataFrame} concatenated over seeds, with a `seed` column (from seed-N)."""
    out = {}
    for preset_dir in sorted(p for p in Path(run_dir).iterdir() if p.is_dir()):
        parts = []
        for f in sorted(preset_dir.glob(f"*/{name}.parquet")):
            frame = pd.read_parquet(f)
            if len(frame):
                seed = re.fullmatch(r"seed-(\d+)", f.parent.name)
                parts.append(frame.assign(seed=int(seed.group(1)) if seed else 0))
        if parts:
            out[preset_dir.name] = pd.concat(parts, ignore_index=True)
    return out


def _order(run_dir, found):
    summary = json.loads((Path(run_dir) / "summary.json").read_text())
    return [p for p in summary["presets"] if p in found], summary


def _seed_mean(frame, figure):
    """figure(one seed's rows) averaged over the seeds, as compare averages the summary's."""
    values = [figure(part) for _, part in frame.groupby("seed")]
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else None


def parse_port(text):
    """"l1:2" -> ("l1", 2); ValueError naming the form."""
    m = re.fullmatch(r"([\w.-]+):(\d+)", text or "")
    if not m:
        raise ValueError(f"--port {text!r}: must be SWITCH:PORT, e.g. l1:2")
    return m.group(1), int(m.group(2))


def make(run_dir, port=None):
    """The run folder's plots (with their CSVs) and its report.html: ([png paths], html path)."""
    from dlcp_emu.study import report_page
    pngs = draw(run_dir, port)
    summary = json.loads((Path(run_dir) / "summary.json").read_text())
    return pngs, report_page.write(run_dir, pngs, summary)


def draw(run_dir, port=None):
    """Draw the run's plots; `port`: (switch, port) for the queue plot. [png paths]."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    run_dir = Path(run_dir).resolve()
    pngs = []
    tensors = _frames(run_dir, "tensors")
    presets, summary = _order(run_dir, tensors)
    title = f"{summary['spec']} ({'emulation' if summary['backend'] == 'emu' else 'simulation'})"
    colors = {p: f"C{i}" for i, p in enumerate(presets)}
    messages = _frames(run_dir, "messages")
    if tensors or not messages:   # a schedule's messages have their own plot (below)
        pngs.append(_fct_plot(plt, tensors, presets, colors, title, run_dir))
    else:
        presets = _order(run_dir, messages)[0]
        colors = {p: f"C{i}" for i, p in enumerate(presets)}
        pngs.append(report_schedule.plot(plt, messages, _frames(run_dir, "exposed"), _frames(run_dir, "exposure"),
                                         presets, colors, title,
                                         run_dir / "schedule_classes.png", _seed_mean, _save))
    its = _frames(run_dir, "iterations")
    pngs.append(_iteration_plot(plt, its, [p for p in presets if p in its], colors, title, run_dir))
    jobs_png = job_plot(plt, its, [p for p in presets if p in its], title, run_dir, _save)
    if jobs_png is not None:
        pngs.append(jobs_png)
    queues = _frames(run_dir, "queues")
    if queues:
        pngs.append(_queue_plot(plt, queues, [p for p in presets if p in queues], colors, title,
                                run_dir, port))
    dels = _frames(run_dir, "deliveries")
    if dels:
        pngs.append(_loss_plot(plt, dels, [p for p in presets if p in dels], colors, title, run_dir))
    compressed = [p for p in presets if p in tensors and "ratio" in tensors[p] and (tensors[p]["ratio"] < 1).any()]
    if compressed:
        pngs.append(_compression_plot(plt, tensors, compressed, colors, title, run_dir))
    accuracy = _frames(run_dir, "accuracy")
    if accuracy:
        pngs.append(_accuracy_plot(plt, accuracy, summary, presets, colors, title, run_dir))
    return pngs


def _fct_plot(plt, tensors, presets, colors, title, run_dir):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    rows = []
    for p in presets:
        fct = np.sort(tensors[p]["fct_s"].dropna().to_numpy() * 1e3)
        if not fct.size:
            continue
        done = tensors[p].dropna(subset=["fct_s"])
        q = {k: _seed_mean(done, lambda t, k=k: percentile(t["fct_s"], k)) * 1e3 for k in (50, 99, 99.9)}
        rows.append({"preset": p, "p50_ms": q[50], "p99_ms": q[99], "p999_ms": q[99.9], "tensors": fct.size})
        ax.step(fct, np.arange(1, fct.size + 1) / fct.size, where="post", color=colors[p],
                label=f"{p}  (p50 {q[50]:.1f}, p99 {q[99]:.1f} ms)")
    ax.set_xscale("log")
    # Plain numbers on the log axis (100, 200, 500), not 2x10^2.
    from matplotlib.ticker import LogLocator, ScalarFormatter
    ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    ax.set_xlabel("tensor completion time (ms, real-world)")
    ax.set_ylabel("fraction of tensors")
    ax.axhline(0.99, color="grey", lw=0.6, ls=":")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(f"Tensor completion time: {title}\n(all seeds' tensors; legend: mean over seeds, "
                 "as in the table)", fontsize=10)
    return _save(fig, run_dir / "fct_cdf.png", rows)


def _iteration_plot(plt, its, names, colors, title, run_dir):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    rows = []
    for i, p in enumerate(names):
        counted = measured_iterations(its[p])
        if not len(counted):
            continue
        t = counted["total_s"].to_numpy() * 1e3
        row = {"preset": p, "mean_ms": _seed_mean(counted, lambda x: x["total_s"].mean()) * 1e3,
               "p99_ms": _seed_mean(counted, lambda x: percentile(x["total_s"], 99)) * 1e3,
               "min_ms": t.min(), "max_ms": t.max(), "compute_ms": counted["compute_s"].mean() * 1e3,
               "iterations": len(t)}
        rows.append(row)
        ax.bar(i, row["mean_ms"], color=colors[p], alpha=0.8)
        ax.vlines(i, row["min_ms"], row["max_ms"], color="black", lw=1)
        ax.plot(i, row["p99_ms"], marker="D", color="black", ms=5, label="p99" if i == 0 else None)
        ax.hlines(row["compute_ms"], i - 0.4, i + 0.4, color="black", ls="--", lw=1)
        ax.text(i + 0.06, row["mean_ms"], f"{row['mean_ms']:.1f}", ha="left", va="bottom", fontsize=8)   # beside the min..max line, off the p99 mark
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("iteration time (ms, real-world)")
    ax.set_title(f"Iteration time: {title}\n(bar: mean; diamond: p99; line: min..max; dashed: compute;\n"
                 f"iteration 0, warm-up, left out as in the table)", fontsize=9)
    ax.grid(alpha=0.3, axis="y")
    return _save(fig, run_dir / "iteration_time.png", rows)


def _queue_plot(plt, queues, names, colors, title, run_dir, port):
    """One port for every preset: the one named, or the one that queued most over them all."""
    if port is None:
        peaks = pd.concat([q.groupby(["switch", "port"])["queued_bytes"].max() for q in queues.values()])
        top = peaks.groupby(level=[0, 1]).max()
        port = top.sort_index().idxmax()
        why = "the port that queued most over all presets"
    else:
        why = "named"
    fig, axes = plt.subplots(len(names), 1, figsize=(8, 1.6 + 1.5 * len(names)), sharex=True,
                             sharey=True, squeeze=False)
    rows = []
    for ax, p in zip(axes[:, 0], names):
        q = queues[p]
        one = q[(q["switch"] == port[0]) & (q["port"] == port[1])]
        if not len(one):
            raise ValueError(f"--port {port[0]}:{port[1]}: preset {p} has no such port "
                             f"(ports: {', '.join(sorted({f'{s}:{n}' for s, n in zip(q['switch'], q['port'])}))})")
        for seed, part in one.groupby("seed"):
            part = part.sort_values("t_s")
            ax.plot(part["t_s"] * 1e3, part["queued_bytes"] / 1e3, color=colors[p], lw=0.7,
                    alpha=1.0 if seed == one["seed"].min() else 0.4)
            rows.append({"preset": p, "switch": port[0], "port": port[1], "seed": seed,
                         "max_kB": part["queued_bytes"].max() / 1e3,
                         "mean_kB": part["queued_bytes"].mean() / 1e3})
        ax.set_ylabel(f"{p}\nkB", fontsize=8)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("time (ms, real-world)")
    axes[0, 0].set_title(f"Queue occupancy at {port[0]} port {port[1]} ({why}; scaled run's bytes, "
                         f"each seed a line)\n{title}", fontsize=9)
    return _save(fig, run_dir / "queue_occupancy.png", rows)


def _loss_plot(plt, dels, names, colors, title, run_dir):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    classes = [k for k in range(-1, 8) if any(f"lost_mag{k}" in dels[p] for p in names)]
    width = 0.8 / max(1, len(names))
    rows = []
    for i, p in enumerate(names):
        d = dels[p]
        lost = [(_seed_mean(d, lambda x, k=k: x[f"lost_mag{k}"].sum() / x["nbytes"].sum()
                            if x["nbytes"].sum() else 0.0) or 0.0) * 100 if f"lost_mag{k}" in d else 0.0
                for k in classes]
        rows.append({"preset": p, **{f"class {'none' if k < 0 else k} %": v for k, v in zip(classes, lost)},
                     "all %": sum(lost)})
        ax.bar(np.arange(len(classes)) + i * width, lost, width, color=colors[p],
               label=f"{p} ({sum(lost):.3f}% in all)")
    ax.set_xticks(np.arange(len(classes)) + width * (len(names) - 1) / 2,
                  ["none" if k < 0 else str(k) for k in classes])
    ax.set_xlabel("gradient magnitude class (0 smallest .. 7 largest; none: never seen)")
    ax.set_ylabel("zero-filled bytes (% of all gradient bytes)")
    ax.set_title(f"Loss by magnitude class: {title}")
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    return _save(fig, run_dir / "loss_by_magnitude.png", rows)


def _accuracy_plot(plt, accuracy, summary, presets, colors, title, run_dir):
    """What the network cost in accuracy and what it saved in time: one curve per preset."""
    fig, (by_time, by_iter) = plt.subplots(1, 2, figsize=(11, 4.5), sharey=True)
    for p in [p for p in presets if p in accuracy]:
        curve = accuracy[p].groupby("iteration").agg(acc=("accuracy", "mean"), t=("t_s", "mean"))
        a = summary["presets"][p].get("accuracy", {})
        final = "" if a.get("final") is None else f"  ({a['final'] * 100:.1f}%)"
        by_time.plot(curve["t"], curve["acc"] * 100, color=colors[p], marker=".", lw=1, label=p + final)
        by_iter.plot(curve.index + 1, curve["acc"] * 100, color=colors[p], marker=".", lw=1)
    base = next((summary["presets"][p]["accuracy"].get("baseline") for p in presets
                 if summary["presets"][p].get("accuracy")), None)
    for ax in (by_time, by_iter):
        if base is not None:
            ax.axhline(base * 100, color="grey", ls="--", lw=0.8)
        ax.grid(alpha=0.3)
    by_time.set_xlabel("time (s, real-world)")
    by_iter.set_xlabel("iterations")
    by_time.set_ylabel("held-out accuracy (%)")
    by_time.legend(fontsize=8, loc="lower right")
    by_iter.set_title("dashed: lossless baseline (one process, same batches), final", fontsize=8)
    fig.suptitle(f"Accuracy against time: {title}", fontsize=10)
    return _save(fig, run_dir / "accuracy.png")


def _compression_plot(plt, tensors, names, colors, title, run_dir):
    """Kept ratio of every bucket over time (mean over ranks and seeds) and the delay it was
    chosen by: how DC2 follows the network."""
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for p in names:
        t = tensors[p].dropna(subset=["done_s"])
        by = t.groupby(["iteration", "bucket"]).agg(ready=("ready_s", "mean"), ratio=("ratio", "mean"),
                                                   delay=("delay_s", "mean")).sort_values("ready")
        top.plot(by["ready"] * 1e3, by["ratio"], color=colors[p], lw=0.9, marker=".", label=p)
        bottom.plot(by["ready"] * 1e3, by["delay"] * 1e3, color=colors[p], lw=0.9, marker=".")
    top.set_yscale("log")
    top.set_ylabel("kept ratio (log)")
    top.legend(fontsize=8)
    bottom.set_ylabel("sync delay beyond\nserialisation (ms)")
    bottom.set_xlabel("bucket ready time (ms, real-world)")
    for ax in (top, bottom):
        ax.grid(alpha=0.3, which="both")
    top.set_title(f"Compression per bucket: {title}", fontsize=10)
    return _save(fig, run_dir / "compression.png")


def _save(fig, path, rows=None):
    """The PNG, and beside it (rows given) a CSV of the figures it states."""
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt
    plt.close(fig)
    csv = path.with_suffix(".csv")
    if rows:
        pd.DataFrame(rows).to_csv(csv, index=False)
    else:   # nothing measured to draw (a run stopped early): no stale figures either
        csv.unlink(missing_ok=True)
    return path
