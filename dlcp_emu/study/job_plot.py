"""jobs.png of a comparison of [[jobs]] runs: each job's iteration time over the run's time,
one line a job, one panel a preset (seed of the first run of each preset); beside it a CSV of
the points (each job's iteration: its ranks' mean time, its earliest start)."""


def job_plot(plt, its, presets, title, run_dir, save):
    presets = [p for p in presets if "job" in its[p]]
    if not presets:
        return None
    fig, axes = plt.subplots(1, len(presets), figsize=(4.2 * len(presets), 4), sharey=True, squeeze=False)
    rows = []
    for ax, p in zip(axes[0], presets):
        frame = its[p][its[p]["seed"] == its[p]["seed"].min()].dropna(subset=["total_s"])
        for i, (job, part) in enumerate(frame.groupby("job", sort=False)):
            by_it = part.groupby("iteration").agg(start_s=("start_s", "min"), total_s=("total_s", "mean"))
            ax.plot(by_it["start_s"] * 1e3, by_it["total_s"] * 1e3, marker="o", color=f"C{i}", label=job)
            rows += [{"preset": p, "job": job, "iteration": int(k), "start_ms": r.start_s * 1e3,
                      "iteration_ms": r.total_s * 1e3} for k, r in by_it.iterrows()]
        ax.set_title(p, fontsize=10)
        ax.set_xlabel("iteration start (ms, real-world)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0][0].set_ylabel("iteration time (ms, real-world)")
    fig.suptitle(f"Iteration time of each job over the run: {title}", fontsize=10)
    return save(fig, run_dir / "jobs.png", rows or None)

