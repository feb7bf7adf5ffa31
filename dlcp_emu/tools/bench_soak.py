"""`dlcp-emu bench soak`: one emulation at steady load for N minutes, watched.

The spec (`examples/soak.toml` by default) runs training iterations back to back with
background flows beside them until the time limit, set to the soak's length. Every
`sample_s` a thread beside the run reads the resident memory (VmRSS) of every process of the
run (the runner itself, each switch, host shell, agent and background process, found in the
run's state file) and each switch's periodic stats: how many frames it sent and how late,
so that each interval's mean lateness and share of frames later than the switch's threshold
can be told apart from the run's cumulative figures.

What it prints, as tables (and writes to the run folder's soak.json, with every sample):
memory per kind of process at the end of the warm-up and at the end, and the growth between
(the target is at most 5%: a process whose memory keeps growing at steady load would, in a
longer run, end it); the switches' lateness in each interval after the warm-up (about ten
intervals); the summary's fidelity flags; every frame accounted (what the switches took in:
sent, dropped by reason, held at stop; every link's frames sent, received, lost with a
reason); and how much the run streamed to disk (records, queue samples), the price of
memory that stays flat.
"""
import json
import os
import threading
import time
from pathlib import Path

from dlcp_emu.emu import cleanup

PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent
DEFAULT_SPEC = PROJECT_ROOT / "examples" / "soak.toml"
GROWTH_TARGET = 0.05


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def label(proc):
    """A process's name in the figures: its kind and node, and the module a Python one runs."""
    kind, node = proc["kind"], proc["name"].split(":")[0]
    try:
        with open(f"/proc/{proc['pid']}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
    except OSError:
        argv = []
    if b"-m" in argv:
        module = argv[argv.index(b"-m") + 1].decode().rsplit(".", 1)[-1]
        return f"{module} {node}"
    return f"{kind} {node}"


def kind_of(name):
    return name.split(" ")[0]


class Sampler(threading.Thread):
    """Samples the run owned by this process every `every_s` until stopped."""

    def __init__(self, stats_dir, every_s):
        super().__init__(name="soak-sampler", daemon=True)
        self.stats_dir = Path(stats_dir)
        self.every_s = every_s
        self.samples = []
        self.stopped = threading.Event()
        self.t0 = time.monotonic()

    def own_processes(self):
        for _, st in cleanup.load_states():
            if st and (st.get("owner") or {}).get("pid") == os.getpid():
                return [p for p in st["processes"] if cleanup.process_alive(p["pid"], p["start"])]
        return []

    def sample(self):
        rss = {"runner": rss_kb(os.getpid())}
        for p in self.own_processes():
            kb = rss_kb(p["pid"])
            if kb is not None:
                rss[label(p)] = kb
        switches = {}
        for f in sorted(self.stats_dir.glob("*.stats.json")):
            try:
                st = json.loads(f.read_text())
            except (OSError, ValueError):
                continue
            lat = st.get("lateness") or {}
            switches[st.get("switch", f.stem)] = {
                "count": lat.get("count", 0), "mean_ns": lat.get("mean_ns"),
                "above": lat.get("above_threshold", 0), "max_ns": lat.get("max_ns"),
                "fell_behind": st.get("fell_behind")}
        self.samples.append({"t_s": round(time.monotonic() - self.t0, 1), "rss_kb": rss,
                             "switches": switches})

    def run(self):
        while not self.stopped.wait(self.every_s):
            self.sample()


def interval_lateness(a, b):
    """Frames sent between two samples, their mean lateness (us) and the share later than
    the threshold, over all switches."""
    n = late = total = 0.0
    for sw, y in b["switches"].items():
        x = a["switches"].get(sw)
        if not x or y["mean_ns"] is None:
            continue
        dn = y["count"] - x["count"]
        n += dn
        late += y["above"] - x["above"]
        total += y["mean_ns"] * y["count"] - (x["mean_ns"] or 0) * x["count"]
    return {"frames": int(n), "mean_us": round(total / n / 1e3, 1) if n else None,
            "late_share": round(late / n, 5) if n else None}


def lateness_by_interval(after, intervals=10, min_s=0.0):
    """The lateness of `interval_lateness` over consecutive spans of the samples after the
    warm-up: about `intervals` of them, none shorter than min_s (the sampling period)."""
    if len(after) < 2:
        return []
    every = max(min_s, (after[-1]["t_s"] - after[0]["t_s"]) / intervals)
    out, i = [], 0
    while i < len(after) - 1:
        j = i + 1
        while j < len(after) - 1 and after[j]["t_s"] - after[i]["t_s"] < every - 1e-9:
            j += 1
        out.append({"from_s": after[i]["t_s"], "to_s": after[j]["t_s"],
                    **interval_lateness(after[i], after[j])})
        i = j
    return out


def frames_accounted(switch_stats):
    """Every frame the switches took in, summed over them: sent, dropped by reason, held at
    the stop (queued or on a paced host's link), and at how many switches it balanced."""
    out = {"frames_in": 0, "flood_copies": 0, "sent": 0, "dropped": {}, "held": 0,
           "switches_ok": 0, "switches": 0}
    for st in switch_stats.values():
        c = (st or {}).get("conservation")
        if not c:
            continue
        out["switches"] += 1
        out["switches_ok"] += bool(c["ok"])
        out["frames_in"] += c["frames_in"]
        out["flood_copies"] += sum(st["flood_copies"].values()) - sum(st["flood_frames"].values())
        out["sent"] += c["sent"]
        out["held"] += c["queued"] + c["on_link"]
        for reason, n in c["dropped"].items():
            out["dropped"][reason] = out["dropped"].get(reason, 0) + n
    return out


def streamed_mb(run_dir):
    """MB the run streamed to disk, by kind: the agents' records, the switches' queue
    samples, the background flows."""
    run_dir = Path(run_dir)
    kinds = {"host_records": "host-*.records.jsonl", "queue_samples": "emu/*.queues.i64",
             "background_flows": "background-*.flows.jsonl"}
    return {k: round(sum(f.stat().st_size for f in run_dir.glob(g)) / 2**20, 2) for k, g in kinds.items()}


def _running(samples, warmup_s):
    """Samples after the warm-up taken while every process of the run was up (not those of
    its start or teardown)."""
    full = max((len(s["rss_kb"]) for s in samples), default=0)
    return [s for s in samples if s["t_s"] >= warmup_s and len(s["rss_kb"]) == full]


def growth(samples, warmup_s):
    """Memory per kind of process (and in all) at the first sample after the warm-up and at
    the last, and the growth between."""
    after = _running(samples, warmup_s)
    if len(after) < 2:
        return None
    first, last = after[0], after[-1]

    def by_kind(s):
        out = {}
        for name, kb in s["rss_kb"].items():
            if name in first["rss_kb"] and name in last["rss_kb"]:   # alive throughout
                out[kind_of(name)] = out.get(kind_of(name), 0) + kb
        return out

    a, b = by_kind(first), by_kind(last)
    rows = {k: {"start_mb": round(a[k] / 1024, 1), "end_mb": round(b[k] / 1024, 1),
                "growth": round(b[k] / a[k] - 1, 4)} for k in sorted(a) if a[k]}
    total_a, total_b = sum(a.values()), sum(b.values())
    worst = max(((name, last["rss_kb"][name] / kb - 1) for name, kb in first["rss_kb"].items()
                 if kb and name in last["rss_kb"]), key=lambda x: x[1], default=(None, 0.0))
    return {"from_s": first["t_s"], "to_s": last["t_s"], "by_kind": rows,
            "total_start_mb": round(total_a / 1024, 1), "total_end_mb": round(total_b / 1024, 1),
            "total_growth": round(total_b / total_a - 1, 4) if total_a else None,
            "worst_process": worst[0], "worst_growth": round(worst[1], 4)}


def run(minutes, spec_path=None, preset=None, sample_s=10.0, warmup_min=None, out_dir=None,
        log=print):
    from dlcp_emu.emu.run import EmuBackend
    from dlcp_emu.experiment.run import run as run_experiment
    from dlcp_emu.experiment.results import new_run_dir
    from dlcp_emu.experiment.spec import load_spec
    from switch_models import PipelineSpec
    spec = load_spec(spec_path or DEFAULT_SPEC).with_field("time_limit_s", minutes * 60.0)
    pipeline = preset or spec.switch
    warmup_s = 60.0 * (warmup_min if warmup_min is not None else min(max(5.0, minutes / 3), minutes / 2))
    run_dir = Path(new_run_dir(out_dir or "results", "soak"))
    sampler = Sampler(run_dir / "emu", sample_s)
    sampler.start()
    t0 = time.monotonic()
    summary, _ = run_experiment(spec, EmuBackend(), pipeline, run_dir, log=log)
    sampler.stopped.set()
    sampler.join()
    samples = sampler.samples
    after = _running(samples, warmup_s)
    lateness = None
    if len(after) >= 3:
        lateness = {"first": interval_lateness(after[0], after[1]),
                    "last": interval_lateness(after[-2], after[-1]),
                    "intervals": lateness_by_interval(after, min_s=sample_s)}
    mem = growth(samples, warmup_s)
    switches = run_dir / "switches.json"
    frames = frames_accounted(json.loads(switches.read_text())) if switches.exists() else None
    fid = summary.get("fidelity") or {}
    result = {
        "minutes": round((time.monotonic() - t0) / 60, 2), "warmup_min": round(warmup_s / 60, 2),
        "preset": PipelineSpec.parse(pipeline).name, "samples": len(samples), "memory": mem,
        "memory_ok": bool(mem and max(r["growth"] for r in mem["by_kind"].values()) <= GROWTH_TARGET),
        "lateness_after_warmup": lateness,
        "fidelity": {k: fid.get(k) for k in ("fell_behind", "estimate", "estimate_flagged", "p99_lateness_us",
                                             "max_lateness_ms", "cpu_busy_share",
                                             "cpu_steal_share", "cpu_s")},
        "iterations": summary.get("iterations_measured"),
        "stopped_because": summary.get("stopped_because"),
        "switch_conservation_ok": summary.get("switch_conservation_ok"),
        "links_ok": summary.get("links_ok"), "link_frames": summary.get("link_frames"),
        "links_unbalanced": summary.get("links_unbalanced"),
        "network_drained": summary.get("network_drained"),
        "frames": frames, "streamed_mb": streamed_mb(run_dir),
        "records_torn": summary.get("records_torn"), "queue_samples": summary.get("queue_samples"),
        "run_dir": str(run_dir),
    }
    (run_dir / "soak.json").write_text(json.dumps({**result, "series": samples}, indent=1))
    return result


def report(r):
    """The result as tables for a terminal."""
    out = [f"soak: {r['minutes']} min of emulation ({r['preset']}), warm-up {r['warmup_min']} min, "
           f"{r['samples']} samples; stopped: {r['stopped_because']}"]
    m = r["memory"]
    if m is None:
        out.append("  memory: too few samples after the warm-up")
    else:
        out.append(f"  memory (RSS) per kind of process, from {m['from_s']:.0f} s to {m['to_s']:.0f} s "
                   f"(target growth <= {GROWTH_TARGET:.0%}): {'ok' if r['memory_ok'] else 'GROWS'}")
        out.append(f"    {'kind':16s} {'warm-up end':>12s} {'end':>12s} {'growth':>9s}")
        for k, row in m["by_kind"].items():
            out.append(f"    {k:16s} {row['start_mb']:9.1f} MB {row['end_mb']:9.1f} MB {row['growth']:+9.2%}")
        out.append(f"    {'all':16s} {m['total_start_mb']:9.1f} MB {m['total_end_mb']:9.1f} MB "
                   f"{m['total_growth']:+9.2%}   most: {m['worst_process']} {m['worst_growth']:+.2%}")
    lat = r["lateness_after_warmup"]
    if lat:
        out.append("  switch lateness per interval after the warm-up (all switches):")
        out.append(f"    {'from-to (s)':>13s} {'frames':>11s} {'mean us':>9s} {'> threshold':>12s}")
        for x in lat.get("intervals") or [lat["first"], lat["last"]]:
            span = f"{x['from_s']:.0f}-{x['to_s']:.0f}" if "from_s" in x else ""
            share = "" if x["late_share"] is None else f"{x['late_share']:.3%}"
            out.append(f"    {span:>13s} {x['frames']:11,d} {x['mean_us'] if x['mean_us'] is not None else '-':>9} "
                       f"{share:>12s}")
    fid = r["fidelity"]
    out.append("  fidelity: " + ", ".join(f"{k} {v}" for k, v in fid.items()))
    f = r.get("frames")
    if f:
        dropped = ", ".join(f"{k} {v:,}" for k, v in sorted(f["dropped"].items())) or "none"
        out.append(f"  frames accounted: the switches took in {f['frames_in']:,} frames "
                   f"(+{f['flood_copies']:,} flood copies): {f['sent']:,} sent, "
                   f"{sum(f['dropped'].values()):,} dropped ({dropped}), {f['held']:,} held at stop; "
                   f"balanced at {f['switches_ok']}/{f['switches']} switches")
    if r["link_frames"] is not None:
        out.append(f"  links: {r['link_frames']:,} frames sent over links, each received or lost "
                   f"with a reason: {r['links_ok']} (network drained at stop: {r['network_drained']}); "
                   f"iterations measured {r['iterations']}")
    else:
        out.append(f"  conservation: switches {r['switch_conservation_ok']}, links {r['links_ok']}")
    if r["links_unbalanced"]:
        out.append(f"  unbalanced links: {r['links_unbalanced']}")
    if r.get("streamed_mb"):
        out.append("  streamed to disk: " + ", ".join(f"{k.replace('_', ' ')} {v} MB"
                                                      for k, v in r["streamed_mb"].items()))
    for key in ("records_torn", "queue_samples"):
        if r.get(key):
            out.append(f"  {key.replace('_', ' ')}: {r[key]}")
    out.append(f"  table and series: {r['run_dir']}/soak.json")
    return out
