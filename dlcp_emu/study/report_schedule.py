"""`report`'s plot of schedule runs (docs/schedules.md), schedule_classes.png and its CSV:
- left: per traffic class, each preset's p99 completion of the class's messages (bar) and
  p50 (tick), log time axis: the figures of `compare`'s `<class> p99` columns;
- right: each preset's mean iteration split into the ranks' compute and the communication
  they waited on (exposed), by the parallelism waited on, over the measured iterations:
  `compare`'s `exposed` and `exp <dim>` columns.
Every figure by the statistics' own rules, a mean over seeds of each seed's figure."""
import numpy as np

from workloads.schedule import CLASS_BY_LABEL

from dlcp_emu.experiment.results import percentile


def rows(messages, exposed, exposure, names, seed_mean):
    """The plot's figures: a row per preset and class (p50/p99 ms, messages, bytes lost) and
    a row per preset of its iteration split (class "iteration": busy and exposed ms)."""
    out = []
    for p in names:
        m = messages[p]
        for c in [c for c in CLASS_BY_LABEL if c in set(m["tclass"])]:
            one = m[m["tclass"] == c]
            done = one.dropna(subset=["fct_s"])
            out.append({"preset": p, "tclass": c, "messages": int(len(one)) // max(1, one["seed"].nunique()),
                        "p50_ms": _ms(seed_mean(done, lambda x: percentile(x["fct_s"], 50))),
                        "p99_ms": _ms(seed_mean(done, lambda x: percentile(x["fct_s"], 99))),
                        "lost_bytes": seed_mean(one, lambda x: float(x["lost_bytes"].fillna(0).sum()))})
        e = exposed.get(p)
        if e is not None and len(e):
            row = {"preset": p, "tclass": "iteration", "busy_ms": _ms(seed_mean(e, lambda x: x["busy_s"].mean())),
                   "exposed_ms": _ms(seed_mean(e, lambda x: x["exposed_s"].mean()))}
            w = exposure.get(p)
            if w is not None and len(w):   # each dimension's share, over the same iterations
                for dim in sorted(set(w["dim"])):
                    row[f"exposed_{dim}_ms"] = _ms(seed_mean(e, lambda x, d=dim: _dim_mean(x, w, d)))
            out.append(row)
    return out


def plot(plt, messages, exposed, exposure, names, colors, title, path, seed_mean, save):
    figures = rows(messages, exposed, exposure, names, seed_mean)
    classes = [r for r in figures if r["tclass"] != "iteration"]
    split = [r for r in figures if r["tclass"] == "iteration"]
    labels = list(dict.fromkeys(r["tclass"] for r in classes))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5), gridspec_kw={"width_ratios": [3, 2]})
    width = 0.8 / max(1, len(names))
    for i, p in enumerate(names):
        mine = {r["tclass"]: r for r in classes if r["preset"] == p}
        x = np.arange(len(labels)) + i * width
        p99 = [(mine.get(c) or {}).get("p99_ms") or np.nan for c in labels]
        p50 = [(mine.get(c) or {}).get("p50_ms") or np.nan for c in labels]
        left.bar(x, p99, width, color=colors[p], alpha=0.85, label=p)
        left.plot(x, p50, ls="none", marker="_", ms=12, color="black", label="p50" if i == 0 else None)
    left.set_yscale("log")
    left.set_xticks(np.arange(len(labels)) + width * (len(names) - 1) / 2, labels)
    left.set_ylabel("message completion, p99 bar (ms, real-world)")
    left.grid(alpha=0.3, axis="y", which="both")
    left.legend(fontsize=8)
    left.set_title("Completion by traffic class", fontsize=9)
    hatches = {}
    for i, r in enumerate(split):
        right.bar(i, r["busy_ms"], color="grey", alpha=0.6, label="compute" if i == 0 else None)
        parts = [(k[len("exposed_"):-len("_ms")], v) for k, v in r.items() if k.startswith("exposed_") and k != "exposed_ms"]
        bottom = r["busy_ms"]
        for dim, v in parts or [("", r["exposed_ms"])]:
            new = dim not in hatches
            hatch = hatches.setdefault(dim, ["", "//", "..", "xx", "--", "oo"][len(hatches) % 6])
            right.bar(i, v, bottom=bottom, color=colors[r["preset"]], alpha=0.85, hatch=hatch, edgecolor="white",
                      label=f"waited on {dim}" if dim and new else None)
            bottom += v
        right.text(i, r["busy_ms"] + r["exposed_ms"], f"{r['exposed_ms']:.1f}", ha="center", va="bottom", fontsize=8)
    right.set_xticks(range(len(split)), [r["preset"] for r in split])
    right.set_ylabel("mean iteration (ms, real-world)")
    right.grid(alpha=0.3, axis="y")
    if split:
        right.legend(fontsize=8)
    right.set_title("Compute, and communication waited on by parallelism\n"
                    "(iteration 0 left out; label: exposed ms)", fontsize=9)
    fig.suptitle(f"Schedule traffic: {title}", fontsize=10)
    return save(fig, path, figures)


def _dim_mean(one_seed, exposure, dim):
    """One seed's mean over its measured rank-iterations (`one_seed`, the exposed table) of
    the seconds waited on `dim`, 0 where it waited on none."""
    w = exposure[(exposure["seed"] == one_seed["seed"].iloc[0]) & (exposure["dim"] == dim)]
    per = w.groupby(["rank", "iteration"])["exposed_s"].sum()
    keys = list(zip(one_seed["rank"], one_seed["iteration"]))
    return float(np.mean([per.get(k, 0.0) for k in keys]))


def _ms(v):
    return None if v is None else v * 1e3
