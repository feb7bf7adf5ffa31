"""A training schedule on real Mininet (examples/llm-emu.toml): GPT-3 1.3B's shape with 2
layers, tensor parallel 2 inside each of two servers of two GPUs, data parallel 2 across a
2:1 leaf-spine, under dlcp. Each host process derives the plan from its config and runs its
rank's program (`host.schedule_agent`); the run is held to what the schedule says (every
rank's iterations, the bytes of its collectives), to the traffic classes (only gradients
lose bytes) and to the simulator's iteration time on the same spec."""
import numpy as np
import pytest

from workloads.schedule import wire_bytes

from dlcp_emu.emu.run import EmuBackend
from dlcp_emu.experiment.fidelity_estimate import worst_pct
from dlcp_emu.experiment.run import run
from dlcp_emu.experiment.spec import load_spec
from dlcp_emu.experiment.spec_schedule import schedule_of
from dlcp_emu.sim.run import SimBackend

pytestmark = [pytest.mark.root, pytest.mark.slow]

ITERATIONS = 3
# The simulator's iteration is itself a draw: a little earlier or later at the shared leaf
# uplink and the two DP rings interleave otherwise, so one seed's mean of 3 iterations moves
# by ~4% (seeds 1-12: 41.4 to 47.4 ms, sd 1.6) and the emulated run, perturbed by the
# machine, is one more draw. It is held to the mean over SIM_SEEDS seeds (3 s of simulation),
# within NOISE (18 emulated draws on a 2-core machine: -1% to +7% of it, one +15%), beyond
# which the run's own estimate of its error (docs/fidelity.md) is allowed; a draw outside
# is emulated once more.
SIM_SEEDS = 8
NOISE = 0.10


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    spec = load_spec("examples/llm-emu.toml").with_field("workload.iterations", ITERATIONS)
    root = tmp_path_factory.mktemp("schedule")
    emu = _emulate(spec, root / "emu")
    sim = run(spec, SimBackend(), "dlcp", root / "sim", log=lambda m: None)
    return spec, emu, sim


def _emulate(spec, out):
    return run(spec, EmuBackend(live=False), "dlcp", out, log=lambda m: None)


def test_every_rank_runs_its_iterations(runs):
    _, (s, f), _ = runs
    assert s["completed"], (s.get("stopped_because"), s.get("host_exits"))
    assert s["switch_conservation_ok"]
    its = f["iterations"]
    done = its[its["total_s"].notna()]
    assert sorted(zip(done["rank"], done["iteration"])) == [(r, i) for r in range(4) for i in range(ITERATIONS)]
    assert (f["messages"]["done_s"].notna()).all()   # every message of every iteration arrived


def test_each_rank_sends_its_collectives_bytes(runs):
    spec, (_, f), _ = runs
    w = spec.workload
    want = wire_bytes(schedule_of(w), w["algorithms"], server_of=lambda r: r // 2) * spec.byte_scale
    msgs = f["messages"]
    for it in range(ITERATIONS):
        m = msgs[msgs["iteration"] == it]
        sent = m.groupby("src")["nbytes"].sum().reindex(range(4), fill_value=0).to_numpy()
        count = m.groupby("src").size().reindex(range(4), fill_value=0).to_numpy()
        assert np.all(np.abs(sent - want) <= count), (it, sent, want)   # each message scaled, rounded down
    # What the receivers' transports took off the real network, from each source: every
    # message whole (lost bytes zero-filled count in), rounded up to whole float32 values.
    sent = msgs.groupby("src")["nbytes"].sum().reindex(range(4), fill_value=0).to_numpy()
    count = msgs.groupby("src").size().reindex(range(4), fill_value=0).to_numpy()
    got = f["deliveries"].groupby("src")["nbytes"].sum().reindex(range(4), fill_value=0).to_numpy()
    assert np.all(got >= sent) and np.all(got - sent <= 3 * count), (got, sent)


def test_only_gradients_lose_bytes(runs):
    _, (s, f), _ = runs
    classes = f["traffic_classes"].set_index("tclass")
    assert set(classes.index) == {"activation", "activation-gradient", "gradient"}
    assert classes.loc["gradient", "lost_bytes"] > 0      # dlcp's switches did drop gradients
    others = classes.drop(index="gradient")
    assert (others["lost_bytes"] == 0).all() and (classes["unfinished"] == 0).all()
    d = f["deliveries"]
    lost = d[d["lost_bytes"] > 0]
    grads = f["messages"][f["messages"]["tclass"] == "gradient"]
    assert set(zip(lost["src"], lost["dst"], lost["iteration"])) <= \
        set(zip(grads["src"], grads["dst"], grads["iteration"]))
    assert s["loss_within_bound"]


def test_the_iteration_is_the_simulators(runs, tmp_path):
    spec, (s, _), _ = runs
    sims = [run(spec.with_field("seed", seed), SimBackend(), "dlcp", tmp_path / f"sim{seed}",
                log=lambda m: None)[0]["iteration_time_mean_s"] for seed in range(1, SIM_SEEDS + 1)]
    want = np.mean(sims)
    draws = []
    for attempt in range(2):
        if attempt:
            s = _emulate(spec, tmp_path / "emu-again")[0]
        estimate = abs(worst_pct(s["fidelity"]["estimate"])) / 100
        draws.append((round(float(s["iteration_time_mean_s"] / want - 1), 4), estimate))
        if abs(draws[-1][0]) <= NOISE + estimate:
            return
    pytest.fail(f"emulated iteration against the simulator's mean over {SIM_SEEDS} seeds "
                f"({want * 1e3:.2f} ms), (difference, estimate) of each draw: {draws}")


def test_the_waits_are_laid_to_the_parallelism_as_simulated(runs):
    """The exposed time by parallelism (the agent replayed on the arrivals the hosts
    recorded): DP waits dominate as in the simulator, and the replayed waits add up to the
    measured exposed time but for what the hosts' late timers added."""
    _, (s, f), (sim, _) = runs
    dims, want = s["exposed_comm_by_dim_s"], sim["exposed_comm_by_dim_s"]
    assert set(dims) == set(want) == {"tp", "dp"}
    assert dims["dp"] > 5 * dims["tp"] > 0
    assert sum(dims.values()) == pytest.approx(s["exposed_comm_mean_s"], rel=0.1)
