"""A schedule run's figures in `compare`'s table and `report`'s plot: per traffic class the
tail completion of its messages, the communication the ranks waited on (exposed), and the
links' utilisation (the span of a schedule's messages, not of tensors it has none of); two
seeds of examples/llm-emu.toml simulated, where dlcp's switches drop gradients."""
import numpy as np
import pandas as pd
import pytest

from dlcp_emu.experiment.spec import load_spec
from dlcp_emu.study import compare, compare_table, report

PRESETS = ["fifo", "dlcp"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("schedule-report")
    spec = load_spec("examples/llm-emu.toml").with_field("workload.iterations", 3)
    run_dir, summary = compare.compare(spec, PRESETS, seeds=2, backend="sim", root=tmp, log=lambda m: None)
    pngs = report.draw(run_dir)
    return run_dir, summary, pngs


def seed_frames(run_dir, preset, name):
    return [pd.read_parquet(f) for f in sorted((run_dir / preset).glob(f"seed-*/{name}.parquet"))]


def test_the_table_shows_each_class_tail_and_the_exposed_communication(run):
    _, summary, _ = run
    lines = compare_table.table(summary).splitlines()
    head = lines[0].split()
    assert head[:6] == ["preset", "transport", "iter", "mean", "iter", "p99"]
    assert "grad p99" in lines[0] and "act p99" in lines[0] and "act-grad p99" in lines[0] and "exposed" in lines[0]
    assert "fct p50" not in lines[0]
    for line, p in zip(lines[2:4], PRESETS):
        s = summary["presets"][p]
        cells = line.split()
        classes = s["traffic_classes"]
        want = [compare_table._ms_fine(classes[c]["fct_p99_s"]) for c in ("gradient", "activation", "activation-gradient")]
        dims = s["exposed_comm_by_dim_s"]
        assert list(dims) and set(dims) <= {"tp", "dp"}
        want += [f"{s['exposed_comm_mean_s'] * 1e3:.1f}"] + [compare_table._ms_fine(dims.get(d, 0.0)) for d in ("tp", "dp")]
        assert "exp tp" in lines[0] and "exp dp" in lines[0]
        assert cells[4:10] == want, (p, cells)
        assert cells[11] == f"{s['link_utilization'] * 100:.0f}%"
    assert "exposed: iteration time beyond each" in compare_table.table(summary)


def test_a_presets_class_figures_are_the_mean_over_its_seeds(run):
    _, summary, _ = run
    for p in PRESETS:
        s = summary["presets"][p]
        per = s["per_seed"]
        assert len(per) == 2
        for c, figures in s["traffic_classes"].items():
            assert figures["fct_p99_s"] == pytest.approx(np.mean([x["traffic_classes"][c]["fct_p99_s"] for x in per]))
            assert figures["lost_bytes"] == pytest.approx(np.mean([x["traffic_classes"][c]["lost_bytes"] for x in per]))
        assert s["exposed_comm_mean_s"] == pytest.approx(np.mean([x["exposed_comm_mean_s"] for x in per]))
        for d, v in s["exposed_comm_by_dim_s"].items():
            assert v == pytest.approx(np.mean([x["exposed_comm_by_dim_s"].get(d, 0.0) for x in per]))
    assert summary["presets"]["dlcp"]["traffic_classes"]["gradient"]["lost_bytes"] > 0


def test_utilisation_spans_the_schedules_messages(run):
    """The busiest network port's bytes over the span to the last message done (a schedule
    has no tensors, which gave no span and no utilisation)."""
    run_dir, summary, _ = run
    for p in PRESETS:
        for s, ports, msgs in zip(summary["presets"][p]["per_seed"], seed_frames(run_dir, p, "ports"),
                                  seed_frames(run_dir, p, "messages")):
            net = ports[ports["role"] == "switch"]
            span = msgs["done_s"].max() * s["time_dilation"]          # emulated seconds
            want = (net["tx_bytes"] * 8 / (net["rate_bps"] * span)).max()
            assert s["link_utilization"] == pytest.approx(want, rel=1e-9)
            assert 0.3 < want <= 1.0


def test_exposed_communication_is_laid_to_the_parallelism_each_wait_ended_on(run):
    """In the simulator the waits a rank's agent replays add up to its exposed time, rank by
    rank and iteration by iteration; here the DP rings crossing the shared uplink hold the
    ranks far longer than the TP all-reduces inside a server, which still cost some."""
    run_dir, summary, _ = run
    for p in PRESETS:
        for s, waits, exposed in zip(summary["presets"][p]["per_seed"], seed_frames(run_dir, p, "exposure"),
                                     seed_frames(run_dir, p, "exposed")):
            total = waits.groupby(["rank", "iteration"])["exposed_s"].sum()
            measured = exposed.set_index(["rank", "iteration"])["exposed_s"]
            assert total.reindex(measured.index).to_numpy() == pytest.approx(measured.to_numpy(), abs=1e-12)
            dims = s["exposed_comm_by_dim_s"]
            assert sum(dims.values()) == pytest.approx(s["exposed_comm_mean_s"], rel=1e-9)
            assert dims["dp"] > 5 * dims["tp"] > 0, dims


def test_the_plot_draws_the_tables_figures(run):
    run_dir, summary, pngs = run
    assert run_dir / "schedule_classes.png" in pngs and not (run_dir / "fct_cdf.png").exists()
    rows = pd.read_csv(run_dir / "schedule_classes.csv")
    for p in PRESETS:
        s = summary["presets"][p]
        mine = rows[rows["preset"] == p].set_index("tclass")
        assert set(mine.index) == set(s["traffic_classes"]) | {"iteration"}
        for c, figures in s["traffic_classes"].items():
            assert mine.loc[c, "p99_ms"] == pytest.approx(figures["fct_p99_s"] * 1e3, rel=1e-9), (p, c)
            assert mine.loc[c, "p50_ms"] == pytest.approx(figures["fct_p50_s"] * 1e3, rel=1e-9), (p, c)
            assert mine.loc[c, "lost_bytes"] == pytest.approx(figures["lost_bytes"])
        assert mine.loc["iteration", "exposed_ms"] == pytest.approx(s["exposed_comm_mean_s"] * 1e3, rel=1e-9)
        for d, v in s["exposed_comm_by_dim_s"].items():
            assert mine.loc["iteration", f"exposed_{d}_ms"] == pytest.approx(v * 1e3, rel=1e-9), (p, d)
        # compute and exposed make up the iteration
        assert mine.loc["iteration", "busy_ms"] + mine.loc["iteration", "exposed_ms"] == \
            pytest.approx(s["iteration_time_mean_s"] * 1e3, rel=1e-9)
