"""time_dilation = "auto": the smallest power of two this machine keeps up with, from the
spec's simulated packet demand and the machine's measured costs; said and recorded."""
import json
import tomllib
from pathlib import Path

import numpy as np
import pytest

from dlcp_emu.emu.placement import split_cpus
from dlcp_emu.experiment.fidelity import HOST_LAG_LIMIT
from dlcp_emu.experiment.spec import SpecError, parse_spec
from dlcp_emu.study import dilation
from dlcp_emu.study.compare import compare, dilations, variants
from dlcp_emu.study.dilation import BUSY_LIMIT, DilationError, Machine, choose

DEFAULT = Path(__file__).resolve().parent.parent / "examples" / "default.toml"
FRAME_NS = 12_304.0   # 1538 bytes at 1 Gbit/s: the default spec's host link at byte scale 0.1


def spec(**top):
    return parse_spec({
        "name": "auto", "time_dilation": "auto", "byte_scale": 0.002, "time_limit_s": 60, **top,
        "topology": {"kind": "leaf-spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2,
                     "host_rate_bps": 10e9, "oversubscription": 2.0},
        "workload": {"model": "resnet50", "workers": 4, "iterations": 2},
        "transport": {"kind": "auto"}, "switch": {"preset": "dlcp"}})


def machine(hop_cpu_ns=10_000.0, wake_ns=1_000.0, cores=2):
    return Machine(cores=cores, wake_lag_p50_ns=wake_ns,
                   exchange_cpu_ns=hop_cpu_ns / dilation.HOP_CPU_PER_EXCHANGE)


# -- the choice: pure arithmetic over demand, frame time and the machine ----------------------

def test_the_cpu_condition_picks_the_smallest_power_of_two_within_the_busy_limit():
    m = machine()
    # Demand that keeps the cores exactly at the limit at 16: 16 is taken, 8 is not.
    at_limit = BUSY_LIMIT * m.cores * 16 / (m.hop_cpu_ns * 1e-9)
    assert choose(at_limit, FRAME_NS, m)["dilation"] == 16
    assert choose(at_limit * 1.01, FRAME_NS, m)["dilation"] == 32
    assert choose(at_limit * 0.99 / 2, FRAME_NS, m)["dilation"] == 8
    pick = choose(at_limit, FRAME_NS, m)
    assert pick["busy_share"] == pytest.approx(BUSY_LIMIT)
    # Twice the cores carry twice the demand at one dilation.
    assert choose(at_limit, FRAME_NS, machine(cores=4))["dilation"] == 8


def test_the_wake_condition_holds_a_host_wake_up_within_a_tenth_of_a_frame():
    # No CPU demand to speak of: the wake-up alone decides.
    wake = HOST_LAG_LIMIT * FRAME_NS * 4
    assert choose(1.0, FRAME_NS, machine(wake_ns=wake))["dilation"] == 4
    assert choose(1.0, FRAME_NS, machine(wake_ns=wake * 1.01))["dilation"] == 8
    assert choose(1.0, FRAME_NS, machine(wake_ns=1.0))["dilation"] == 1
    # Both conditions: the stricter one wins.
    m = machine(wake_ns=HOST_LAG_LIMIT * FRAME_NS * 64)
    assert choose(1e6, FRAME_NS, m)["dilation"] == 64


def test_a_demand_no_dilation_carries_is_an_error_naming_time_dilation():
    with pytest.raises(DilationError, match=r'^time_dilation: "auto" found no dilation up to 1024'):
        choose(1e12, FRAME_NS, machine())


def test_the_choice_skips_dilations_the_spec_refuses_and_says_what_bound_it():
    # The machine keeps up from 1 on; the spec refuses below 8 (too many background flows).
    refuses = lambda d: "background: too many flows" if d < 8 else None   # noqa: E731
    pick = choose(1.0, FRAME_NS, machine(wake_ns=1.0), refuses=refuses)
    assert pick["dilation"] == 8 and pick["bound"] == "spec"
    assert pick["bound_by"] == "the spec refuses 4: background: too many flows"
    # Where the machine needs more than the spec's floor, the machine bounds it.
    m = machine(wake_ns=HOST_LAG_LIMIT * FRAME_NS * 32)
    pick = choose(1.0, FRAME_NS, m, refuses=refuses)
    assert pick["dilation"] == 32 and pick["bound"] == "wake-up"
    # Nothing ruled out: dilation 1, no bound.
    assert choose(1.0, FRAME_NS, machine(wake_ns=1.0)) | {"busy_share": 0, "wake_share": 0} == \
        {"dilation": 1, "busy_share": 0, "wake_share": 0, "bound": None, "bound_by": None}


def test_a_machine_that_needs_more_than_the_spec_allows_is_an_error_naming_both():
    # The slowest link would fall below 1 bit/s from 32 on; this machine keeps up from 64.
    refuses = lambda d: "time_dilation: runs the slowest link below 1 bit/s" if d >= 32 else None  # noqa: E731
    m = machine(wake_ns=HOST_LAG_LIMIT * FRAME_NS * 64)
    with pytest.raises(DilationError, match=r'^time_dilation: "auto" found no dilation that both this machine '
                                            r'keeps up with \(from 64 on\) and the spec accepts: at 64, '
                                            r'time_dilation: runs the slowest link'):
        choose(1.0, FRAME_NS, m, refuses=refuses)


# -- the spec field -------------------------------------------------------------------------

def test_auto_is_a_value_of_time_dilation_and_is_checked_again_once_chosen():
    s = spec()
    assert s.dilation_auto and s.time_dilation == 1.0
    assert not s.with_field("time_dilation", 8.0).dilation_auto
    with pytest.raises(SpecError, match=r'time_dilation: .fast. is not allowed; must be a number >= 1, or "auto"'):
        spec(time_dilation="fast")
    # What depends on the dilation is checked with the one chosen: background flows drawn for
    # the time limit, too many at dilation 1, a handful at 64.
    busy = spec(time_limit_s=150).raw | {"background": {"load": 0.5}}
    assert parse_spec(busy).dilation_auto
    with pytest.raises(SpecError, match="background: load 0.5 over time_limit_s 150"):
        parse_spec(busy).with_field("time_dilation", 1.0)
    assert parse_spec(busy).with_field("time_dilation", 64.0).time_dilation == 64.0


# -- what is measured ---------------------------------------------------------------------------

@pytest.mark.slow   # a second or more: the full tier
def test_the_probe_measures_wake_ups_and_exchanges_on_this_machine():
    import dlcp_native.datapath as compiled
    lags = np.array(compiled.probe_wake_lag(200, 100_000))
    assert len(lags) == 200 and (lags > 0).all() and np.median(lags) < 10e6
    count, cpu_ns, wall_ns = compiled.probe_round_trips(500)
    assert count == 500 and 0 < cpu_ns and 0 < wall_ns
    m = dilation.measure_machine()
    assert m.cores >= 1 and 0 < m.wake_lag_p50_ns < 10e6 and 0 < m.exchange_cpu_ns < 10e6


@pytest.mark.slow   # a second or more: the full tier
def test_the_demand_is_the_simulated_packet_hops_per_second_and_follows_the_bytes():
    # Twice the bytes on twice the rate (byte scale) in the same real-world time: twice the
    # packets a second, where the scale no longer changes the results (0.05 and 0.1; at 0.002
    # iterations run 20-40% long, the README's scale table).
    small, large = (dilation.spec_demand(spec(byte_scale=b), "dlcp") for b in (0.05, 0.1))
    assert 1.8 < large / small < 2.2, (small, large)
    # A leaf-spine of 4 hosts at 10 Gbit/s x 0.05 moves at most each host's line rate in MTU
    # frames over at most 5 hops (NIC, leaf, spine, leaf, NIC), both ways with acknowledgements.
    ceiling = 4 * 10e9 * 0.05 / (1538 * 8) * 5 * 2
    assert 0.05 * ceiling < small < ceiling


@pytest.mark.slow   # a second or more: the full tier
def test_presets_of_one_spec_share_one_choice():
    logged = []
    runs = dilations(variants(spec(), ["fifo", "dlcp"]), log=logged.append)
    (d1, c1), (d2, c2) = [(v.time_dilation, c) for _, _, v, c in runs]
    assert d1 == d2 == c1["dilation"] and c1 is c2 and not runs[0][2].dilation_auto
    assert len(logged) == 1 and logged[0].startswith(f"time_dilation auto: {c1['dilation']} (")


# Machines as the probe reports them (Machine's figures), injected: the choice must never
# depend on how fast the machine running the test is.
FAST = machine(hop_cpu_ns=1_000.0, wake_ns=1_000.0, cores=2)     # keeps up with the default at 1
SLOW = machine(hop_cpu_ns=30_000.0, wake_ns=30_000.0, cores=1)   # needs 64: CPU-bound
ONE_CORE = machine(hop_cpu_ns=12_000.0, wake_ns=6_000.0, cores=1)


@pytest.mark.slow   # seconds: the demand's simulation
@pytest.mark.parametrize("m, want, bound", [(FAST, 8, "spec"), (SLOW, 64, "cpu"), (ONE_CORE, 32, "cpu")],
                         ids=["fast", "slow", "one-core"])
def test_auto_picks_for_the_default_only_a_dilation_its_spec_accepts(m, want, bound):
    """The default's background (load 0.2 over time_limit_s 150) needs 8 or more: at 4 it would
    be drawn as ~33,800 flows, above the 20,000 a run holds. A fast machine's probe once chose
    4 and the spec then refused itself (the CI failure of a fresh machine)."""
    s = parse_spec(tomllib.loads(DEFAULT.read_text()) | {"time_dilation": "auto"})
    logged = []
    chosen, choice = dilation.resolve(s, "dlcp", log=logged.append, machine=m)
    assert chosen.time_dilation == choice["dilation"] == want and choice["bound"] == bound
    assert dilation.spec_refusal(s, want) is None and not chosen.dilation_auto
    if bound == "spec":
        assert dilation.spec_refusal(s, want // 2).startswith("background: load 0.2 over time_limit_s 150")
        assert choice["bound_by"].startswith(f"the spec refuses {want // 2}: background:")
        assert f"; not {want // 2}: the spec refuses {want // 2}: background:" in logged[0]


@pytest.mark.slow   # seconds: a simulated run
def test_the_simulator_runs_auto_at_the_chosen_dilation_on_a_fast_machine(tmp_path):
    """At dilation 1 the default's background would be drawn for 150 real-world seconds,
    135,068 flows, beyond what a run holds (the simulator refused it)."""
    s = parse_spec(tomllib.loads(DEFAULT.read_text()) | {"time_dilation": "auto"})
    run_dir, summary = compare(s, ["dlcp"], backend="sim", root=tmp_path, log=lambda m: None, machine=FAST)
    got = summary["presets"]["dlcp"]
    assert got["completed"] and got["time_dilation"] == got["time_dilation_choice"]["dilation"] == 8
    assert got["time_dilation_choice"]["bound"] == "spec"


@pytest.mark.root
@pytest.mark.slow
def test_an_emulation_with_auto_says_and_records_the_dilation_it_chose(tmp_path):
    logged = []
    run_dir, summary = compare(spec(), ["dlcp"], backend="emu", root=tmp_path, log=logged.append)
    s = json.loads((run_dir / "summary.json").read_text())["presets"]["dlcp"]
    assert s["completed"], s.get("stopped_because")
    choice = s["time_dilation_choice"]
    assert s["time_dilation"] == choice["dilation"] in dilation.LADDER
    assert s["byte_scale"] == 0.002
    assert choice["busy_share"] <= BUSY_LIMIT and choice["wake_share"] <= HOST_LAG_LIMIT
    assert any(line.startswith(f"time_dilation auto: {choice['dilation']} (") for line in logged)
    # The run says where its processes ran (emu/placement.py).
    assert s["fidelity"]["cpus"] == dict(zip(("switches", "hosts"), split_cpus()))
