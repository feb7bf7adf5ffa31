"""An emulated run's fidelity from what its hosts and switches recorded: the figures
(dlcp_emu/experiment/fidelity.py), the estimate of its error built from them
(fidelity_estimate.py, a pure function driven here with injected figures), the flag when that
exceeds the tolerance, and the fixed rules left for what no estimate covers."""
import math

import pytest

from dlcp_emu.experiment import fidelity_estimate as E
from dlcp_emu.experiment.fidelity import host_fidelity, judge, switch_fidelity
from dlcp_emu.study.compare_table import fidelity_cell, table

COMPUTE_NS = 1_000_000      # one iteration's planned compute
FRAME_NS = 1_000_000        # a full frame on a host link, wall clock


def worker(lateness_sum_ns, iterations=2, lags=(), stalls=None):
    return {"iterations": [{}] * iterations, "timer_lateness_sum_ns": lateness_sum_ns,
            "timer_lateness_ns": [lateness_sum_ns // iterations] * iterations,
            "rx_lag_ns": list(lags), "stalls": stalls or {}}


def test_compute_stretch_is_the_mean_over_workers_and_ignores_hosts_without_iterations():
    ps = {"timer_lateness_sum_ns": 10**9, "rx_lag_ns": [], "stalls": {}}
    # Two iterations of 1 ms compute: 80 us and 110 us late in all are 4% and 5.5%.
    f = host_fidelity([worker(80_000), worker(110_000), ps], COMPUTE_NS, FRAME_NS)
    assert f["host_compute_stretch"] == pytest.approx(0.0475)


def test_receive_waits_keep_the_median_and_the_mean_in_frame_times():
    # The median hides stalls; the mean, which the estimate uses, does not.
    lags = [10_000, 10_000, 10_000, 10_000, 2_960_000]
    f = host_fidelity([worker(0, lags=lags)], COMPUTE_NS, FRAME_NS)
    assert (f["host_rx_lag_p50_us"], f["host_rx_lag_mean_us"]) == (10.0, 600.0)
    assert f["host_rx_lag_frame_share"] == pytest.approx(0.01)
    assert f["host_rx_lag_mean_frames"] == pytest.approx(0.6)
    assert host_fidelity([worker(0, lags=lags)], COMPUTE_NS, 2 * FRAME_NS)["host_rx_lag_mean_frames"] == \
        pytest.approx(0.3)


def test_nothing_measured_is_none():
    f = host_fidelity([{"rank": 4}], COMPUTE_NS, FRAME_NS)
    assert f == {"host_timer_p99_lateness_us": None, "host_compute_stretch": None,
                 "host_rx_lag_p50_us": None, "host_rx_lag_p99_us": None,
                 "host_rx_lag_mean_us": None, "host_timer_mean_lateness_us": None,
                 "host_rx_lag_frame_share": None, "host_rx_lag_mean_frames": None,
                 "host_stall_max_ms": 0.0}


def test_stalls_are_the_longest_of_any_host():
    f = host_fidelity([worker(0, stalls={"gc_max_ns": 3_000_000, "write_max_ns": 7_000_000}),
                       worker(0, stalls={"gc_max_ns": 5_000_000})], COMPUTE_NS, FRAME_NS)
    assert f["host_stall_max_ms"] == 7.0


def test_switches_keep_their_worst_figures_and_socket_drops():
    ok = {"lateness": {"p99_ns": 2_000, "max_ns": 9_000}, "rx_wait": {"p99_ns": 4_000},
          "rx_socket_drops": {"1": 0}, "fell_behind": False}
    late = {"lateness": {"p99_ns": 5_000, "max_ns": 3_000_000}, "rx_wait": {"p99_ns": 1_000},
            "rx_socket_drops": {"1": 2, "2": 1}, "fell_behind": True}
    assert switch_fidelity({"s1": ok, "s2": ok}) == {
        "p99_lateness_us": 2.0, "max_lateness_ms": 0.009, "switch_rx_wait_p99_us": 4.0,
        "socket_drops": 0, "switch_fell_behind": False, "switches": 2}
    f = switch_fidelity({"s1": ok, "s2": late})
    assert (f["p99_lateness_us"], f["max_lateness_ms"], f["socket_drops"]) == (5.0, 3.0, 3)
    assert f["switch_fell_behind"]


IT, FCT = E.COEFFICIENTS["iteration"], E.COEFFICIENTS["fct_p99"]
SLACK = E.WAIT_SLACK_FRAMES
# A run's figures, wall-clock: one frame of mean receive wait, half a frame of switch p99.
FIGURES = {"host_compute_stretch": 0.02, "host_rx_lag_mean_us": 1000.0, "p99_lateness_us": 500.0}


def test_the_estimate_is_the_sum_of_its_terms_each_weighing_a_lateness_against_what_it_delays():
    # 50 collective steps an iteration of 0.5 s, at dilation 10: 1 ms of wait wall-clock is
    # 0.1 ms real-world a step, 5 ms an iteration, 1% of it.
    est = E.estimate(FIGURES, frame_ns=FRAME_NS, compute_share=0.25, steps=50, dilation=10.0, iteration_s=0.5)
    terms = est["terms"]
    # Compute stretched 2%, and compute is a quarter of the iteration: +0.5%.
    assert terms["host compute"]["iteration_pct"] == 0.5
    # One frame of wait, log(1 + the frame beyond the slack), over the three quarters of the
    # iteration that communicate.
    assert terms["host wait, windows"]["iteration_pct"] == pytest.approx(
        100 * IT["host wait, windows"] * math.log1p(1 - SLACK) * 0.75, abs=0.01)
    assert terms["host wait, windows"]["fct_p99_pct"] == pytest.approx(
        100 * FCT["host wait, windows"] * math.log1p(1 - SLACK), abs=0.01)
    assert terms["host wait, steps"]["iteration_pct"] == pytest.approx(IT["host wait, steps"] * 1.0, abs=0.01)
    assert terms["host wait, steps"]["fct_p99_pct"] == pytest.approx(FCT["host wait, steps"] * 1.0, abs=0.01)
    assert terms["switch lateness"]["iteration_pct"] == pytest.approx(
        100 * IT["switch lateness"] * 0.5 * 0.75, abs=0.01)
    for key in ("iteration_pct", "fct_p99_pct"):
        assert est[key] == pytest.approx(sum(t[key] for t in terms.values()), abs=0.02)


def test_the_estimate_grows_with_the_wait_and_shrinks_with_the_dilation_s_longer_frames():
    def it(lag_us, frame_ns):
        return E.estimate({**FIGURES, "host_rx_lag_mean_us": lag_us}, frame_ns=frame_ns,
                          compute_share=0.25)["iteration_pct"]
    assert it(2000.0, FRAME_NS) > it(1000.0, FRAME_NS) > it(0.0, FRAME_NS) >= 0
    # The same wall-clock wait at twice the dilation (frames twice as long): half a frame.
    assert it(1000.0, 2 * FRAME_NS) - it(0.0, 2 * FRAME_NS) == pytest.approx(
        100 * IT["host wait, windows"] * math.log1p(0.5 - SLACK) * 0.75, abs=0.02)
    # A wait within the slack costs nothing: the window absorbs it.
    assert it(SLACK * FRAME_NS / 1e3, FRAME_NS) == it(0.0, FRAME_NS)


def test_other_coefficients_give_other_terms():
    # What the calibration's fit tries: the same bases, its own coefficients.
    coef = {key: {name: 1.0 for name in IT} for key in E.COEFFICIENTS}
    est = E.estimate(FIGURES, coef, frame_ns=FRAME_NS, compute_share=0.25)
    assert est["iteration_pct"] == pytest.approx(100 * (0.02 * 0.25 + math.log1p(1 - SLACK) * 0.75 + 0.5 * 0.75),
                                                 abs=0.02)


def test_critical_steps_follow_the_pattern():
    assert E.critical_steps("ring", 12, workers=4) == 12 * 6          # 2(n-1) a bucket
    assert E.critical_steps("ps", 12, workers=4, ps_ranks=[4]) == 12 * 2
    assert E.critical_steps("ds-sync", 3, workers=8, group_size=2) == 3 * 2


def test_figures_not_measured_add_no_term():
    est = E.estimate({}, frame_ns=FRAME_NS, compute_share=0.5)
    assert est["iteration_pct"] == est["fct_p99_pct"] == 0.0


def verdict(fig, tolerance=0.05, iteration_s=0.5, dilation=10.0):
    return judge(fig, frame_ns=FRAME_NS, compute_share=0.25, iteration_s=iteration_s,
                 dilation=dilation, tolerance=tolerance)


def wait_for_fct_pct(pct):
    """The mean wait, wall-clock us, whose p99 tensor completion term is `pct` percent."""
    return (math.expm1(pct / 100 / FCT["host wait, windows"]) + SLACK) * FRAME_NS / 1e3


def test_a_run_is_flagged_when_its_estimate_exceeds_the_tolerance_either_way():
    wait_us = wait_for_fct_pct(6)
    v = verdict({"host_rx_lag_mean_us": wait_us})
    assert E.worst_pct(v["estimate"]) == pytest.approx(6.0, abs=0.05)
    assert v["estimate_flagged"] and not verdict({"host_rx_lag_mean_us": wait_us}, tolerance=0.07)["estimate_flagged"]
    assert not verdict({"host_rx_lag_mean_us": wait_for_fct_pct(4)})["estimate_flagged"]
    assert E.flagged({"iteration_pct": -5.1, "fct_p99_pct": 0.0}, 0.05)
    assert not E.flagged({"iteration_pct": 5.0, "fct_p99_pct": -5.0}, 0.05)


def test_fixed_rules_only_for_socket_drops_and_a_stall_over_the_tolerance_of_an_iteration():
    assert not verdict({})["fell_behind"]
    assert verdict({"socket_drops": 1})["fell_behind"]
    # 0.05 of a 0.5 s iteration is 25 ms real-world: 250 ms wall-clock at dilation 10.
    assert not verdict({"max_lateness_ms": 250.0})["fell_behind"]
    assert verdict({"max_lateness_ms": 251.0})["behind_because"] == [
        "a stall of 251 ms wall-clock, over 5% of an iteration"]
    assert verdict({"host_stall_max_ms": 251.0})["fell_behind"]
    assert not verdict({"host_stall_max_ms": 251.0}, dilation=20.0)["fell_behind"]


def test_seeds_combine_to_their_mean_estimate_flagged_against_the_tolerance():
    one = verdict({"host_rx_lag_mean_us": 0.0})
    two = verdict({"host_rx_lag_mean_us": wait_for_fct_pct(12)})
    c = E.combine_estimates([one, two])
    assert c["estimate"]["fct_p99_pct"] == pytest.approx(6.0, abs=0.05) and c["estimate_flagged"]
    assert c["estimate"]["terms"]["host wait, windows"]["fct_p99_pct"] == pytest.approx(6.0, abs=0.05)


def test_the_table_shows_the_estimate_and_virtual_time_and_no_wall_clock_legend_for_a_simulation():
    late = {"backend": "emulation", "fidelity": {**verdict({"host_rx_lag_mean_us": 1e5}), "fell_behind": True}}
    assert fidelity_cell({"backend": "simulation", "fidelity": {}}) == "virtual time"
    assert fidelity_cell(late).startswith("behind! ~+") and fidelity_cell(late).endswith("%!")
    ok = {"backend": "emulation", "fidelity": verdict({"host_rx_lag_mean_us": 10.0})}
    assert fidelity_cell(ok) == f"~{E.worst_pct(ok['fidelity']['estimate']):+.1f}%"
    row = {"transport": "reliable", "iteration_time_mean_s": 0.5, "iteration_time_p99_s": 0.5,
           "tensor_fct_p50_s": 0.1, "tensor_fct_p99_s": 0.2, "tensor_fct_p999_s": 0.2,
           "loss_fraction": 0.0, "loss_within_bound": True, "link_utilization": 0.5, "scaling_factor": 0.2}
    sim = table({"backend": "sim", "presets": {"fifo": {**row, "backend": "simulation", "fidelity": {}}}})
    emu = table({"backend": "emu", "presets": {"fifo": {**row, **ok}}})
    assert "virtual time" in sim and "wall" not in sim and "fidelity_tolerance" not in sim
    assert "fidelity_tolerance" in emu
