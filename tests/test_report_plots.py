"""The plots say what the table says: each PNG's CSV (the figures it draws) against the
summary, on a run of two seeds with real losses (a ring over 4:1 oversubscribed uplinks with
shallow buffers and a 20% bound, as in test_bounded_loss_sim)."""
import json

import pandas as pd
import pytest

from dlcp_emu.experiment.spec import parse_spec
from dlcp_emu.study import compare, report

from test_bounded_loss_sim import small_trace

PRESETS = ["fifo", "dlcp"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plots")
    spec = parse_spec({
        "name": "plots", "seed": 1, "time_limit_s": 30,
        "topology": {"kind": "leaf-spine", "leaves": 2, "spines": 1, "hosts_per_leaf": 2,
                     "host_rate_bps": 10e9, "oversubscription": 4.0, "buffer_bytes": 30_000},
        "workload": {"trace": str(small_trace(tmp / "small.csv")), "pattern": "ring", "workers": 4,
                     "iterations": 4, "fusion_bytes": 0},
        "transport": {"kind": "auto", "loss_bound": 0.2}})
    run_dir, summary = compare.compare(spec, PRESETS, seeds=2, backend="sim", root=tmp / "r",
                                       log=lambda m: None)
    pngs = report.draw(run_dir)
    return run_dir, summary, {p.stem: pd.read_csv(p.with_suffix(".csv")).set_index("preset") for p in pngs}


def test_the_iteration_plot_draws_the_tables_mean_and_p99_without_the_warm_up(run):
    run_dir, summary, data = run
    it = data["iteration_time"]
    for p in PRESETS:
        s = summary["presets"][p]
        assert it.loc[p, "mean_ms"] == pytest.approx(s["iteration_time_mean_s"] * 1e3, rel=1e-9)
        assert it.loc[p, "p99_ms"] == pytest.approx(s["iteration_time_p99_s"] * 1e3, rel=1e-9)
        # Iteration 0 is compute alone (nothing to synchronise before it): the least iteration
        # drawn waits for the network, as every counted one does.
        assert it.loc[p, "min_ms"] > it.loc[p, "compute_ms"] * 1.01
        assert it.loc[p, "iterations"] == 2 * 4 * (4 - 1)   # seeds x workers x (iterations - warm-up)


def test_the_cdf_legend_gives_the_tables_percentiles(run):
    _, summary, data = run
    for p in PRESETS:
        s = summary["presets"][p]
        for col, key in (("p50_ms", "tensor_fct_p50_s"), ("p99_ms", "tensor_fct_p99_s"),
                         ("p999_ms", "tensor_fct_p999_s")):
            assert data["fct_cdf"].loc[p, col] == pytest.approx(s[key] * 1e3, rel=1e-9), (p, col)


def test_the_loss_plot_adds_up_to_the_tables_loss(run):
    _, summary, data = run
    loss = data["loss_by_magnitude"]
    assert summary["presets"]["dlcp"]["loss_fraction"] > 0   # real losses, not a vacuous sum
    classes = [f"class {k} %" for k in ("none", *range(8))]
    for p in PRESETS:
        assert loss.loc[p, "all %"] == pytest.approx(summary["presets"][p]["loss_fraction"] * 100, rel=1e-9,
                                                     abs=1e-12)
        assert loss.loc[p, classes].sum() == pytest.approx(loss.loc[p, "all %"], abs=1e-12)


def test_the_queue_plot_shows_one_port_for_every_preset_the_one_that_queued_most(run):
    run_dir, _, data = run
    q = data["queue_occupancy"]
    assert set(q.index) == set(PRESETS) and len(q.groupby(["switch", "port"])) == 1
    assert (q.groupby(level=0).size() == 2).all()   # a line a seed
    peaks = pd.concat(pd.read_parquet(f) for f in run_dir.glob("*/seed-*/queues.parquet"))
    top = peaks.groupby(["switch", "port"])["queued_bytes"].max()
    assert (q["switch"].iloc[0], q["port"].iloc[0]) == top.idxmax()
    assert q["max_kB"].max() == pytest.approx(top.max() / 1e3)


def test_a_named_port_is_drawn_for_every_preset_and_a_bad_one_is_refused(run):
    run_dir, _, _ = run
    report.draw(run_dir, port=("l1", 2))
    q = pd.read_csv(run_dir / "queue_occupancy.csv")
    assert set(zip(q["switch"], q["port"])) == {("l1", 2)} and set(q["preset"]) == set(PRESETS)
    with pytest.raises(ValueError, match=r"--port l9:1: preset fifo has no such port \(ports: [^)]*l1:2, "):
        report.draw(run_dir, port=("l9", 1))
    assert report.parse_port("s1-x:12") == ("s1-x", 12)
    with pytest.raises(ValueError, match="must be SWITCH:PORT"):
        report.parse_port("l1")
    json.loads((run_dir / "summary.json").read_text())   # the run folder is untouched
