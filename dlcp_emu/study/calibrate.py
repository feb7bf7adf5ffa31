"""The fidelity estimate's ground truth: `validate` over a grid of specs x time dilations x
seeds, each case's emulated fidelity figures kept beside the measured emulated-vs-simulated
difference (docs/fidelity.md).

    <out>.jsonl   one line per spec, dilation, seed and preset (appended as cases end, so
                  that a grid cut short keeps what it measured and resumes where it stopped)
"""
import json
from pathlib import Path

from dlcp_emu.study import validate

# (spec, presets, {dilation: seeds}): the default spec's presets are the ones its validation
# compares; each other spec runs its own [switch]. Left out: dilations that the wall-clock
# time limit cannot carry (the default at 4: its hosts fall ever further behind), and seeds
# where one case costs minutes of emulation and its first seed was far inside or outside
# the tolerance (the default at 32: 4 min a seed; the parameter server at 32: 2.5 min).
GRID = (
    ("examples/default.toml", ("fifo", "layer-prio", "dlcp"), {8: 3, 16: 3, 32: 1}),
    ("examples/validate-ps.toml", None, {4: 3, 8: 3, 16: 2}),
    ("examples/validate-ring.toml", None, {4: 3, 8: 3, 16: 3, 32: 1}),
    ("examples/spray-vs-ecmp.toml", None, {4: 3, 8: 3, 16: 3, 32: 1}),
)


def cases(grid=GRID):
    """[(spec path, presets or None, dilation, seed index)]: the first seed of every case
    first, cheap dilations first."""
    out = [(path, presets, d, k) for path, presets, dilations in grid for d, seeds in dilations.items()
           for k in range(seeds)]
    return sorted(out, key=lambda c: (c[3], c[2], c[0]))


def key(path, dilation, k):
    return f"{Path(path).stem}:{dilation:g}:{k}"


def done_keys(out_path):
    path = Path(out_path)
    if not path.exists():
        return set()
    return {json.loads(line)["case"] for line in path.read_text().splitlines() if line.strip()}


def at_dilation(spec, dilation):
    """The spec at another dilation, its wall-clock time limit scaled alike: the same
    real-world time (its background flows are drawn for it, and bounded)."""
    limit = spec.time_limit_s * dilation / spec.time_dilation
    if dilation < spec.time_dilation:
        return spec.with_field("time_limit_s", limit).with_field("time_dilation", float(dilation))
    return spec.with_field("time_dilation", float(dilation)).with_field("time_limit_s", limit)


def run_case(path, presets, dilation, k, out_path, root="results", log=print):
    """One validate of the spec at this dilation and its seed + k; appends its rows."""
    from dlcp_emu.experiment.spec import load_spec
    spec = load_spec(path)
    spec = at_dilation(spec, dilation).with_field("seed", spec.seed + k)
    if presets is None:
        presets = [spec.switch["preset"]]
    out_dir, report = validate.validate(spec, list(presets), seeds=1, root=root, log=log, noise_seeds=0)
    summaries = {b: json.loads((Path(d) / "summary.json").read_text()) for b, d in report["runs"].items()}
    Path(out_path).parent.mkdir(parents=True, exist_ok=True)
    with open(out_path, "a") as f:
        for row in report["presets"]:
            f.write(json.dumps(record(key(path, dilation, k), spec, row, summaries, out_dir)) + "\n")


def record(case, spec, row, summaries, out_dir):
    """A grid row: the measured differences and everything the emulated run measured of
    itself, with the simulated run's figures beside it."""
    preset = row["preset"]
    emu, sim = (summaries[b]["presets"][preset] for b in ("emu", "sim"))
    keep = ("iteration_time_mean_s", "iteration_time_p99_s", "tensor_fct_p50_s", "tensor_fct_p99_s",
            "scaling_factor", "loss_fraction", "link_utilization", "duration_s", "completed")
    return {"case": case, "spec": spec.name, "preset": preset, "dilation": spec.time_dilation,
            "seed": spec.seed, "byte_scale": spec.byte_scale, "pattern": spec.workload["pattern"],
            "workers": spec.workload["workers"], "transport": emu.get("transport"),
            "iteration_difference": row["iteration_time_mean_s"]["difference"],
            "fct_p99_difference": row["tensor_fct_p99_s"]["difference"],
            "emu": {k: emu.get(k) for k in keep}, "sim": {k: sim.get(k) for k in keep},
            "fidelity": emu["fidelity"], "packet_hops": sim.get("packet_hops"),
            "validation": str(out_dir)}


def pending(out_path):
    """The grid's cases not yet in out_path, as case keys (`spec:dilation:seed`)."""
    done = done_keys(out_path)
    return [key(path, d, k) for path, presets, d, k in cases() if key(path, d, k) not in done]


def run_key(case, out_path, root="results", log=print):
    """Runs the case named `spec:dilation:seed index` (a key of `pending`)."""
    stem, d, k = case.split(":")
    for path, presets, _ in GRID:
        if Path(path).stem == stem:
            return run_case(path, presets, float(d), int(k), out_path, root=root, log=log)
    raise ValueError(f"--case {case!r}: no spec {stem!r} in the grid ({', '.join(Path(p).stem for p, *_ in GRID)})")
