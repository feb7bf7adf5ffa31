"""The fidelity flags of an emulated run from what its hosts and switches recorded: where
the `hosts_behind` thresholds lie (dlcp_emu/experiment/fidelity.py), exactly."""
import pytest

from dlcp_emu.experiment.fidelity import (
    HOST_LAG_LIMIT,
    HOST_STRETCH_LIMIT,
    host_fidelity,
    switch_fidelity,
)

COMPUTE_NS = 1_000_000      # one iteration's planned compute
FRAME_NS = 1_000_000        # a full frame on a host link: the lag limit is 100 us


def worker(lateness_sum_ns, iterations=2, lags=(), stalls=None):
    return {"iterations": [{}] * iterations, "timer_lateness_sum_ns": lateness_sum_ns,
            "timer_lateness_ns": [lateness_sum_ns // iterations] * iterations,
            "rx_lag_ns": list(lags), "stalls": stalls or {}}


def behind(records):
    return host_fidelity(records, COMPUTE_NS, FRAME_NS)["hosts_behind"]


def test_the_limits_are_five_percent_of_compute_and_a_tenth_of_a_frame():
    assert (HOST_STRETCH_LIMIT, HOST_LAG_LIMIT) == (0.05, 0.10)


@pytest.mark.parametrize("lateness_sum_ns, flagged", [(0, False), (100_000, False), (100_001, True)])
def test_compute_stretch_flags_above_its_limit_only(lateness_sum_ns, flagged):
    # Two iterations of 1 ms: 100 us late in all is a 5% stretch, the limit itself.
    f = host_fidelity([worker(lateness_sum_ns)], COMPUTE_NS, FRAME_NS)
    assert f["host_compute_stretch"] == lateness_sum_ns / 2 / COMPUTE_NS
    assert f["hosts_behind"] is flagged


def test_stretch_is_the_mean_over_workers_and_ignores_hosts_without_iterations():
    ps = {"timer_lateness_sum_ns": 10**9, "rx_lag_ns": [], "stalls": {}}
    assert not behind([worker(80_000), worker(110_000), ps])        # 4% and 5.5%: 4.75%
    assert behind([worker(80_000), worker(140_000), ps])            # 4% and 7%: 5.5%


@pytest.mark.parametrize("lags, flagged", [
    ([100_000] * 3, False),                  # median at the limit
    ([100_001] * 3, True),                   # just above
    ([0, 0, 0, 10**9, 10**9], False),        # the median, not the tail, decides
    ([0, 0, 10**9, 10**9, 10**9], True)])
def test_receive_lag_flags_when_its_median_exceeds_a_tenth_of_a_frame(lags, flagged):
    f = host_fidelity([worker(0, lags=lags)], COMPUTE_NS, FRAME_NS)
    assert f["hosts_behind"] is flagged
    assert f["host_rx_lag_p50_us"] == sorted(lags)[len(lags) // 2] / 1e3
    assert f["host_rx_lag_frame_share"] == pytest.approx(sorted(lags)[len(lags) // 2] / FRAME_NS)


def test_the_lag_limit_scales_with_the_frame_time():
    assert host_fidelity([worker(0, lags=[150_000])], COMPUTE_NS, 1_000_000)["hosts_behind"]
    assert not host_fidelity([worker(0, lags=[150_000])], COMPUTE_NS, 2_000_000)["hosts_behind"]


def test_nothing_measured_flags_nothing():
    f = host_fidelity([{"rank": 4}], COMPUTE_NS, FRAME_NS)
    assert f == {"host_timer_p99_lateness_us": None, "host_compute_stretch": None,
                 "host_rx_lag_p50_us": None, "host_rx_lag_p99_us": None,
                 "host_rx_lag_mean_us": None, "host_timer_mean_lateness_us": None,
                 "host_rx_lag_frame_share": None, "hosts_behind": False,
                 "host_stall_max_ms": 0.0}


def test_stalls_and_timer_lateness_are_reported_not_flagged():
    f = host_fidelity([worker(0, stalls={"gc_max_ns": 3_000_000, "write_max_ns": 7_000_000}),
                       worker(0, stalls={"gc_max_ns": 5_000_000})], COMPUTE_NS, FRAME_NS)
    assert f["host_stall_max_ms"] == 7.0 and not f["hosts_behind"]


def test_one_switch_behind_flags_the_run_and_the_worst_figures_are_kept():
    ok = {"lateness": {"p99_ns": 2_000, "max_ns": 9_000}, "rx_wait": {"p99_ns": 4_000},
          "fell_behind": False}
    late = {"lateness": {"p99_ns": 5_000, "max_ns": 3_000_000}, "rx_wait": {"p99_ns": 1_000},
            "fell_behind": True}
    assert switch_fidelity({"s1": ok, "s2": ok}) == {
        "p99_lateness_us": 2.0, "max_lateness_ms": 0.009, "switch_rx_wait_p99_us": 4.0,
        "fell_behind": False, "switches": 2}
    f = switch_fidelity({"s1": ok, "s2": late})
    assert f["fell_behind"] and (f["p99_lateness_us"], f["max_lateness_ms"]) == (5.0, 3.0)
