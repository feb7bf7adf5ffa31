"""Imports into the schedule: ASTRA-sim / SimAI per-layer text and Chakra execution traces
(made in the test by mlc-chakra's own text-to-ET converter). The text of a generated model
must give the generated schedule's ideal iteration time; bad input names the line and field."""
import numpy as np
import pytest

from workloads.importers.astra_text import astra_text_schedule, load_astra_text
from workloads.llm import ZOO, Parallelism, llm_schedule, to_astra_text
from workloads.schedule import FixedBandwidth, OpKind as K, RankLayout, ScheduleError
from workloads.schedule import TrafficClass as C
from workloads.schedule import ideal_iteration, validate

HYBRID = """HYBRID_TRANSFORMER model_parallel_NPU_group: 2 ep: 1 pp: 1 vpp: 1 ga: 1 all_gpus: 4
3
embed -1 0 ALLREDUCE 4096 0 NONE 0 0 ALLREDUCE 8000 0
attn -1 3000 ALLREDUCE 4096 6000 ALLREDUCE 4096 2000 ALLREDUCE 16000 0
mlp -1 5000 ALLREDUCE 4096 5000 ALLREDUCE 4096 5000 ALLREDUCE 32000 100
"""


def _text_model_par():
    return ZOO["gpt3-1.3b"], Parallelism(dp=4, tp=2, seq_len=1024, bucket_bytes=0)


@pytest.mark.parametrize("net", [None, FixedBandwidth(25e9, 5e-6, intra_bytes_per_s=300e9,
                                                      gpus_per_server=8),
                                 FixedBandwidth(2e9, 2e-5)])
def test_imported_text_of_a_model_gives_the_generated_ideal_time(net):
    model, par = _text_model_par()
    gen = validate(llm_schedule(model, par))
    imp = validate(astra_text_schedule(to_astra_text(model, par), 8))
    a, b = ideal_iteration(gen, net).iteration_us, ideal_iteration(imp, net).iteration_us
    assert b == pytest.approx(a, rel=0.01)
    # and the same bytes by traffic class
    for tc in (C.ACTIVATION, C.ACTIVATION_GRADIENT, C.GRADIENT):
        assert imp.sent_bytes(imp.tclass == tc).tolist() == gen.sent_bytes(gen.tclass == tc).tolist()


def test_text_export_refuses_what_the_format_cannot_hold():
    model, _ = _text_model_par()
    with pytest.raises(ValueError, match="pp 1, micro_batches 1.*got \\{'pp': 2"):
        to_astra_text(model, Parallelism(pp=2, bucket_bytes=0))


def test_hybrid_text_puts_forward_on_tp_and_weight_gradients_on_dp(tmp_path):
    path = tmp_path / "w.txt"
    path.write_text(HYBRID)
    s = validate(load_astra_text(path, 4))
    ops = s.ops_of(1)
    comm = s.kind[ops] != K.COMPUTE
    names = [s.group_names[g] for g in s.group[ops][comm]]
    classes = [C(c).label for c in s.tclass[ops][comm]]
    groups = {c: {s.groups[g] for g, c2 in zip(s.group[ops][comm], classes) if c2 == c}
              for c in set(classes)}
    assert groups == {"activation": {(0, 1)}, "activation-gradient": {(0, 1)},
                      "gradient": {(1, 3)}}
    assert len(names) == 3 + 2 + 3
    # compute: nanoseconds -> microseconds, and the update after the last gradient
    assert s.duration_us[ops].sum() == pytest.approx((0 + 3000 + 5000 + 6000 + 5000 + 2000 + 5000
                                                      + 100) / 1000)
    assert ideal_iteration(s).iteration_us == pytest.approx(26.0)  # the update runs beside


@pytest.mark.parametrize("text,match", [
    (HYBRID.replace("ALLREDUCE 16000", "ALLREDUCE_TP 16000"),
     "line 4 wg_comm_type: comm type 'ALLREDUCE_TP' unknown; allowed: NONE, ALLREDUCE"),
    (HYBRID.replace("mlp -1 5000", "mlp -1 5e"), "line 5: fwd_compute must be a number"),
    (HYBRID.replace(" 100\n", "\n"), "line 5: a layer has 12 fields"),
    (HYBRID.replace("\n3\n", "\n4\n"), "line 2 announces 4 layers, 3 follow"),
    (HYBRID.replace("HYBRID_TRANSFORMER", "PIPELINE"), "line 1: parallelism 'PIPELINE' unknown"),
    (HYBRID.replace("all_gpus: 4", "all_gpus: 8"), "all_gpus: 8 ranks, asked for 4"),
    (HYBRID.replace("pp: 1", "pp: 2"), "pp and ga must be 1"),
])
def test_bad_text_names_the_line_and_field(text, match):
    with pytest.raises(ScheduleError, match=match):
        astra_text_schedule(text, 4)


def test_data_parallel_text_reduces_over_all_ranks():
    text = "DATA\n2\nc1 -1 10 NONE 0 10 NONE 0 10 ALLREDUCE 400 0\nc2 -1 10 NONE 0 10 NONE 0 " \
           "10 ALLREDUCE 800 0\n"
    s = validate(astra_text_schedule(text, 3, time_unit="us"))
    assert {s.groups[g] for g in s.group[s.kind == K.ALL_REDUCE]} == {(0, 1, 2)}
    net = FixedBandwidth(1e9)
    res = ideal_iteration(s, net)
    # backward ends at 60 us; c1's gradient all-reduce (ring, 3 ranks) is the last
    ring = 2 * 2 * (400 / 3) / 1e9 * 1e6
    assert res.iteration_us == pytest.approx(60 + max(ring, 0), rel=0.01)


# ---- Chakra execution traces -----------------------------------------------------------------
# mlc-chakra is installed by make (requirements-nodeps.txt): missing, these tests fail, never skip
import chakra.src.converter.text_converter as chakra  # noqa: E402


def _convert(tmp_path, text, ranks):
    src = tmp_path / "model.txt"
    src.write_text(text)
    out = tmp_path / "trace"
    chakra.TextConverter(str(src), str(out), ranks, 1).convert()
    return out


def test_chakra_trace_from_the_text_converter_imports(tmp_path):
    from workloads.importers.chakra_et import load_chakra
    text = HYBRID.replace("HYBRID_TRANSFORMER", "HYBRID_DATA_MODEL")
    prefix = _convert(tmp_path, text, 4)
    assert sorted(p.name for p in tmp_path.glob("*.et")) == [f"trace.{r}.et" for r in range(4)]
    lay = RankLayout(dp=2, tp=2)
    s = validate(load_chakra(prefix, 4, layout=lay, class_groups={
        "activation": "tp", "activation-gradient": "tp", "gradient": "dp"}))
    ops = s.ops_of(0)
    # durations are the text's numbers, read as Chakra's microseconds
    assert s.duration_us[ops].sum() == 0 + 3000 + 5000 + 6000 + 5000 + 2000 + 5000
    coll = s.kind[ops] == K.ALL_REDUCE
    by_class = {C(c).label: int(s.nbytes[ops][coll][s.tclass[ops][coll] == c].sum())
                for c in np.unique(s.tclass[ops][coll])}
    # the converter leaves out the first layer's input-gradient collective
    assert by_class == {"activation": 3 * 4096, "activation-gradient": 2 * 4096,
                        "gradient": 8000 + 16000 + 32000}
    assert {s.groups[g] for g in s.group[ops][coll]} == {(0, 1), (0, 2)}
    # without communication both imports of the text take the compute's time
    txt = astra_text_schedule(text, 4, time_unit="us")
    assert ideal_iteration(s).iteration_us == pytest.approx(ideal_iteration(txt).iteration_us)


@pytest.mark.parametrize("net", [None, FixedBandwidth(25e9, 5e-6, intra_bytes_per_s=300e9,
                                                      gpus_per_server=8),
                                 FixedBandwidth(2e9, 2e-5)])
def test_chakra_trace_of_a_model_gives_the_generated_ideal_time(tmp_path, net):
    from workloads.importers.chakra_et import TP_CLASS_GROUPS, load_chakra
    from workloads.llm import to_chakra
    model, par = _text_model_par()
    gen = validate(llm_schedule(model, par))
    files = to_chakra(model, par, tmp_path / "gpt")
    assert [f.name for f in files] == [f"gpt.{r}.et" for r in range(8)]
    imp = validate(load_chakra(tmp_path / "gpt", 8, layout=RankLayout(dp=4, tp=2),
                               class_groups=TP_CLASS_GROUPS))
    a, b = ideal_iteration(gen, net).iteration_us, ideal_iteration(imp, net).iteration_us
    assert b == pytest.approx(a, rel=0.01)   # compute rounded to whole microseconds
    for tc in (C.ACTIVATION, C.ACTIVATION_GRADIENT, C.GRADIENT):
        assert imp.sent_bytes(imp.tclass == tc).tolist() == gen.sent_bytes(gen.tclass == tc).tolist()


def test_chakra_collectives_of_a_group_run_in_turn_unless_asked_otherwise(tmp_path):
    """The converter chains no collectives: without a stream a group's gradient all-reduces
    overlap, each at the whole bandwidth of an ideal network, and the iteration is far shorter."""
    from workloads.importers.chakra_et import TP_CLASS_GROUPS, load_chakra
    from workloads.llm import to_chakra
    model, par = _text_model_par()
    to_chakra(model, par, tmp_path / "gpt")
    slow = FixedBandwidth(2e9, 2e-5)
    times = {streams: ideal_iteration(validate(load_chakra(
        tmp_path / "gpt", 8, layout=RankLayout(dp=4, tp=2), class_groups=TP_CLASS_GROUPS,
        streams=streams)), slow).iteration_us for streams in ("group", "trace")}
    generated = ideal_iteration(validate(llm_schedule(model, par)), slow).iteration_us
    assert times["group"] == pytest.approx(generated, rel=0.01)
    assert times["trace"] < 0.5 * generated
    with pytest.raises(ScheduleError, match="streams: 'rank' unknown; allowed: group, trace"):
        load_chakra(tmp_path / "gpt", 8, streams="rank")


def test_chakra_trace_of_other_rank_count_is_an_error(tmp_path):
    from workloads.importers.chakra_et import load_chakra
    prefix = _convert(tmp_path, "DATA\n1\nc1 -1 10 NONE 0 10 NONE 0 10 ALLREDUCE 400 0\n", 2)
    with pytest.raises(ScheduleError, match="the trace has 2 ranks, asked for 4"):
        load_chakra(prefix, 4)
    with pytest.raises(ScheduleError, match="the trace has 2 ranks, asked for 1"):
        load_chakra(prefix, 1)
    s = validate(load_chakra(prefix, 2))
    assert s.groups[s.group[s.kind == K.ALL_REDUCE][0]] == (0, 1)
    assert s.tclass[s.kind == K.ALL_REDUCE][0] == C.GRADIENT
    with pytest.raises(ScheduleError, match="no <prefix>.<rank>.et files"):
        load_chakra(tmp_path / "nothing", 2)


def test_chakra_send_recv_and_unsupported_collectives(tmp_path):
    from chakra.schema.protobuf import et_def_pb2 as T
    from chakra.src.third_party.utils.protolib import encodeMessage

    from workloads.importers.chakra_et import load_chakra

    def write(rank, nodes):
        with open(tmp_path / f"t.{rank}.et", "wb") as f:
            encodeMessage(f, T.GlobalMetadata(version="0.0.4"))
            for n in nodes:
                encodeMessage(f, n)

    def attr(name, **kw):
        return T.AttributeProto(name=name, **kw)

    def p2p(kind, nid, src, dst, deps=()):
        return T.Node(id=nid, name=f"n{nid}", type=kind, data_deps=list(deps), attr=[
            attr("comm_src", int32_val=src), attr("comm_dst", int32_val=dst),
            attr("comm_tag", int32_val=7), attr("comm_size", int64_val=1000),
            attr("traffic_class", string_val="activation-gradient")])
    comp = T.Node(id=1, name="c", type=T.COMP_NODE, duration_micros=50)
    # rank 0 lists its send before the compute it waits for: the import sorts them
    write(0, [p2p(T.COMM_SEND_NODE, 2, 0, 1, deps=[1]), comp])
    write(1, [p2p(T.COMM_RECV_NODE, 5, 0, 1)])
    s = validate(load_chakra(tmp_path / "t", 2))
    assert s.kind.tolist() == [K.COMPUTE, K.SEND, K.RECV]
    assert s.tclass[1] == C.ACTIVATION_GRADIENT
    assert ideal_iteration(s, FixedBandwidth(1e8)).iteration_us == pytest.approx(60.0)
    write(1, [T.Node(id=5, name="g", type=T.COMM_COLL_NODE,
                     attr=[attr("comm_type", int64_val=T.GATHER)])])
    with pytest.raises(ScheduleError, match=r"comm_type 3 \(GATHER\) not supported; allowed: ALL_REDUCE"):
        load_chakra(tmp_path / "t", 2)


def write_pg_trace(prefix, groups_of_rank):
    """A 4-rank Chakra trace: a compute of 10 us, then per rank the all-reduces (1 MB) of
    the process groups named in `groups_of_rank[rank]`, each after the one before."""
    from chakra.schema.protobuf import et_def_pb2 as T
    from chakra.src.third_party.utils.protolib import encodeMessage
    for rank, names in enumerate(groups_of_rank):
        with open(f"{prefix}.{rank}.et", "wb") as f:
            encodeMessage(f, T.GlobalMetadata(version="0.0.4"))
            encodeMessage(f, T.Node(id=1, name="fwd", type=T.COMP_NODE, duration_micros=10))
            for k, pg in enumerate(names):
                encodeMessage(f, T.Node(id=2 + k, name=f"ar{k}", type=T.COMM_COLL_NODE, data_deps=[1 + k], attr=[
                    T.AttributeProto(name="comm_type", int64_val=T.ALL_REDUCE),
                    T.AttributeProto(name="comm_size", int64_val=1 << 20),
                    T.AttributeProto(name="pg_name", string_val=pg)]))


PG_GROUPS = {"0": (0, 1, 2, 3), "1": (0, 1), "2": (2, 3)}
PG_OF_RANK = [["1", "0"], ["1", "0"], ["2", "0"], ["2", "0"]]


def test_chakra_process_groups_by_pg_name(tmp_path):
    from workloads.importers.chakra_et import load_chakra
    write_pg_trace(tmp_path / "pg", PG_OF_RANK)
    s = validate(load_chakra(tmp_path / "pg", 4, process_groups=PG_GROUPS))
    coll = s.kind == K.ALL_REDUCE
    got = [(int(r), s.groups[g]) for r, g in zip(s.rank[coll], s.group[coll])]
    assert got == [(0, (0, 1)), (0, (0, 1, 2, 3)), (1, (0, 1)), (1, (0, 1, 2, 3)),
                   (2, (2, 3)), (2, (0, 1, 2, 3)), (3, (2, 3)), (3, (0, 1, 2, 3))]
    # pairs, then all four: 2 ring steps of 512 kB, then 6 of 256 kB, at 1 GB/s
    net = FixedBandwidth(1e9)
    assert ideal_iteration(s, net).iteration_us == pytest.approx(10 + 2 * 524.288 + 6 * 262.144)
    with pytest.raises(ScheduleError, match="pg_name '2' is no process group given; they are '0', '1'"):
        load_chakra(tmp_path / "pg", 4, process_groups={"0": (0, 1, 2, 3), "1": (0, 1)})


def _pg_spec(tmp_path, groups_text):
    (tmp_path / "groups.json").write_text(groups_text)
    (tmp_path / "spec.toml").write_text(
        'name = "pg"\nbyte_scale = 0.001\ntime_limit_s = 30\n'
        '[topology]\nkind = "leaf-spine"\nleaves = 2\nspines = 1\nhosts_per_leaf = 2\n'
        'host_rate_bps = 1e11\n'
        '[workload]\nkind = "chakra"\npath = "pg"\nworkers = 4\niterations = 1\n'
        'process_groups = "groups.json"\n')
    from dlcp_emu.experiment.spec import load_spec
    return load_spec(tmp_path / "spec.toml")


def test_a_spec_runs_a_chakra_trace_over_its_process_groups(tmp_path):
    """process_groups: ASTRA-sim's comm-group file beside the spec, read relative to it."""
    import json

    from dlcp_emu.experiment import run as experiment_run
    from dlcp_emu.sim.run import SimBackend
    write_pg_trace(tmp_path / "pg", PG_OF_RANK)
    spec = _pg_spec(tmp_path, json.dumps({k: list(v) for k, v in PG_GROUPS.items()}))
    sched = experiment_run.schedule_of(spec.workload)
    assert {sched.groups[g] for g in sched.group[sched.kind == K.ALL_REDUCE]} == set(PG_GROUPS.values())
    s, f = experiment_run.run(spec, SimBackend(), "fifo", tmp_path / "out", log=lambda *_: None)
    assert s["completed"] and s["schedule"]["ranks"] == 4
    # the pairs' rings and the ring of four, nothing else, crossed the network
    pairs = set(zip(f["messages"]["src"], f["messages"]["dst"]))
    assert pairs == {(0, 1), (1, 0), (2, 3), (3, 2), (1, 2), (3, 0)}


@pytest.mark.parametrize("text,says", [
    ("[0, 1]", "must hold an object {pg_name: [ranks]}, not list"),
    ('{"0": [0, 1, 4]}', "group '0' must be a list of distinct ranks in 0..3, got [0, 1, 4]"),
    ('{"0": [0, 0]}', "group '0' must be a list of distinct ranks in 0..3"),
    ("{0: [0]}", "is not JSON"),
])
def test_a_bad_process_groups_file_is_named(tmp_path, text, says):
    from dlcp_emu.experiment.checks import SpecError
    write_pg_trace(tmp_path / "pg", PG_OF_RANK)
    with pytest.raises(SpecError) as e:
        _pg_spec(tmp_path, text)
    assert "workload.process_groups: " in str(e.value) and says in str(e.value)


def test_chakra_generator_traces_import_or_name_what_they_lack(tmp_path, monkeypatch):
    """Traces of mlc-chakra's own generator (it writes them in the working folder)."""
    from chakra.src.generator import generator as gen

    from workloads.importers.chakra_et import load_chakra
    monkeypatch.chdir(tmp_path)
    gen.one_comm_coll_node_allgather(4, 65536)
    gen.two_comp_nodes_dependent(4, 5)
    gen.one_comm_coll_node_barrier(4)
    gen.one_comm_send_node(4, 1024)
    s = validate(load_chakra(tmp_path / "ALL_GATHER", 4))
    assert s.kind.tolist() == [K.ALL_GATHER] * 4 and s.nbytes.tolist() == [65536] * 4
    assert s.groups[s.group[0]] == (0, 1, 2, 3) and s.tclass[0] == C.PARAMETERS
    assert ideal_iteration(validate(load_chakra(tmp_path / "two_comp_nodes_dependent", 4))).iteration_us == 10
    with pytest.raises(ScheduleError, match=r"comm_type 9 \(BARRIER\) not supported"):
        load_chakra(tmp_path / "BARRIER", 4)
    with pytest.raises(ScheduleError, match="a send of rank 0 needs comm_src 0, got -1"):
        load_chakra(tmp_path / "one_comm_send_node", 4)


def test_shipped_text_example_is_what_the_generator_writes():
    from pathlib import Path
    shipped = Path(__file__).resolve().parents[1] / "examples/workloads/gpt3-1.3b-dp4-tp2.txt"
    model, par = _text_model_par()
    assert shipped.read_text() == to_astra_text(model, par)
    s = validate(load_astra_text(shipped, 8))
    assert s.meta["policy"] == "HYBRID_TRANSFORMER" and s.n_ranks == 8


def test_simai_expert_suffixes_pick_the_expert_groups():
    text = ("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 1 ep: 2 pp: 1 vpp: 1 "
            "ga: 1 all_gpus: 4 checkpoints: 0 checkpoint_initiates: 0\n1\n"
            "moe -1 100 ALLTOALL_EP 2048 100 ALLTOALL_EP 2048 100 ALLREDUCE_DP_EP 512 0\n")
    s = validate(astra_text_schedule(text, 4))
    ops = s.ops_of(1)
    comm = s.kind[ops] != K.COMPUTE
    got = [(K(k).label, C(c).label, s.groups[g]) for k, c, g in
           zip(s.kind[ops][comm], s.tclass[ops][comm], s.group[ops][comm])]
    assert got == [("all-to-all", "all-to-all", (0, 1)), ("all-to-all", "all-to-all", (0, 1)),
                   ("all-reduce", "gradient", (1, 3))]
