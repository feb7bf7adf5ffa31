"""Background traffic: flow-size CDFs, inverse-CDF sampling, Poisson arrivals at a load."""

import numpy as np
import pytest

from workloads.background import (
    FLOW_CDFS,
    PACKET_BYTES,
    mean_flow_bytes,
    poisson_flows,
    sample_flow_sizes,
)


def test_cdf_tables_are_valid():
    for name, table in FLOW_CDFS.items():
        sizes, probs = np.array(table).T
        assert probs[0] == 0 and probs[-1] == 1, name
        assert (np.diff(probs) >= 0).all() and (np.diff(sizes) >= 0).all(), name


def test_mean_flow_sizes_match_the_literature():
    # pFabric/PIAS scripts quote ~1138 and 5117 packets of 1460 B for these CDFs
    assert mean_flow_bytes("websearch") / PACKET_BYTES == pytest.approx(1141, abs=1)
    assert mean_flow_bytes("datamining") / PACKET_BYTES == pytest.approx(5117, abs=1)
    with pytest.raises(KeyError, match="websearch"):
        mean_flow_bytes("hadoop")


def test_inverse_cdf_sampling_follows_the_table():
    rng = np.random.default_rng(1)
    web = sample_flow_sizes("websearch", 200_000, rng)
    assert web.dtype == np.int64 and web.min() == 6 * PACKET_BYTES
    assert web.max() <= 20000 * PACKET_BYTES
    for size, p in FLOW_CDFS["websearch"][1:-1]:
        assert np.mean(web <= size * PACKET_BYTES) == pytest.approx(p, abs=0.005)
    assert web.mean() == pytest.approx(mean_flow_bytes("websearch"), rel=0.03)
    mining = sample_flow_sizes("datamining", 200_000, rng)
    assert np.mean(mining == PACKET_BYTES) == pytest.approx(0.5, abs=0.005)


def test_poisson_flows_deterministic_and_well_formed():
    args = dict(cdf="websearch", load=0.6, link_bps=10e9, duration_s=0.5, hosts=8)
    a = poisson_flows(**args, seed=42)
    assert a == poisson_flows(**args, seed=42)
    assert a != poisson_flows(**args, seed=43)
    starts = [f.start_s for f in a]
    assert starts == sorted(starts) and 0 <= starts[0] and starts[-1] < 0.5
    assert all(f.src != f.dst and 0 <= f.src < 8 and 0 <= f.dst < 8 for f in a)
    assert {f.src for f in a} == set(range(8))


def test_arrival_rate_matches_target_load():
    load, rate, dur = 0.5, 1e9, 20.0
    flows = poisson_flows("websearch", load, rate, dur, hosts=4, seed=7)
    expected = dur * load * rate / (mean_flow_bytes("websearch") * 8)  # ~750 flows
    assert abs(len(flows) - expected) < 5 * np.sqrt(expected)
    gaps = np.diff([0.0] + [f.start_s for f in flows])
    assert gaps.mean() == pytest.approx(dur / expected, rel=0.2)


def test_named_hosts_and_bounds():
    flows = poisson_flows("datamining", 0.3, 1e9, 1.0, hosts=["h1", "h2"], seed=0)
    assert all({f.src, f.dst} == {"h1", "h2"} for f in flows)
    with pytest.raises(ValueError, match="max_flows"):
        poisson_flows("websearch", 0.9, 100e9, 10.0, hosts=4, seed=0, max_flows=1000)
    capped = poisson_flows("websearch", 0.5, 1e9, 1.0, hosts=4, seed=0, max_flows=40)
    assert len(capped) <= 40
    assert poisson_flows("websearch", 0.5, 1e9, 0.0, hosts=4, seed=0) == []
    with pytest.raises(ValueError):
        poisson_flows("websearch", 1.5, 1e9, 1.0, hosts=4, seed=0)
    with pytest.raises(ValueError):
        poisson_flows("websearch", 0.5, 1e9, 1.0, hosts=1, seed=0)


def test_a_longer_run_only_appends_flows_and_a_dilated_one_has_the_same_flows_later():
    """What a run's time limit and time dilation change of its background: nothing but the
    horizon and the time axis (with one random stream both changed the flows' sizes, and
    the simulated results moved 17% between dilations 4 and 16)."""
    args = dict(cdf="websearch", load=0.3, hosts=6, seed=5)
    short = poisson_flows(**args, link_bps=1e10, duration_s=0.5)
    long = poisson_flows(**args, link_bps=1e10, duration_s=2.0)
    assert len(short) > 100 and long[:len(short)] == short and len(long) > 3 * len(short)
    dilated = poisson_flows(**args, link_bps=1e10 / 8, duration_s=4.0)   # the same 0.5 s, 8x slower
    assert [(f.src, f.dst, f.nbytes) for f in dilated] == [(f.src, f.dst, f.nbytes) for f in short]
    assert [f.start_s for f in dilated] == pytest.approx([8 * f.start_s for f in short], rel=1e-12)
