"""The schedule agent in the core (dlcp_native/src/host/schedule_agent.cpp) against its Python
oracle (`host.schedule_agent.ScheduleAgent`), run for run over the same core endpoints: the
same summaries and tables, packet by packet, on generated schedules of every shape (1F1B
pipelines, ZeRO stages, MoE all-to-all, hierarchical collectives), payload-free and with
values; and the core calls Python once a rank, not once a message."""
import collections

import pytest

from dlcp_emu.experiment.engine import choose_schedule_agents
from dlcp_emu.sim.native import NativeSimNetwork
from dlcp_emu.sim.run import SimBackend

from agent_twins import assert_core_runs_as_python, simulate
from test_schedule_run import llm_spec

TABLES = ("iterations", "deliveries", "messages", "traffic_classes", "packets", "ports")
PAR = {"dp": 2, "tp": 2, "pp": 2, "micro_batches": 2, "seq_len": 512}
CASES = {   # (workload fields, preset, payload)
    "1f1b-dlcp-sizes": ({"parallelism": {**PAR, "micro_batches": 4}}, "dlcp", "sizes"),
    "1f1b-fifo-values": ({"parallelism": PAR}, "fifo", "values"),
    "zero1-layer-prio": ({"parallelism": {**PAR, "zero": 1}}, "layer-prio", "sizes"),
    "zero3-dlcp": ({"parallelism": {**PAR, "pp": 1, "dp": 4, "zero": 3}}, "dlcp", "sizes"),
    "moe-ep-dlcp": ({"model": "mixtral-8x7b", "parallelism": {"dp": 4, "tp": 2, "pp": 1, "ep": 2, "seq_len": 256}},
                    "dlcp", "sizes"),
    "hierarchical-dlcp-values": ({"parallelism": {**PAR, "pp": 1, "dp": 4},
                                  "algorithms": {"all-reduce": "hierarchical", "all-gather": "hierarchical",
                                                 "reduce-scatter": "hierarchical"}}, "dlcp", "values"),
}


def spec_of(workload, payload):
    """Two iterations at 10 Gbit/s, the transport the preset pairs with (dlcp: bounded loss); a loss bound of 20% so that bounded loss gives up chunks of
    these small messages (1% of one would be less than a chunk)."""
    spec = llm_spec(fast=False, engine="native", iterations=2, byte_scale=2e-3, **workload)
    return spec.with_field("payload", payload).with_field("packet_records", True) \
        .with_field("transport.loss_bound", 0.2).with_field("transport.kind", "auto")


# Two shapes are compared in the fast tier (1F1B with sizes and with values); the others in `make
# test`. Every shape still runs on the core agent in the fast tier: test_schedule_exposure replays
# each case, and MoE's all-to-all loses gradient bytes below.
SLOW = {"moe-ep-dlcp", "zero3-dlcp", "zero1-layer-prio", "hierarchical-dlcp-values"}


@pytest.mark.parametrize("workload,preset,payload", [
    pytest.param(*case, id=name, marks=[pytest.mark.slow] * (name in SLOW)) for name, case in CASES.items()])
def test_the_core_agent_gives_the_python_agents_run(workload, preset, payload, tmp_path):
    assert_core_runs_as_python(spec_of(workload, payload), preset, tmp_path, "schedule agents", TABLES)


def test_the_cases_lose_gradient_bytes_and_carry_every_class(tmp_path):
    """The comparison above is not of quiet runs: bounded loss drops gradient packets (so the
    chunks' drawn classes and droppable flags decide what is lost), and messages of every
    class the generators make go through both agents."""
    workload, preset, payload = CASES["moe-ep-dlcp"]
    s, f = simulate(spec_of(workload, payload), preset, tmp_path, "core")
    assert s["traffic_classes"]["gradient"]["lost_bytes"] > 0
    assert f["packets"]["drop_reason"].notna().any()
    assert {"gradient", "activation", "activation-gradient", "all-to-all"} <= set(s["traffic_classes"])


def test_the_core_calls_python_once_a_rank_not_once_a_message(tmp_path, monkeypatch):
    """Count the core's calls of the agents' Python (the AGENT entries its loop hands out): with
    the agents in the core, one a rank (when it is done) over the whole run; with the Python
    agents, one or more a message delivered."""
    calls = collections.Counter()
    on_agent = NativeSimNetwork.on_agent

    def counting(self, sid, turn):
        def counted(now):
            calls[sid] += 1
            return turn(now)
        on_agent(self, sid, counted)

    monkeypatch.setattr(NativeSimNetwork, "on_agent", counting)
    workload, preset, payload = CASES["1f1b-dlcp-sizes"]
    spec = spec_of(workload, payload)
    s, f = simulate(spec, preset, tmp_path, "core")
    ranks, iterations = spec.workload["workers"], spec.workload["iterations"]
    assert s["completed"] and len(f["messages"]) > 50 * ranks * iterations
    assert sum(calls.values()) <= ranks and max(calls.values()) == 1
    calls.clear()
    simulate(spec, preset, tmp_path, "python")
    assert sum(calls.values()) >= len(f["messages"])


def test_where_the_agents_run_is_chosen_and_said():
    assert choose_schedule_agents("auto", endpoints_in_core=True, drop_order="magnitude") == \
        ("core", "schedule agents in the core")
    assert choose_schedule_agents("auto", endpoints_in_core=True, drop_order="random")[0] == "python"
    assert choose_schedule_agents("auto", endpoints_in_core=False, drop_order="magnitude")[0] == "python"
    with pytest.raises(ValueError, match="agents: 'core' cannot run here: transport.drop_order 'random'"):
        choose_schedule_agents("core", endpoints_in_core=True, drop_order="random")
    with pytest.raises(ValueError, match="agents must be one of auto, core, python, got 'gpu'"):
        SimBackend(agents="gpu")


def test_the_benchmark_runs_the_example_both_ways_alike():
    from dlcp_emu.tools import bench_sim
    r = bench_sim.schedule()
    assert r["identical"] and r["core"]["packet_hops"] == r["python"]["packet_hops"] > 0 and r["ratio"] > 0
