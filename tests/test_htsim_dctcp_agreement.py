"""DCTCP incast held to htsim's (tests/reference/htsim/dctcp; table in docs/baselines.md), on
htsim's own constants (dlcp_emu/study/htsim_dctcp.py): 10 Gbit/s, 9000-byte packets, a k=8 fat
tree with a collateral flow. htsim names no flow when one finishes, so its mean and p99 are not
known. Which flows share the collateral flow's link is a path draw (htsim's seed, our switch
seed), so both sides run over DRAWS draws and the bar is on the draws: the mean over draws of
the last flow's completion within 10% of htsim's wherever htsim has no timeout in any draw;
timeouts in no more draws than htsim's plus one; and where htsim times out, ours in at least
as many draws less one, or its last flow earlier than htsim's (docs/baselines.md argues it)."""
import importlib.util
import json

import pytest

from dlcp_emu.cli import main
from dlcp_emu.study import htsim_dctcp

REFERENCE_DIR = htsim_dctcp.REFERENCE_DIR
REFERENCE = htsim_dctcp.reference()
REFERENCE_DRAWS = htsim_dctcp.reference_draws()
TOLERANCE = 0.10
DRAW_SLACK = 1          # timeouts in one draw more (or fewer) than htsim's: one draw's luck
# (transport, senders, buffer frames): why ours misses over the draws, measured on this commit with
# htsim's sender constants and reaction, and its SYN's stand-in (htsim_dctcp.settings, SYN_BYTES).
MISSES = {
    ("dctcp", 8, 32): ("htsim times out here in 8 of 8 draws, ours in 4 (28 timeouts), so the rule falls to "
                       "the last flow: ours 380 ms mean over draws against htsim's 194. Ours times out twice "
                       "in those 4 (250 ms, then 500) and ends at 754-755 ms; so do htsim's: in 6 of its 8 "
                       "draws 1-4 flows take a second RTO at 581-587 ms and are unfinished when its run "
                       "stops at 600 ms, so they print nothing and its mean last print leaves them out "
                       "(docs/baselines.md)"),
}


# Each case is 8 runs (1 s of CPU and more), so all are in `make test`; the fast tier runs the
# scenario (the draws, the SYN's stand-in, the reaction: the tests above) and its reference.
def _cases():
    for key in REFERENCE_DRAWS:
        marks = [pytest.mark.xfail(strict=True, reason=MISSES[key])] if key in MISSES else []
        yield pytest.param(key, marks=[*marks, pytest.mark.slow], id="{}-incast-{}-q{}".format(*key))


def test_every_miss_names_a_reference_run():
    assert set(MISSES) <= set(REFERENCE)


def test_htsim_ran_every_run_at_every_draw():
    """results_draws.csv: each of the 21 runs at seeds 1..DRAWS, the same scenarios as results.csv."""
    assert set(REFERENCE_DRAWS) == set(REFERENCE)
    for rows in REFERENCE_DRAWS.values():
        assert [int(r["seed"]) for r in rows] == list(range(1, htsim_dctcp.DRAWS + 1))


def test_a_draw_is_the_switches_seed():
    """Our draws are different paths: the switch seed salts ECMP, so the last flow moves with it
    (8 senders, 1000 frames: 10.78 ms at seed 0, 7.51 at seed 2); draw 0 is the default run."""
    runs = [htsim_dctcp.run("dctcp", 8, 1000, draw=d) for d in (0, 2)]
    assert runs[0] == htsim_dctcp.run("dctcp", 8, 1000)
    assert runs[0].fct_s != runs[1].fct_s and max(runs[1].fct_s) < max(runs[0].fct_s)


def test_htsims_syn_decides_who_loses_at_64_frames():
    """At 64 frames the collateral flow's aggregation port is full and its frames arrive in step
    with the port's departures: without a SYN's stand-in they tie, the departure goes first, the
    incast flows there take every drop there and time out (switch seed 0: 9 timeouts, 35 drops
    there); the stand-ins shift the departures after the collateral's arrivals, as htsim's 1-byte
    SYNs do, and the collateral flow takes the drops (docs/baselines.md)."""
    bare = htsim_dctcp.run("dctcp", 8, 64, syn=False)
    ours = htsim_dctcp.run("dctcp", 8, 64)
    assert bare.timeouts >= 3 and ours.timeouts == 0
    assert max(ours.fct_s) < 0.01 < 0.25 < max(bare.fct_s)


def test_rfc8257s_reaction_is_what_kept_the_last_flow_late():
    """The same draw under the transport's default reaction (RFC 8257, as Linux): the incast
    flows on the collateral flow's link see every ACK marked and never grow, so the last one
    ends 1.17x later than under htsim's (switch seed 0: 12.58 against 10.78 ms); docs/baselines.md."""
    rfc = htsim_dctcp.run("dctcp", 8, 1000, dctcp_reaction="on-mark")
    ours = htsim_dctcp.run("dctcp", 8, 1000)
    assert rfc.drops == ours.drops == 0 and rfc.timeouts == ours.timeouts == 0
    assert max(rfc.fct_s) > 1.15 * max(ours.fct_s)


@pytest.mark.parametrize("key", list(_cases()))
def test_dctcp_incast_agrees_with_htsim_over_path_draws(key):
    ref = htsim_dctcp.htsim_over_draws(REFERENCE_DRAWS[key])
    ours = htsim_dctcp.over_draws(*key)
    assert ours["finished"] == ours["flows"] == int(REFERENCE[key]["flows"])
    assert ours["draws_timed_out"] <= ref["htsim_draws_timed_out"] + DRAW_SLACK, (ours, ref)
    last = ref["htsim_last_s"]
    if ref["htsim_draws_timed_out"] == 0:
        ratio = ours["max_fct_s"] / last
        assert abs(ratio - 1) <= TOLERANCE, (ours["max_fct_s_by_draw"], last, ratio)
    else:
        assert ours["draws_timed_out"] >= ref["htsim_draws_timed_out"] - DRAW_SLACK or ours["max_fct_s"] < last


def test_the_scenario_is_htsims():
    """htsim's senders (setIncast(n, 127 - n)), 9000 bytes on the wire a frame, 101 frames a flow."""
    assert htsim_dctcp.senders_of(8) == list(range(119, 127))
    assert htsim_dctcp.MTU + 14 + 24 == 9000
    assert htsim_dctcp.FLOW_BYTES == 101 * 8884      # a full frame's payload at MTU 8962
    assert htsim_dctcp.SYN_BYTES == 4                  # htsim's SYN: one float32 value's message here
    # htsim's senders: ssthresh 10 packets, alpha from 0, RTO >= 250 ms; DCTCP only where queues mark,
    # reacting as htsim's dctcp.cpp does (every window cut while alpha > 0, growth on every ACK).
    dctcp, tcp = htsim_dctcp.settings("dctcp"), htsim_dctcp.settings("tcp")
    assert (dctcp.congestion, tcp.congestion) == ("dctcp", "newreno")
    assert (dctcp.dctcp_reaction, dctcp.cc().ecn) == ("every-window", "dctcp-every-window")
    assert htsim_dctcp.settings("dctcp", "on-mark").cc().ecn == "dctcp"
    for s in (dctcp, tcp):
        assert (s.initial_ssthresh, s.dctcp_alpha, s.min_rto_ns) == (10, 0.0, 250_000_000)
        cc = s.cc()
        assert (cc.cwnd, cc.ssthresh, cc.alpha, cc.g) == (10, 10, 0.0, 1 / 16)
    with pytest.raises(ValueError, match="senders must be one of 8, 16, 32, got 9"):
        htsim_dctcp.senders_of(9)


def test_reference_rows_are_what_htsims_logs_say():
    spec = importlib.util.spec_from_file_location("collect_dctcp", REFERENCE_DIR / "collect.py")
    collect = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(collect)
    for path in sorted((REFERENCE_DIR / "logs").glob("incast-*.log")):
        row = collect.row(path)
        ref = REFERENCE[(row["transport"], row["senders"], row["buffer_frames"])]
        assert {k: str(v) for k, v in row.items()} == ref
    assert len(REFERENCE) == 21
    drawn = sorted((REFERENCE_DIR / "draws").glob("incast-*_s*.log"))
    assert len(drawn) == 21 * htsim_dctcp.DRAWS
    for path in drawn:
        row = collect.row(path)
        refs = REFERENCE_DRAWS[(row["transport"], row["senders"], row["buffer_frames"])]
        assert {k: str(v) for k, v in row.items()} == refs[row["seed"] - 1]


@pytest.mark.slow
def test_bench_htsim_dctcp_incast_prints_ours_beside_htsims(capsys):
    assert main(["bench", "htsim", "--dctcp-incast", "--draws", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["transport"], r["senders"], r["buffer_frames"]) for r in rows] == list(REFERENCE)
    row = rows[0]
    assert row["draws"] == 1 and row["htsim_draws"] == htsim_dctcp.DRAWS
    seeds = REFERENCE_DRAWS[("dctcp", 8, 32)]
    assert row["htsim_last_s"] == pytest.approx(sum(float(r["last_print_s"]) for r in seeds) / len(seeds))
    assert row["max_ratio"] == pytest.approx(row["max_fct_s"] / row["htsim_last_s"])
    assert row["max_fct_s_by_draw"] == [htsim_dctcp.run("dctcp", 8, 32).summary()["max_fct_s"]]


def test_bench_htsim_dctcp_incast_takes_no_choices(capsys):
    assert main(["bench", "htsim", "--dctcp-incast", "--buffers", "32"]) == 2
    assert "--dctcp-incast runs htsim's runs as they are" in capsys.readouterr().err
    assert main(["bench", "htsim", "--draws", "2"]) == 2
    assert "--draws goes with --dctcp-incast" in capsys.readouterr().err


def test_a_missing_dctcp_reference_is_named(tmp_path):
    with pytest.raises(ValueError, match="htsim's DCTCP incast runs are not at"):
        htsim_dctcp.reference(tmp_path)
    with pytest.raises(ValueError, match="transport must be one of tcp, dctcp, got 'ndp'"):
        htsim_dctcp.run("ndp", 8, 32)


@pytest.mark.slow
@pytest.mark.parametrize("key,draw", [(("tcp", 8, 8), 0), (("dctcp", 8, 32), 2)])
def test_both_engines_run_the_incast_identically(key, draw):
    """The compiled core (what the agreement is measured on) against the Python oracle, where
    drops, marks, timeouts and the collateral flow all act: the same run, to the nanosecond."""
    native = htsim_dctcp.run(*key, draw=draw)
    assert native.drops > 0 and native.timeouts > 0
    assert native == htsim_dctcp.run(*key, engine="python", draw=draw)
