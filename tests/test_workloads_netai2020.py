"""The NetAI'20 traces: parsing, forward order, derived forward times, vec-add costs."""

import numpy as np
import pytest

from workloads import netai2020
from workloads.netai2020 import load_netai2020, read_bk_log, vec_add_seconds, vec_add_table


@pytest.mark.parametrize("model", netai2020.MODELS)
def test_trace_is_the_log_reversed(model):
    batches, log = read_bk_log(netai2020.TRACE_DIR / f"{model}.bk.log")
    t = load_netai2020(model)
    assert batches == 1 and t.num_layers == len(log)
    # the first log line (first gradient of backward) is the last layer in forward order
    last = t.layers.iloc[-1]
    assert last["grad_bytes"] == log["bytes"].iloc[0]
    assert last["backward_us"] == log["wait_us"].iloc[0]
    assert t.layers["grad_bytes"].tolist() == log["bytes"].tolist()[::-1]
    sched = t.backward_schedule()
    assert sched["grad_bytes"].tolist() == log["bytes"].tolist()
    assert np.allclose(sched["ready_us"], np.cumsum(log["wait_us"]))


@pytest.mark.parametrize("model,ms", netai2020.BATCH_TIME_MS.items())
def test_forward_time_fills_the_batch(model, ms):
    t = load_netai2020(model)
    assert t.batch_time_us == ms * 1000
    assert t.forward_total_us + t.backward_total_us == pytest.approx(ms * 1000)
    share = t.layers["forward_us"] / t.forward_total_us
    assert np.allclose(share, t.layers["backward_us"] / t.backward_total_us)


def test_names_and_sizes_follow_torchvision():
    r50 = load_netai2020("resnet50")
    assert r50.total_bytes == 25_557_032 * 4  # torchvision resnet50 parameter count
    assert r50.layers["name"].iloc[0] == "conv1.weight"
    assert r50.layers["name"].iloc[-1] == "fc.bias" and r50.layers["grad_bytes"].iloc[-1] == 4000
    assert load_netai2020("resnet101").total_bytes == 44_549_160 * 4
    vgg = load_netai2020("vgg16")  # the trace is VGG-16 with batch norm
    assert vgg.total_bytes == 138_365_992 * 4 and vgg.num_layers == 58


def test_metadata_says_what_is_synthetic():
    t = load_netai2020("resnet50")
    assert "forward_us" in t.meta["synthetic"] and "magnitudes" in t.meta["synthetic"]
    assert (t.layers["mag_dist"] == "lognormal").all()


def test_unknown_model():
    with pytest.raises(KeyError, match="resnet50, resnet101, vgg16"):
        load_netai2020("alexnet")


def test_license_travels_with_the_traces():
    names = {p.name for p in netai2020.TRACE_DIR.iterdir()}
    assert {"LICENSE", "NOTICE", "cuda_vec_add.log"} <= names


def test_vec_add_interpolates_and_extrapolates():
    table = vec_add_table()
    xs, ys = table["bytes"].to_numpy(), table["seconds"].to_numpy()
    assert np.allclose(vec_add_seconds(xs), ys)  # exact at the table points
    mid = (xs[-3] + xs[-2]) / 2
    assert vec_add_seconds(mid) == pytest.approx((ys[-3] + ys[-2]) / 2)
    assert vec_add_seconds(1) == ys[0]  # below the table: the launch cost
    slope = (ys[-1] - ys[-2]) / (xs[-1] - xs[-2])
    big = 4 * xs[-1]
    assert vec_add_seconds(big) == pytest.approx(ys[-1] + 3 * xs[-1] * slope)
    assert isinstance(vec_add_seconds(1000), float)
    assert vec_add_seconds([10, 2e9]).shape == (2,)
