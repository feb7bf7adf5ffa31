"""Training schedules (docs/schedules.md) run over the simulated network: closed forms on a
network much faster than compute (the ideal evaluator's iteration, the 1F1B bubble), bytes
each rank sends, traffic classes (only gradients may lose bytes), both engines alike."""
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from switch_models.traffic import TRAFFIC_CLASSES
from workloads.llm import Parallelism, Roofline, TransformerConfig, llm_schedule, stage_blocks
from workloads.schedule import ideal_iteration, validate, wire_bytes

from dlcp_emu.experiment import run as experiment_run
from dlcp_emu.experiment.checks import SpecError
from dlcp_emu.experiment.spec import load_spec, parse_spec
from dlcp_emu.sim.run import SimBackend

EXAMPLE = Path(__file__).parent.parent / "examples" / "llm-tp-dp.toml"


def llm_spec(fast=True, engine="python", iterations=1, byte_scale=1e-3, **workload):
    """8 ranks (tp 2, pp 2, dp 2) of a 2-layer GPT-3 1.3B. fast: 100 Tbit/s links, 1 ns delays
    (the iteration's communication under 1% of its compute); else 10 Gbit/s, 1 us. Bytes are
    scaled to a thousandth (few packets): times are the real sizes' all the same."""
    par = workload.pop("parallelism", {"dp": 2, "tp": 2, "pp": 2, "micro_batches": 2, "seq_len": 2048})
    ranks = par.get("dp", 1) * par.get("tp", 1) * par.get("pp", 1)
    return parse_spec({
        "name": "sched", "seed": 3, "byte_scale": byte_scale, "engine": engine, "time_limit_s": 30,
        "topology": {"kind": "leaf-spine", "leaves": 2, "spines": 1, "hosts_per_leaf": ranks // 2,
                     "host_rate_bps": 1e14 if fast else 1e10, "oversubscription": 1.0,
                     "delay_ns": 1 if fast else 1000},
        "workload": {"kind": "llm", "model": "gpt3-1.3b", "layers": 2, "workers": ranks,
                     "iterations": iterations, "gpus_per_server": 2, "parallelism": par, **workload},
    })


def simulate(spec, tmp_path, preset="fifo"):
    return experiment_run.run(spec, SimBackend(), preset, tmp_path / preset, log=lambda *_: None)


def test_a_fast_network_gives_the_ideal_iteration(tmp_path):
    spec = llm_spec()
    s, f = simulate(spec, tmp_path)
    assert s["completed"]
    ideal = ideal_iteration(experiment_run.schedule_of(spec.workload)).iteration_us * 1e-6
    assert f["iterations"]["total_s"].max() == pytest.approx(ideal, rel=0.01)


def test_the_1f1b_bubble_shows_with_a_fast_network(tmp_path, monkeypatch):
    p, m = 2, 4
    # vocabulary 1: embedding and head cost nothing, every stage is the same
    even = TransformerConfig("even", hidden=512, layers=2 * p, heads=8, ffn=1376, vocab=1)
    par = Parallelism(dp=1, tp=2, pp=p, micro_batches=m, seq_len=2048)
    sched = validate(llm_schedule(even, par))
    monkeypatch.setattr(experiment_run, "schedule_of", lambda w: sched)
    s, f = simulate(llm_spec(parallelism={"tp": 2, "pp": p, "micro_batches": m, "seq_len": 2048}), tmp_path)
    iteration = f["iterations"]["total_s"].max()
    per_micro = sum(b.fwd_us + b.ig_us + b.wg_us for b in stage_blocks(even, par, Roofline(), 1)) * 1e-6
    assert iteration == pytest.approx((m + p - 1) * per_micro, rel=0.01)
    compute = np.bincount(sched.rank, weights=sched.duration_us) * 1e-6
    assert 1 - compute / iteration == pytest.approx(np.full(4, (p - 1) / (m + p - 1)), abs=0.01)


def test_each_rank_sends_the_closed_form_bytes(tmp_path):
    spec = llm_spec(iterations=2, parallelism={"dp": 2, "tp": 2, "pp": 2, "zero": 1, "micro_batches": 2,
                                                "seq_len": 2048})
    s, f = simulate(spec, tmp_path)
    sched = experiment_run.schedule_of(spec.workload)
    want = wire_bytes(sched, server_of=lambda r: r // 2) * spec.byte_scale
    msgs = f["messages"]
    for it in (0, 1):
        m = msgs[msgs["iteration"] == it]
        sent = m.groupby("src")["nbytes"].sum().reindex(range(8), fill_value=0).to_numpy()
        count = m.groupby("src").size().reindex(range(8), fill_value=0).to_numpy()
        assert np.all(np.abs(sent - want) <= count)     # each message's size scaled, rounded down
    # the receivers' transports delivered them, each rounded up to whole float32 values
    sent = msgs.groupby("src")["nbytes"].sum().reindex(range(8), fill_value=0).to_numpy()
    count = msgs.groupby("src").size().reindex(range(8), fill_value=0).to_numpy()
    got = f["deliveries"].groupby("src")["nbytes"].sum().reindex(range(8), fill_value=0).to_numpy()
    assert np.all(got >= sent) and np.all(got - sent <= 3 * count)


def test_only_gradients_lose_bytes_under_dlcp(tmp_path):
    # the example: DP gradients cross an oversubscribed spine, and dlcp's switches trim them;
    # its buffers, scaled with its bytes, sit at the floor of a few frames (tiny)
    spec = load_spec(EXAMPLE).with_field("engine", "native").with_field("workload.iterations", 1)
    s, f = simulate(spec, tmp_path, "dlcp")
    assert s["completed"]
    classes = f["traffic_classes"].set_index("tclass")
    assert classes.loc["gradient", "lost_bytes"] > 0          # the bounded-loss path did act
    others = classes.drop(index="gradient")
    assert len(others) and (others["lost_bytes"] == 0).all() and (others["unfinished"] == 0).all()
    # counted by the receivers' transports: what they zero-filled came in gradient messages only
    d = f["deliveries"]
    lost = d[d["lost_bytes"] > 0]
    grads = f["messages"][f["messages"]["tclass"] == "gradient"]
    assert len(lost) and set(zip(lost["src"], lost["dst"], lost["iteration"])) <= \
        set(zip(grads["src"], grads["dst"], grads["iteration"]))
    assert d["lost_bytes"].sum() == classes.loc["gradient", "lost_bytes"]
    # on the wire: each packet carries its message's class, and the switches' bounded-loss
    # rules dropped packets of gradients only
    p = f["packets"]
    codes = {TRAFFIC_CLASSES[c] for c in p["tclass"].unique()}
    assert codes == set(classes.index)
    bounded = p[p["drop_reason"].isin(["dlcp_threshold", "dlcp_evicted"])]
    assert len(bounded) and (bounded["tclass"] == TRAFFIC_CLASSES.index("gradient")).all()
    assert not p[p["tclass"] != TRAFFIC_CLASSES.index("gradient")]["droppable"].any()


@pytest.mark.parametrize("preset", ["fifo", "dlcp"])
def test_both_engines_give_the_same_run(tmp_path, preset):
    out = {}
    for engine in ("python", "native"):
        spec = llm_spec(fast=False, engine=engine, iterations=2)
        s, f = simulate(spec, tmp_path / engine, preset)
        out[engine] = (s, f)
    (a, fa), (b, fb) = out["python"], out["native"]
    for key in ("iteration_time_mean_s", "traffic_classes", "exposed_comm_mean_s", "loss_fraction"):
        assert a[key] == b[key], key
    assert fa["messages"].equals(fb["messages"])


@pytest.mark.parametrize("change,says", [
    ({"workers": 4}, "workload.workers: 4 ranks, but workload.parallelism has dp x tp x pp = 8"),
    ({"parallelism": {"dp": 2, "tp": 2, "pp": 2, "bogus": 1}}, "workload.parallelism.bogus: unknown field"),
    ({"path": "x.et"}, "workload.path: only with kind = 'chakra' or 'astra-text'"),
    ({"model": "resnet50"}, "workload.model: 'resnet50' is not allowed"),
    ({"algorithms": {"all-reduce": "star"}}, "workload.algorithms.all-reduce: 'star' is not allowed"),
    ({"streams": "trace"}, "workload.streams: only with kind = 'chakra', not 'llm'"),
    ({"kind": "chakra", "path": "x", "tp": 3}, "workload.tp: 3 must divide workload.workers (8)"),
    ({"kind": "chakra", "path": "x", "streams": "rank"}, "workload.streams: 'rank' is not allowed"),
])
def test_bad_schedule_workloads_are_named(change, says):
    raw = {"name": "x", "topology": {"kind": "leaf-spine", "leaves": 2, "spines": 1, "hosts_per_leaf": 4, "host_rate_bps": 1e10},
           "workload": {"kind": "llm", "model": "gpt3-1.3b", "workers": 8,
                        "parallelism": {"dp": 2, "tp": 2, "pp": 2}, **change}}
    with pytest.raises(SpecError) as e:
        parse_spec(raw)
    assert says in str(e.value)


def test_a_schedules_server_is_the_topologys():
    """On a topology of servers the hierarchical algorithms group ranks by its servers: the
    workload takes the topology's gpus_per_server, and a different one is an error."""
    topo = {"kind": "leaf-spine", "leaves": 2, "spines": 1, "hosts_per_leaf": 4, "host_rate_bps": 1e10,
            "gpus_per_server": 2}
    work = {"kind": "llm", "model": "gpt3-1.3b", "workers": 8, "parallelism": {"dp": 2, "tp": 2, "pp": 2}}
    assert parse_spec({"name": "x", "topology": topo, "workload": work}).workload["gpus_per_server"] == 2
    assert parse_spec({"name": "x", "topology": {**topo, "gpus_per_server": 1},
                       "workload": work}).workload["gpus_per_server"] == 8   # no servers: the default
    with pytest.raises(SpecError, match="workload.gpus_per_server: 4, but topology.gpus_per_server is 2"):
        parse_spec({"name": "x", "topology": topo, "workload": {**work, "gpus_per_server": 4}})


@pytest.mark.parametrize("placement,servers", [("packed", [0, 0, 1, 1, 2, 2, 3, 3]),
                                               ("spread", [0, 1, 2, 3, 0, 1, 2, 3])])
def test_a_ranks_server_is_the_one_its_host_sits_in(placement, servers):
    """The hierarchical algorithms' groups: packed ranks fill servers in order; spread ones are
    dealt over the racks, so ranks 0 and 4 share a server (r // gpus_per_server would say 0, 2)."""
    from dlcp_emu.experiment.run import prepare
    from dlcp_emu.experiment.schedule_setup import servers_of
    raw = {"name": "x", "topology": {"kind": "leaf-spine", "leaves": 2, "spines": 1, "hosts_per_leaf": 4,
                                     "host_rate_bps": 1e10, "gpus_per_server": 2},
           "workload": {"kind": "llm", "model": "gpt3-1.3b", "workers": 8, "placement": placement,
                        "parallelism": {"dp": 2, "tp": 2, "pp": 2}}}
    setup = prepare(parse_spec(raw), SimBackend(), "fifo")
    assert servers_of(setup.placement, setup.topology, 2) == servers


def test_more_ranks_than_hosts_is_an_error_before_the_run():
    raw = {"name": "x", "topology": {"kind": "leaf-spine", "leaves": 2, "spines": 1, "hosts_per_leaf": 2, "host_rate_bps": 1e10},
           "workload": {"kind": "llm", "model": "gpt3-1.3b", "workers": 8, "parallelism": {"dp": 2, "tp": 2, "pp": 2}}}
    with pytest.raises(SpecError, match="workload: needs 8 hosts"):
        parse_spec(raw)


@pytest.mark.parametrize("kind", ["astra-text", "chakra"])
def test_an_imported_workload_runs_as_generated(tmp_path, kind):
    """ASTRA-sim text or Chakra traces, written from a generated workload and run as kind
    astra-text or chakra (tp 2: its groups): the simulated iteration is the generated
    schedule's ideal one (a fast network)."""
    from workloads.llm import ZOO, to_astra_text, to_chakra
    model = dataclasses.replace(ZOO["gpt3-1.3b"], layers=2)
    par = Parallelism(dp=4, tp=2, seq_len=2048, bucket_bytes=0)
    path = tmp_path / "gpt.txt"
    if kind == "chakra":
        to_chakra(model, par, tmp_path / "gpt")
        path = tmp_path / "gpt"
    else:
        path.write_text(to_astra_text(model, par))
    raw = llm_spec().raw
    raw["workload"] = {"kind": kind, "path": str(path), "workers": 8, "tp": 2, "iterations": 1,
                       "gpus_per_server": 2}
    spec = parse_spec(raw)
    s, f = simulate(spec, tmp_path)
    assert s["completed"] and s["schedule"]["ranks"] == 8
    generated = validate(llm_schedule(model, par))
    ideal = ideal_iteration(generated).iteration_us * 1e-6
    assert f["iterations"]["total_s"].max() == pytest.approx(ideal, rel=0.01)
    # each class over the generated schedule's groups (a fast network alone would not tell)
    imported = experiment_run.schedule_of(spec.workload)

    def groups(sched):
        coll = sched.group >= 0
        return {(int(c), sched.groups[g]) for c, g in zip(sched.tclass[coll], sched.group[coll])}
    assert groups(imported) == groups(generated)


def test_a_chakra_trace_runs(tmp_path):
    """Chakra .et files (written by mlc-chakra's converter from a text workload) as kind chakra:
    on a fast network the simulated iteration is the imported schedule's ideal one."""
    import chakra.src.converter.text_converter as converter
    src = tmp_path / "model.txt"
    src.write_text("HYBRID_DATA_MODEL model_parallel_NPU_group: 2 ep: 1 pp: 1 vpp: 1 ga: 1 all_gpus: 4\n2\n"
                   "attn -1 3000 ALLREDUCE 4096 6000 ALLREDUCE 4096 2000 ALLREDUCE 16000 0\n"
                   "mlp -1 5000 ALLREDUCE 4096 5000 ALLREDUCE 4096 5000 ALLREDUCE 32000 100\n")
    converter.TextConverter(str(src), str(tmp_path / "trace"), 4, 1).convert()
    raw = llm_spec().raw
    raw["topology"]["hosts_per_leaf"] = 2
    raw["workload"] = {"kind": "chakra", "path": str(tmp_path / "trace"), "workers": 4, "iterations": 1}
    spec = parse_spec(raw)
    s, f = simulate(spec, tmp_path)
    assert s["completed"] and s["schedule"]["ranks"] == 4
    ideal = ideal_iteration(experiment_run.schedule_of(spec.workload)).iteration_us * 1e-6
    assert f["iterations"]["total_s"].max() == pytest.approx(ideal, rel=0.01)
