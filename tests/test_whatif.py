"""The NetAI'20 what-if analysis: the closed form on a hand-made trace, and the real ones."""
import json

import pandas as pd
import pytest

from dlcp_emu.cli import main
from dlcp_emu.study.whatif import paper_fusion, whatif
from workloads import Trace


MIB = 1024 * 1024


def tiny_trace():
    # Backward order: layer 2 ready at 1 ms (6 MiB), layer 1 at 7 ms (4 MiB), layer 0 at 8 ms
    # (5 MiB). Sizes are chosen so that a quarter of each bucket is a size the V100 vector-add
    # table measured (2.5 MiB: 18.1632 us; 1.25 MiB: 10.704 us): no interpolation to redo.
    layers = pd.DataFrame({"layer_id": [0, 1, 2], "name": ["a", "b", "c"],
                           "grad_bytes": [5 * MIB, 4 * MIB, 6 * MIB],
                           "backward_us": [1000.0, 6000.0, 1000.0], "forward_us": [1000.0] * 3,
                           "mag_dist": ["lognormal"] * 3, "mag_mu": [-7.0] * 3, "mag_sigma": [1.0] * 3})
    return Trace("tiny", layers, batch_time_us=20_000.0).validate()


def test_fusion_flushes_after_5ms_of_backward_or_64mib():
    buckets, end = paper_fusion(tiny_trace())
    # 1 ms + 6 ms passes 5 ms at layer 1: a 10 MiB bucket at 7 ms; the rest at the end, 8 ms.
    assert buckets == [(pytest.approx(0.007), 10 * MIB), (pytest.approx(0.008), 5 * MIB)]
    assert end == pytest.approx(0.008)


def test_closed_form_matches_hand_computation():
    # 4 workers at 1 Gbit/s, compression 2. Bucket 1 (10 MiB, ready 7 ms): wire 2 x 10 MiB x 8
    # x 3/4 / 1e9 / 2 = 62.91456 ms, adds 3 x 18.1632 us = 54.4896 us, ends 69.9690496 ms.
    # Bucket 2 (5 MiB, ready 8 ms) waits for it: wire 31.45728 ms, adds 3 x 10.704 us =
    # 32.112 us, ends 101.4584416 ms; backward ended at 8 ms.
    r = whatif("tiny", 4, 1.0, 2.0, trace=tiny_trace())
    assert r.overhead_s == pytest.approx(0.0934584416, rel=1e-12)
    assert r.scaling_factor == pytest.approx(0.020 / 0.1134584416, rel=1e-12)   # 0.176276...
    assert r.network_s == pytest.approx(0.09437184, rel=1e-12)
    assert r.vec_add_s == pytest.approx(86.6016e-6, rel=1e-12)
    assert r.network_utilization == pytest.approx(0.09437184 / 0.1014584416, rel=1e-12)
    assert (r.buckets, r.bytes_per_iteration, r.backward_s) == (2, 15 * MIB, pytest.approx(0.008))


def test_closed_form_starts_a_bucket_when_it_is_ready():
    # At 100 Gbit/s and compression 10, bucket 1 ends at 7 + 0.12582912 + 0.0544896 ms =
    # 7.18031872 ms, before bucket 2 is ready (8 ms), which then takes 0.06291456 + 0.032112 ms.
    r = whatif("tiny", 4, 100.0, 10.0, trace=tiny_trace())
    assert r.overhead_s == pytest.approx(0.00009502656, rel=1e-9)
    assert r.scaling_factor == pytest.approx(0.020 / 0.02009502656, rel=1e-12)
    # One worker has nothing to all-reduce: no overhead at all.
    assert whatif("tiny", 1, 1.0, trace=tiny_trace()).overhead_s == 0.0


def test_real_traces_scale_near_linearly_at_100g_and_not_at_10g():
    for model in ("resnet50", "resnet101", "vgg16"):
        fast = whatif(model, 64, 100)
        slow = whatif(model, 64, 10)
        assert fast.scaling_factor > 0.95
        assert slow.scaling_factor < 0.6
        # A modest compression ratio recovers 10 Gbit/s (the paper's conclusion).
        assert whatif(model, 64, 10, 10).scaling_factor > 0.95
    factors = [whatif("resnet50", 32, b).scaling_factor for b in (1, 10, 25, 40, 100)]
    assert factors == sorted(factors) and all(0 < f <= 1 for f in factors)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="workers must be an integer >= 1"):
        whatif("resnet50", 0, 10)
    with pytest.raises(ValueError, match="compression must be >= 1"):
        whatif("resnet50", 4, 10, 0.5)


def test_cli_prints_json_with_scaling_factor(capsys):
    assert main(["whatif", "--model", "vgg16", "--workers", "16", "--bandwidth-gbps", "25",
                 "--compression", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["scaling_factor"] == pytest.approx(whatif("vgg16", 16, 25, 2).scaling_factor)


def test_cli_sweep_writes_table_and_plot(tmp_path, capsys):
    assert main(["whatif", "--sweep", "--out", str(tmp_path)]) == 0
    table = pd.read_csv(tmp_path / "sweep.csv")
    assert len(table) == 3 * 3 * 5 * 5
    assert (tmp_path / "scaling_vs_bandwidth.png").stat().st_size > 10_000
    assert "resnet101: scaling factor" in capsys.readouterr().out


@pytest.mark.slow
def test_packet_level_answer_beside_the_closed_form(tmp_path):
    from dlcp_emu.study.whatif_sim import whatif_sim
    slow = whatif_sim("resnet50", 4, 10, tmp_path / "slow")
    fast = whatif_sim("resnet50", 4, 100, tmp_path / "fast")
    assert slow["completed"] and fast["completed"]
    # A real transport cannot beat a fully used network; at 100 Gbit/s both say near-linear.
    assert slow["simulated_scaling_factor"] <= slow["closed_form_scaling_factor"] + 0.02
    assert fast["simulated_scaling_factor"] > 0.95 and fast["closed_form_scaling_factor"] > 0.95
    assert slow["simulated_scaling_factor"] < fast["simulated_scaling_factor"]
    assert 0 < slow["simulated_link_utilization"] <= 1
