"""`dlcp-emu report RUN`: plots of a compare/run folder, one PNG each.

- fct_cdf.png: CDF of tensor (bucket) completion time per preset, log time axis, tail marked;
- iteration_time.png: mean iteration time per preset with the spread (min..max, and std);
- queue_occupancy.png: queued bytes over time at the bottleneck port (the port that queued
  most) of each preset;
- loss_by_magnitude.png: zero-filled gradient bytes by magnitude class, per preset;
- compression.png (runs that compressed): each bucket's kept ratio over time and the delay
  DC2 steers by;
- accuracy.png (runs that trained): held-out accuracy against real-world time and against
  iterations, mean of the replicas and seeds, with the lossless one-process baseline.
"""
import json
from pathlib import Path

import numpy as np
import pandas as pd


def _frames(run_dir, name):
    """{preset: DataFrame} concatenated over seeds."""
    out = {}
    for preset_dir in sorted(p for p in Path(run_dir).iterdir() if p.is_dir()):
        parts = [pd.read_parquet(f) for f in sorted(preset_dir.glob(f"*/{name}.parquet"))]
        parts = [p for p in parts if len(p)]
        if parts:
            out[preset_dir.name] = pd.concat(parts, ignore_index=True)
    return out


def _order(run_dir, found):
    summary = json.loads((Path(run_dir) / "summary.json").read_text())
    return [p for p in summary["presets"] if p in found], summary


def draw(run_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    run_dir = Path(run_dir).resolve()
    pngs = []
    tensors = _frames(run_dir, "tensors")
    presets, summary = _order(run_dir, tensors)
    title = f"{summary['spec']} ({'emulation' if summary['backend'] == 'emu' else 'simulation'})"
    colors = {p: f"C{i}" for i, p in enumerate(presets)}

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for p in presets:
        fct = np.sort(tensors[p]["fct_s"].dropna().to_numpy() * 1e3)
        if fct.size:
            y = np.arange(1, fct.size + 1) / fct.size
            ax.step(fct, y, where="post", color=colors[p],
                    label=f"{p}  (p50 {np.percentile(fct, 50):.1f}, p99 {np.percentile(fct, 99):.1f} ms)")
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
    ax.set_title(f"Tensor completion time: {title}")
    pngs.append(_save(fig, run_dir / "fct_cdf.png"))

    its = _frames(run_dir, "iterations")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    names = [p for p in presets if p in its]
    for i, p in enumerate(names):
        t = its[p]["total_s"].dropna().to_numpy() * 1e3
        c = its[p]["compute_s"].dropna().to_numpy() * 1e3
        if not t.size:
            continue
        ax.bar(i, t.mean(), color=colors[p], alpha=0.8, yerr=t.std(), capsize=6)
        ax.vlines(i, t.min(), t.max(), color="black", lw=1)
        ax.hlines(c.mean(), i - 0.4, i + 0.4, color="black", ls="--", lw=1)
        ax.text(i, t.max(), f"{t.mean():.0f}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("iteration time (ms, real-world)")
    ax.set_title(f"Iteration time (bar: mean ± std; line: min..max; dashed: compute)\n{title}",
                 fontsize=10)
    ax.grid(alpha=0.3, axis="y")
    pngs.append(_save(fig, run_dir / "iteration_time.png"))

    queues = _frames(run_dir, "queues")
    if queues:
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for p in [p for p in presets if p in queues]:
            q = queues[p]
            top = q.groupby(["switch", "port"])["queued_bytes"].max().idxmax()
            one = q[(q["switch"] == top[0]) & (q["port"] == top[1])].sort_values("t_s")
            ax.plot(one["t_s"] * 1e3, one["queued_bytes"] / 1e3, color=colors[p], lw=0.8,
                    label=f"{p} ({top[0]} port {top[1]})")
        ax.set_xlabel("time (ms, real-world)")
        ax.set_ylabel("queued (kB, scaled run)")
        ax.set_title(f"Queue occupancy at the bottleneck port: {title}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        pngs.append(_save(fig, run_dir / "queue_occupancy.png"))

    dels = _frames(run_dir, "deliveries")
    if dels:
        fig, ax = plt.subplots(figsize=(7, 4.5))
        classes = list(range(8))
        width = 0.8 / max(1, len(presets))
        for i, p in enumerate([p for p in presets if p in dels]):
            d = dels[p]
            total = d["nbytes"].sum()
            lost = [d.get(f"lost_mag{k}", pd.Series(dtype=float)).sum() / total * 100 if total else 0
                    for k in classes]
            ax.bar(np.array(classes) + i * width, lost, width, color=colors[p], label=p)
        ax.set_xticks(np.array(classes) + width * (len(presets) - 1) / 2, [str(k) for k in classes])
        ax.set_xlabel("gradient magnitude class (0 smallest .. 7 largest)")
        ax.set_ylabel("zero-filled bytes (% of all gradient bytes)")
        ax.set_title(f"Loss by magnitude class: {title}")
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=8)
        pngs.append(_save(fig, run_dir / "loss_by_magnitude.png"))

    compressed = [p for p in presets if "ratio" in tensors[p] and (tensors[p]["ratio"] < 1).any()]
    if compressed:
        pngs.append(_compression_plot(plt, tensors, compressed, colors, title, run_dir))
    accuracy = _frames(run_dir, "accuracy")
    if accuracy:
        pngs.append(_accuracy_plot(plt, accuracy, summary, presets, colors, title, run_dir))
    return pngs


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


def _save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt
    plt.close(fig)
    return path
