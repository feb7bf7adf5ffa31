"""Live training under the simulated network: the loop from gradients to accuracy is real.

With nothing lost, data-parallel training across the run's workers must end with the weights
one process gets training on each whole batch (up to float32 rounding: the workers' partial
sums add in another order); what the transports zero-fill must be missing from the update.
"""
import numpy as np
import pytest

from dlcp_emu.experiment.spec import SpecError, parse_spec
from dlcp_emu.host.learning import Mlp, load_dataset
from dlcp_emu.host.training import Training, TrainingSpec, reference
from dlcp_emu.experiment.run import run
from dlcp_emu.sim.run import SimBackend

SMALL = {"hidden": [64], "batch_size": 16, "eval_every": 2}


def spec_of(pattern="ring", iterations=3, training=SMALL, **top):
    return parse_spec({
        "name": "train", "seed": 3, "time_limit_s": 30, "packet_records": False,
        "topology": {"kind": "leaf-spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 3,
                     "host_rate_bps": 10e9},
        "workload": {"pattern": pattern, "workers": 4, "iterations": iterations},
        "transport": {"kind": "reliable"}, "training": dict(training), **top})


def replicas(frames):
    return {r: st.agent.training for r, st in frames["hosts"].stacks.items()
            if getattr(st.agent, "training", None) is not None}


@pytest.mark.parametrize("pattern", ["ring", "ps"])
def test_lossless_distributed_training_is_one_process_on_the_whole_batch(tmp_path, pattern):
    spec = spec_of(pattern)
    s, frames = run(spec, SimBackend(), "fifo", tmp_path, log=lambda m: None)
    assert s["completed"] and s["loss_fraction"] == 0.0
    w_ref, evals = reference(TrainingSpec(**spec.training), 4, spec.seed, 3)
    reps = replicas(frames)
    assert len(reps) == 4
    for rank, t in reps.items():
        # float32 rounding of sums in another order: a few ulps of weights of order 1
        np.testing.assert_allclose(t.w, w_ref, rtol=0, atol=2e-6, err_msg=f"rank {rank}")
        assert [e["iteration"] for e in t.evaluations] == [1, 2]
    # The summary's baseline is that reference, and the run matches it.
    assert s["accuracy"]["baseline"] == evals[-1]["accuracy"]
    assert s["accuracy"]["final"] == pytest.approx(evals[-1]["accuracy"], abs=1e-9)
    assert s["accuracy"]["replica_spread"] == 0.0
    table = frames["accuracy"]
    assert sorted(table["rank"].unique()) == [0, 1, 2, 3]
    assert (table["t_s"] > 0).all()


def test_updates_apply_what_arrived_and_nothing_else():
    """A replica applies the reduced gradient it is given: zeros where values were lost."""
    spec = TrainingSpec(hidden=(8,), lr=0.5, momentum=0.0)
    t = Training(spec, 0, 1, seed=1, iterations=1)
    before = t.w.copy()
    (a, b) = t.layer_range(1)
    reduced = np.ones(b - a, dtype=np.float32)
    reduced[:5] = 0.0                      # zero-filled by the transport
    t.apply((1,), reduced)
    assert np.array_equal(t.w[a:a + 5], before[a:a + 5])
    np.testing.assert_allclose(t.w[a + 5:b], before[a + 5:b] - 0.5)
    assert np.array_equal(t.w[:a], before[:a])


def test_mlp_gradient_matches_finite_differences():
    X, y = load_dataset()
    m = Mlp((64, 16, 10))
    w = m.init(2).astype(np.float32)
    g = m.gradient(w, X[:8], y[:8], 1.0)

    def loss(v):   # in float64, so a small step is not lost to rounding
        _, mean = m.evaluate(v, X[:8].astype(np.float64), y[:8])
        return mean * 8

    rng = np.random.default_rng(0)
    w64 = w.astype(np.float64)
    for i in rng.choice(m.n_params, 12, replace=False):
        e = np.zeros_like(w64)
        e[i] = 1e-5
        numeric = (loss(w64 + e) - loss(w64 - e)) / 2e-5
        assert g[i] == pytest.approx(numeric, rel=1e-3, abs=1e-5), i


def test_training_spec_errors_name_the_field():
    with pytest.raises(SpecError) as e:
        spec_of(training={"hidden": [0], "lr": -1, "dataset": "mnist", "epochs": 3})
    text = str(e.value)
    for needle in ("training.hidden", "training.lr", "training.dataset: 'mnist' is not allowed; must be one of digits",
                   "training.epochs: unknown field"):
        assert needle in text
    with pytest.raises(SpecError, match="byte_scale: 0.5 is not allowed with \\[training\\]"):
        spec_of(byte_scale=0.5)
    bad = {"name": "x", "topology": {"kind": "star", "hosts": 4},
           "workload": {"model": "resnet50", "workers": 4}, "training": {}}
    with pytest.raises(SpecError, match="workload.model: not with \\[training\\]"):
        parse_spec(bad)


def incast(loss_bound, drop_order="magnitude"):
    """8 workers push to one server through a shallow buffer whose dlcp queue manager refuses
    droppable packets early: a sixth of the gradient bytes are lost at a 50% bound."""
    return parse_spec({
        "name": "incast", "seed": 1, "time_limit_s": 60, "packet_records": False,
        "topology": {"kind": "star", "hosts": 9, "host_rate_bps": 1e9, "buffer_bytes": 24000},
        "workload": {"pattern": "ps", "workers": 8, "iterations": 30},
        "transport": {"kind": "dlcp", "loss_bound": loss_bound, "droppable_fraction": 1.0,
                      "drop_order": drop_order},
        "switch": {"preset": "dlcp", "queue_manager": {"name": "dlcp", "threshold": 0.01}},
        "training": {"hidden": [256, 256], "eval_every": 10}})


@pytest.mark.slow
def test_a_heavy_loss_bound_costs_accuracy(tmp_path):
    """What the transports zero-fill is missing from the updates: with nothing droppable the
    run is the lossless baseline; at a 50% bound about 16% of the bytes are lost and the model
    is measurably worse. Whether magnitude awareness makes the fall smaller is measured and
    printed, not asserted (README: the figures)."""
    runs = {}
    for label, bound, order in (("none", 0.0, "magnitude"), ("magnitude", 0.5, "magnitude"),
                                ("random", 0.5, "random")):
        s, _ = run(incast(bound, order), SimBackend(), {"preset": "dlcp", "queue_manager":
                              {"name": "dlcp", "threshold": 0.01}}, tmp_path / label, log=lambda m: None)
        runs[label] = s
    a = {k: s["accuracy"] for k, s in runs.items()}
    assert runs["none"]["loss_fraction"] == 0.0
    assert a["none"]["final"] == pytest.approx(a["none"]["baseline"], abs=1e-9)
    for k in ("magnitude", "random"):
        assert 0.1 < runs[k]["loss_fraction"] <= 0.5 and runs[k]["loss_within_bound"]
        assert a[k]["final_loss"] > 1.05 * a[k]["baseline_loss"], k     # held-out cross-entropy
        assert a[k]["final"] < a[k]["baseline"], k
    assert a["random"]["difference"] <= -0.01
    print("\nheavy loss (held-out accuracy, points against lossless; cross-entropy):",
          {k: (round(v["difference"] * 100, 2), round(v["final_loss"], 4)) for k, v in a.items()})


def test_compare_runs_the_spec_variants_and_reports_accuracy(tmp_path):
    from dlcp_emu.study import compare, report
    spec = spec_of(iterations=2, variants={
        "fifo": {"switch": {"preset": "fifo"}},
        "topk": {"compression": {"mode": "fixed", "ratio": 0.1, "error_feedback": True}}})
    run_dir, summary = compare.compare(spec, None, backend="sim", root=tmp_path, log=lambda m: None)
    assert list(summary["presets"]) == ["fifo", "topk"]
    fifo, topk = summary["presets"]["fifo"]["accuracy"], summary["presets"]["topk"]["accuracy"]
    assert fifo["difference"] == pytest.approx(0.0, abs=1e-9)
    assert topk["final"] is not None and topk["baseline"] == fifo["baseline"]
    assert summary["presets"]["topk"]["compression"]["wire_fraction"] < 0.3
    text = compare.table(summary)
    assert "accuracy" in text and "vs lossless" in text
    pngs = [p.name for p in report.draw(run_dir)]
    assert "accuracy.png" in pngs


def test_emulated_hosts_build_the_same_training_worker(tmp_path):
    """The emulator's host process gets [training] in its config and trains like the simulator."""
    from dlcp_emu.emu.host_configs import HostProcessConfig
    from dlcp_emu.emu.hostd import build_agent
    from dlcp_emu.emu.run_configs import host_config
    from dlcp_emu.experiment.placement import place
    from dlcp_emu.experiment.topology import scaled_topology
    spec = spec_of("ps")
    topo = scaled_topology(spec)
    placement = place(spec, topo)

    def as_read(rank):       # as the host process has it: written, then read
        files = {k: str(tmp_path / k) for k in ("ready_file", "start_file", "out_path", "records_path")}
        host_config(spec, placement, topo, rank, "dlcp", deadline_s=1, **files).write(tmp_path / "cfg.json")
        return HostProcessConfig.read(tmp_path / "cfg.json")

    cfg = as_read(0)
    plan, worker = build_agent(cfg)
    assert worker.training is not None and worker.training.spec == TrainingSpec(**spec.training)
    assert plan.bytes_per_iteration == 4 * worker.training.model.n_params
    _, server = build_agent(as_read(4))
    assert server.method == "topk" and not hasattr(server, "training")
