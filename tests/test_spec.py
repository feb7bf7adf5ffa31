"""Experiment specs: good ones parse, bad ones name every bad field and what is allowed."""
from pathlib import Path

import pytest

from dlcp_emu.experiment.spec import SpecError, load_spec, parse_spec

GOOD = {
    "name": "t1",
    "topology": {"kind": "leaf-spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 4,
                 "host_rate_bps": 10e9, "oversubscription": 2.0},
    "workload": {"model": "resnet50", "pattern": "ring", "workers": 4},
    "transport": {"kind": "dlcp"},
    "switch": {"preset": "dlcp"},
}


def test_good_spec_parses_with_defaults():
    spec = parse_spec(GOOD)
    assert spec.workload["iterations"] == 3 and spec.workload["fusion_bytes"] == 64 << 20
    assert spec.transport["loss_bound"] == 0.01
    assert spec.background is None
    assert len(spec.build_topology().hosts()) == 8
    assert spec.with_switch("fifo").switch == {"preset": "fifo"}


def test_every_problem_is_reported_at_once():
    bad = {**GOOD, "mtu": 20000, "colour": "red",
           "workload": {"model": "resnet5", "workers": 0, "pattern": "tree"},
           "transport": {"kind": "quic"}, "switch": {"preset": "fifoo"},
           "background": {"load": 1.5, "transport": "udp"}}
    with pytest.raises(SpecError) as err:
        parse_spec(bad)
    text = str(err.value)
    for expected in [
        "colour: unknown field; allowed: name, seed",
        "mtu: 20000 is not allowed; must be an integer in 576..9000",
        "workload.model: 'resnet5' is not allowed; must be one of bert-base",
        "workload.workers: 0 is not allowed; must be an integer in 1..1024",
        "workload.pattern: 'tree' is not allowed; must be one of ring, ps, ds-sync",
        "transport.kind: 'quic' is not allowed; must be one of tcp, reliable, dlcp, auto",
        "switch: unknown preset 'fifoo'",
        "background.load: 1.5 is not allowed; must be a fraction of the host link rate in (0, 0.95]",
        "background.transport: 'udp' is not allowed; must be one of reliable, tcp",
    ]:
        assert expected in text, expected
    assert len(err.value.problems) == 9


def test_topology_errors_and_host_count():
    with pytest.raises(SpecError, match="topology: leaf-spine: .*leaves"):
        parse_spec({**GOOD, "topology": {**GOOD["topology"], "leaves": 0}})
    with pytest.raises(SpecError, match="topology.kind: unknown topology 'ring'"):
        parse_spec({**GOOD, "topology": {"kind": "ring"}})
    with pytest.raises(SpecError, match="needs 9 hosts .* but topology leaf-spine has 8"):
        parse_spec({**GOOD, "workload": {"model": "resnet50", "workers": 8, "pattern": "ps"}})


def test_model_xor_trace(tmp_path):
    with pytest.raises(SpecError, match="exactly one of model"):
        parse_spec({**GOOD, "workload": {"workers": 2}})
    with pytest.raises(SpecError, match="workload.trace: no file at"):
        parse_spec({**GOOD, "workload": {"trace": str(tmp_path / "none.csv"), "workers": 2}})


def test_load_spec_reports_toml_and_io_errors(tmp_path):
    p = tmp_path / "x.toml"
    p.write_text("name = \n")
    with pytest.raises(SpecError, match="not valid TOML"):
        load_spec(p)
    with pytest.raises(SpecError, match="cannot read"):
        load_spec(tmp_path / "missing.toml")


def test_background_flow_count_is_checked_against_the_time_limit():
    spec = {**GOOD, "time_limit_s": 600, "background": {"load": 0.5}}
    with pytest.raises(SpecError, match=r"background: load 0.5 over time_limit_s 600 means about [\d,]+ "
                                        r"flows \(.* hosts, links at .* bit/s: topology hosts and host_rate_bps\), "
                                        r"above the 20,000 a run holds; lower background.load"):
        parse_spec(spec)
    assert parse_spec({**spec, "time_limit_s": 5}).background["transport"] == "reliable"


@pytest.mark.parametrize("path", sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.toml")),
                         ids=lambda p: p.name)
def test_every_example_spec_is_valid(path):
    spec = load_spec(path)
    assert spec.name and spec.build_topology().hosts()


def test_compression_fields_are_checked():
    spec = parse_spec({**GOOD, "compression": {"mode": "dc2", "target_delay_ms": 5}})
    assert spec.compression == {"mode": "dc2", "ratio": 0.1, "min_ratio": 0.01,
                                "target_delay_ms": 5, "increase": 0.05, "decrease": 0.5,
                                "method": "topk", "error_feedback": False}
    assert parse_spec(GOOD).compression["mode"] == "none"
    with pytest.raises(SpecError) as e:
        parse_spec({**GOOD, "compression": {"mode": "gzip", "ratio": 0, "speed": 1}})
    text = str(e.value)
    assert "compression.mode: 'gzip' is not allowed; must be one of none, fixed, dc2" in text
    assert "compression.ratio: 0 is not allowed; must be a fraction of values kept in (0, 1]" in text
    assert "compression.speed: unknown field; allowed: mode, ratio, min_ratio" in text
    with pytest.raises(SpecError) as e:
        parse_spec({**GOOD, "compression": {"mode": "dc2", "method": "qsgd", "error_feedback": 1}})
    text = str(e.value)
    assert "compression.method: qsgd has no kept ratio for dc2 to steer" in text
    assert "compression.error_feedback: 1 is not allowed; must be true or false" in text
    with pytest.raises(SpecError, match="compression.method: 'powersgd' is not allowed; must be one of topk, randomk, qsgd"):
        parse_spec({**GOOD, "compression": {"method": "powersgd"}})
    with pytest.raises(SpecError, match="transport.drop_order: 'largest' is not allowed; must be one of magnitude, random"):
        parse_spec({**GOOD, "transport": {"drop_order": "largest"}})


def test_transport_congestion_and_rto_floor_are_checked():
    spec = parse_spec(GOOD)
    assert (spec.transport["congestion"], spec.transport["min_rto_us"]) == ("newreno", 1000)
    ecn = {"preset": "fifo", "queue_manager": {"name": "ecn", "mark_fraction": 0.1}}
    spec = parse_spec({**GOOD, "transport": {"congestion": "dctcp", "min_rto_us": 200}, "switch": ecn})
    assert (spec.transport["congestion"], spec.transport["min_rto_us"]) == ("dctcp", 200)
    with pytest.raises(SpecError, match="transport.congestion: 'cubic' is not allowed; must be one of newreno, dctcp"):
        parse_spec({**GOOD, "transport": {"congestion": "cubic"}})
    with pytest.raises(SpecError, match="transport.min_rto_us: 0 is not allowed; must be a number of microseconds"):
        parse_spec({**GOOD, "transport": {"min_rto_us": 0}})
    assert parse_spec({**GOOD, "transport": {"initial_ssthresh": 10}}).transport["initial_ssthresh"] == 10
    with pytest.raises(SpecError, match='transport.initial_ssthresh: 1 is not allowed; must be "infinite" or 2..1048576 packets'):
        parse_spec({**GOOD, "transport": {"initial_ssthresh": 1}})
    with pytest.raises(SpecError, match="transport.dctcp_alpha: 2 is not allowed; must be a fraction in 0..1"):
        parse_spec({**GOOD, "transport": {"dctcp_alpha": 2}})
    assert parse_spec(GOOD).transport["initial_window"] == 10
    assert parse_spec({**GOOD, "transport": {"initial_window": 104}}).transport["initial_window"] == 104
    with pytest.raises(SpecError, match="transport.initial_window: 0.5 is not allowed; must be 1..1048576 packets"):
        parse_spec({**GOOD, "transport": {"initial_window": 0.5}})
    with pytest.raises(SpecError, match="transport.congestion: dctcp reacts to ECN marks, and the switch's queue "
                                        "manager 'dlcp' marks none"):
        parse_spec({**GOOD, "transport": {"congestion": "dctcp"}})


def test_with_field_sets_one_field_and_checks_it():
    spec = parse_spec(GOOD)
    assert spec.with_field("compression.mode", "fixed").compression["mode"] == "fixed"
    assert spec.with_field("seed", 9).seed == 9
    assert spec.with_field("workload.workers", 2).workload["workers"] == 2
    assert spec.workload["workers"] == GOOD["workload"]["workers"]   # the original is untouched
    with pytest.raises(SpecError, match="workload.wrokers: unknown field"):
        spec.with_field("workload.wrokers", 2)
    with pytest.raises(SpecError, match="seed: is not a table"):
        parse_spec({**GOOD, "seed": 3}).with_field("seed.x", 1)


def test_variants_lay_their_tables_over_the_spec_field_by_field():
    spec = parse_spec({**GOOD, "transport": {"kind": "dlcp", "loss_bound": 0.02},
                       "variants": {"fifo": {"switch": {"preset": "fifo"}, "transport": {"kind": "reliable"}},
                                    "wide": {"transport": {"loss_bound": 0.1}, "seed": 7}}})
    (n1, fifo), (n2, wide) = spec.variant_specs()
    assert (n1, n2) == ("fifo", "wide")
    assert fifo.switch == {"preset": "fifo"} and fifo.transport["kind"] == "reliable"
    assert wide.transport == {**spec.transport, "loss_bound": 0.1}     # kind kept from the spec
    assert wide.seed == 7 and wide.switch == spec.switch and not wide.variants
    with pytest.raises(SpecError) as e:
        parse_spec({**GOOD, "variants": {"bad one": {}, "x": {"transport": {"loss_bound": 2}},
                                         "y": {"switch": {"preset": "nope"}}}})
    text = str(e.value)
    assert "variants.bad one: a name of letters, digits, '-' and '_' only" in text
    assert "variants.x: transport.loss_bound: 2 is not allowed; must be a fraction in 0..0.5" in text
    assert "variants.y: switch:" in text
