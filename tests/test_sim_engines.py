"""Whole simulated runs on the native engine against the Python engine: the example specs
give identical summaries and tables, whether the hosts' endpoints are Python on both (every
hop, queue, drop and mark from the core on one and from `switch_models` on the other) or
compiled inside the core on the native one (every packet and transport timer of the
training job in the core, the agents called per message); and a pipeline the core cannot run
goes to the Python path, saying why.

`test_native_network.py` holds the two networks to each other packet by packet; this holds
the simulator's use of them: batches, majors, stops, drops freeing packets, queue samples.
"""
import pandas as pd
import pytest

from dlcp_emu.experiment.spec import SpecError, load_spec
from dlcp_emu.sim.engines import WALL_CLOCK_KEYS as WALL
from dlcp_emu.experiment.run import run
from dlcp_emu.sim.run import SimBackend
from switch_models import QUEUE_MANAGERS
from switch_models.queue_managers import DropTail

ECN = {"preset": "fifo", "queue_manager": {"name": "ecn", "mark_fraction": 0.05}}
DLCP_ECN = {"preset": "dlcp", "queue_manager": {"name": "ecn", "mark_fraction": 0.05}}   # probes are ECT too

SMALL = {"time_limit_s": 60, "byte_scale": 0.002, "time_dilation": 4.0}   # the default spec's scale until 0.1
CASES = [   # (spec, preset, fields set): every example's mechanism at a byte scale that runs in seconds
    ("examples/default.toml", "fifo", SMALL),
    ("examples/default.toml", "dlcp", {"byte_scale": 0.01}),        # bounded loss acts: drops, zero-fill
    ("examples/default.toml", "pias", SMALL),
    ("examples/ps-vgg16.toml", "dlcp", {"byte_scale": 0.0005}),     # incast: evictions, trims
    ("examples/spray-vs-ecmp.toml", "dlcp", {}),              # packet spraying
    ("examples/spray-vs-ecmp.toml", "dlcp-nospray", {}),
    ("examples/dc2.toml", "dlcp", {}),
    ("examples/ps-vgg16.toml", "ndp", {"byte_scale": 0.0005}),       # trimmed headers, NACKs
    ("examples/ps-vgg16.toml", "ndp", {"byte_scale": 0.0005, "switch.preset": "ndp",   # NDP's pulls
                                       "transport.congestion": "ndp",
                                       "transport.initial_window": 20}),
    ("examples/default.toml", ECN, SMALL),                            # CE marks, the window's answer
    ("examples/default.toml", DLCP_ECN, {"byte_scale": 0.01}),
    ("examples/rail-optimized.toml", "dlcp", {"byte_scale": 0.0002}),   # servers: their own FIFO, PXN
    # a schedule (1F1B, TP and DP; its agents in the core on the native engine, per message
    # in Python on the Python one)
    ("examples/llm-tp-dp.toml", "fifo", {"workload.iterations": 1}),
    ("examples/llm-tp-dp.toml", "layer-prio", {"workload.iterations": 1}),
    ("examples/llm-tp-dp.toml", "dlcp", {"workload.iterations": 1}),
]
TABLES = ("iterations", "tensors", "deliveries", "ports", "queues", "background", "packets", "messages",
          "traffic_classes")
IDS = [f"{p.split('/')[-1][:-5]}-{s if isinstance(s, str) else s['preset'] + '-ecn'}"
       f"{'-pulls' if f.get('transport.congestion') == 'ndp' else ''}" for p, s, f in CASES]
# these run in `make test`, not in the fast tier (servers are held both ways there by test_rails,
# zero-filling by test_engines_zero_fill, trims and pulls by test_htsim_agreement's NDP incast)
FAST = set()
PARAMS = [pytest.param(*case, id=i, marks=() if i in FAST else pytest.mark.slow) for case, i in zip(CASES, IDS)]


def simulate(spec, preset, engine, tmp_path, hosts="auto"):
    return run(spec.with_field("engine", engine), SimBackend(hosts=hosts), preset, tmp_path / f"{engine}-{hosts}",
                          log=lambda *_: None)


def spec_of(path, fields, iterations=2):
    spec = load_spec(path)
    for name, value in fields.items():
        spec = spec.with_field(name, value)
    return spec.with_field("workload.iterations", min(spec.workload["iterations"], iterations))


@pytest.mark.parametrize("path,preset,fields", PARAMS)
def test_both_engines_give_identical_runs(path, preset, fields, tmp_path):
    spec = spec_of(path, fields)
    py, py_frames = simulate(spec, preset, "python", tmp_path)
    nat, nat_frames = simulate(spec, preset, "native", tmp_path, hosts="python")
    assert (py["engine"], nat["engine"]) == ("python", "native")
    assert {k: v for k, v in nat.items() if k not in WALL} == {k: v for k, v in py.items() if k not in WALL}
    assert set(nat_frames) == set(py_frames)
    for name in (n for n in TABLES if n in py_frames):   # messages, traffic_classes: schedules only
        pd.testing.assert_frame_equal(nat_frames[name].reset_index(drop=True),
                                      py_frames[name].reset_index(drop=True), obj=name)
    assert nat["switch_conservation_ok"] and nat["events"] > 0


@pytest.mark.parametrize("path,preset,fields", PARAMS)
def test_endpoints_in_the_core_give_the_python_run(path, preset, fields, tmp_path):
    spec = spec_of(path, fields)
    py, py_frames = simulate(spec, preset, "python", tmp_path)
    core, core_frames = simulate(spec, preset, "native", tmp_path, hosts="core")
    assert "hosts' endpoints in the core" in core["engine_note"], core["engine_note"]
    assert {k: v for k, v in core.items() if k not in WALL} == {k: v for k, v in py.items() if k not in WALL}
    assert set(core_frames) == set(py_frames)
    for name in (n for n in TABLES if n in py_frames):
        pd.testing.assert_frame_equal(core_frames[name].reset_index(drop=True),
                                      py_frames[name].reset_index(drop=True), obj=name)
    assert core["switch_conservation_ok"] and core["events"] > 0
    # The time inside the core is a part of the run's (`bench sim` prints it); Python's has none.
    assert py["core_wall_s"] is None and 0 < core["core_wall_s"] < core["wall_s"]


def test_endpoints_in_the_core_need_the_native_network(tmp_path):
    with pytest.raises(ValueError, match="hosts: 'core' cannot run here: .*the network is Python's"):
        simulate(spec_of("examples/default.toml", {}), "dlcp", "python", tmp_path, hosts="core")


@pytest.mark.slow
def test_the_cases_exercise_what_the_engines_must_agree_on(tmp_path):
    """The comparison above is not of quiet runs only: the dlcp case loses packets within its
    bound (drops recorded with the packets, each freeing its Packet), ndp trims, ecn marks."""
    # byte_scale 0.02: at 0.01 the one iteration loses nothing since gradients went to classes
    # 1..7 (class 0 is the lossless classes'), though its switches still drop (174 packets)
    spec = spec_of("examples/default.toml", {"byte_scale": 0.02}, iterations=1)
    s, frames = simulate(spec, "dlcp", "native", tmp_path)
    assert 0 < s["loss_fraction"] <= spec.transport["loss_bound"]
    assert frames["packets"]["drop_reason"].notna().any()
    _, frames = simulate(spec_of("examples/ps-vgg16.toml", {"byte_scale": 0.0005}), "ndp", "native", tmp_path / "ndp")
    assert frames["ports"]["trimmed"].sum() > 0
    _, frames = simulate(spec_of("examples/default.toml", {}), ECN, "native", tmp_path / "ecn")
    assert frames["ports"]["marked"].sum() > 0


@pytest.mark.slow   # a whole run on the Python engine; the choice itself is test_engine_choice's, fast
def test_a_python_only_stage_runs_on_the_python_engine_and_says_why(python_only_stage, tmp_path):
    mine = python_only_stage(QUEUE_MANAGERS, DropTail)
    spec = spec_of("examples/default.toml", SMALL).with_field("switch", {"preset": "fifo", "queue_manager": mine})
    s, _ = run(spec, SimBackend(), spec.switch, tmp_path / "auto", log=lambda *_: None)
    assert s["engine"] == "python"
    assert "queue manager 'mine' is a Python-only stage" in s["engine_note"]
    with pytest.raises(ValueError, match="engine: 'native' cannot run this pipeline .*'mine'"):
        simulate(spec, spec.switch, "native", tmp_path)


def test_auto_is_native_when_every_stage_is(tmp_path):
    s, _ = simulate(spec_of("examples/default.toml", SMALL), "dlcp", "auto", tmp_path)
    assert (s["engine"], s["engine_note"]) == ("native", "every stage of the pipeline is native; hosts' endpoints in "
                                                         "the core; ring collectives in Python (payload 'values': the "
                                                         "worker sums, compresses or trains on what arrives)")


def test_an_unknown_engine_is_a_spec_error():
    with pytest.raises(SpecError, match="engine: .*one of auto, native, python"):
        load_spec("examples/default.toml").with_field("engine", "fast")
