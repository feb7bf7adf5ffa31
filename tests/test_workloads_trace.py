"""The per-layer trace format: validation messages, round trips, derived schedules."""

import math

import numpy as np
import pandas as pd
import pytest

from workloads.trace import Trace, TraceError, load_trace


def layers(n=3, **over):
    df = pd.DataFrame({
        "layer_id": list(range(n)),
        "name": [f"l{i}" for i in range(n)],
        "grad_bytes": [400 * (i + 1) for i in range(n)],
        "backward_us": [10.0 * (i + 1) for i in range(n)],
        "forward_us": [5.0] * n,
        "mag_dist": ["lognormal", "normal", "uniform"][:n] + ["lognormal"] * max(0, n - 3),
        "mag_mu": [-7.0, 0.01, 0.02][:n] + [-7.0] * max(0, n - 3),
        "mag_sigma": [1.0, 0.005, 0.005][:n] + [1.0] * max(0, n - 3),
    })
    for col, value in over.items():
        df[col] = value
    return df


def make(df=None, batch=1000.0, magnitudes=None):
    return Trace("toy", layers() if df is None else df, batch, magnitudes)


def error_of(trace):
    with pytest.raises(TraceError) as info:
        trace.validate()
    return str(info.value)


def test_valid_trace_normalises_and_sorts():
    df = layers().iloc[::-1].reset_index(drop=True)
    df["grad_bytes"] = df["grad_bytes"].astype(float)
    t = make(df).validate()
    assert t.layers["layer_id"].tolist() == [0, 1, 2]
    assert t.layers["grad_bytes"].dtype == np.int64
    assert t.total_bytes == 2400 and t.num_layers == 3
    assert t.backward_total_us == 60.0 and t.forward_total_us == 15.0


def test_missing_column_is_named():
    msg = error_of(make(layers().drop(columns=["backward_us"])))
    assert "missing column 'backward_us'" in msg and "layer_id, name, grad_bytes" in msg


def test_unknown_column_lists_allowed():
    msg = error_of(make(layers(extra=1)))
    assert "unknown column 'extra'" in msg and "allowed columns are" in msg and "mag_sigma" in msg


def test_negative_size_names_row_and_rule():
    df = layers()
    df.loc[1, "grad_bytes"] = -5
    msg = error_of(make(df))
    assert "column 'grad_bytes' row 1 (layer_id 1): -5 is not allowed" in msg
    assert "integer > 0" in msg


def test_fractional_size_rejected():
    df = layers()
    df["grad_bytes"] = df["grad_bytes"].astype(float)
    df.loc[2, "grad_bytes"] = 10.5
    assert "column 'grad_bytes' row 2" in error_of(make(df))


def test_duplicate_layer_id():
    df = layers()
    df.loc[2, "layer_id"] = 0
    msg = error_of(make(df))
    assert "duplicate layer id 0" in msg and "row 2" in msg and "first at row 0" in msg


def test_layer_ids_must_be_dense_from_zero():
    msg = error_of(make(layers(layer_id=[1, 2, 3])))
    assert "exactly 0..2" in msg and "missing [0]" in msg and "unexpected [3]" in msg


def test_nan_is_reported_per_cell():
    df = layers()
    df.loc[0, "backward_us"] = math.nan
    df.loc[2, "mag_mu"] = math.nan
    msg = error_of(make(df))
    assert "column 'backward_us' row 0 (layer_id 0): missing value (NaN)" in msg
    assert "column 'mag_mu' row 2 (layer_id 2): missing value (NaN)" in msg


def test_not_a_number_and_negative_time():
    df = layers()
    df["forward_us"] = df["forward_us"].astype(object)
    df.loc[1, "forward_us"] = "fast"
    df.loc[2, "backward_us"] = -1.0
    msg = error_of(make(df))
    assert "'fast' is not a number" in msg
    assert "column 'backward_us' row 2 (layer_id 2): -1.0 is not allowed" in msg


def test_bad_magnitude_model():
    df = layers()
    df.loc[0, "mag_dist"] = "cauchy"
    df.loc[1, "mag_sigma"] = -1.0
    msg = error_of(make(df))
    assert "'cauchy' is not allowed; mag_dist must be one of lognormal, normal, uniform" in msg
    assert "column 'mag_sigma' row 1" in msg
    no_mag = layers().drop(columns=["mag_sigma"])
    assert "missing magnitude column(s) ['mag_sigma']" in error_of(make(no_mag))


def test_uniform_must_stay_non_negative():
    df = layers()
    df.loc[2, "mag_sigma"] = 1.0  # mu 0.02 - sqrt(3) < 0
    assert "uniform magnitudes would go below 0" in error_of(make(df))


def test_empty_name_and_batch_time():
    df = layers()
    df.loc[1, "name"] = ""
    assert "column 'name' row 1" in error_of(make(df))
    assert "less than forward + backward" in error_of(make(batch=50.0))
    assert "batch_time_us must be a finite number > 0" in error_of(make(batch=-1.0))


def test_all_problems_reported_together():
    df = layers()
    df.loc[0, "grad_bytes"] = 0
    df.loc[1, "forward_us"] = -2.0
    msg = error_of(make(df))
    assert "grad_bytes" in msg and "forward_us" in msg


def test_backward_schedule_counts_from_previous_gradient():
    sched = make().validate().backward_schedule()
    assert sched["layer_id"].tolist() == [2, 1, 0]  # last layer's gradient first
    assert sched["ready_us"].tolist() == [30.0, 50.0, 60.0]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_round_trip_with_distribution_model(tmp_path, suffix):
    t = make().validate()
    t.meta = {"source": "hand-made", "synthetic": "everything"}
    path = tmp_path / f"toy{suffix}"
    t.to_csv(path) if suffix == ".csv" else t.to_parquet(path)
    back = load_trace(path)
    assert back.model == "toy" and back.batch_time_us == 1000.0
    assert back.meta == t.meta
    pd.testing.assert_frame_equal(back.layers, t.layers, check_dtype=False)


def chunk_table():
    rows = [(0, 0, 400, 0.5), (1, 0, 300, 0.1), (1, 1, 500, 0.9), (2, 0, 1200, 0.3)]
    return pd.DataFrame(rows, columns=["layer_id", "chunk", "nbytes", "magnitude"])


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_round_trip_with_chunk_table(tmp_path, suffix):
    df = layers().drop(columns=["mag_dist", "mag_mu", "mag_sigma"])
    t = make(df, magnitudes=chunk_table()).validate()
    path = tmp_path / f"toy{suffix}"
    t.to_csv(path) if suffix == ".csv" else t.to_parquet(path)
    assert (tmp_path / f"toy.mag{suffix}").exists()
    back = load_trace(path)
    pd.testing.assert_frame_equal(back.magnitudes, t.magnitudes, check_dtype=False)


def test_csv_is_plain_pandas_readable(tmp_path):
    path = make().validate().to_csv(tmp_path / "toy.csv")
    df = pd.read_csv(path, comment="#")
    assert list(df.columns)[:5] == ["layer_id", "name", "grad_bytes", "backward_us",
                                   "forward_us"]


def test_csv_without_metadata(tmp_path):
    path = tmp_path / "mine.csv"
    layers().to_csv(path, index=False)
    t = load_trace(path)
    assert t.model == "mine" and t.batch_time_us == 75.0  # forward + backward


def test_chunk_table_checks():
    df = layers().drop(columns=["mag_dist", "mag_mu", "mag_sigma"])
    bad = chunk_table()
    bad.loc[3, "nbytes"] = 1000
    msg = error_of(make(df, magnitudes=bad))
    assert "layer 2 chunks hold 1000 bytes, its grad_bytes is 1200" in msg
    assert "layers without chunks: [2]" in error_of(make(df, magnitudes=chunk_table().iloc[:3]))
    both = make(layers(), magnitudes=chunk_table())
    assert "use one magnitude model" in error_of(both)


def test_chunk_magnitudes_from_table_and_distribution():
    df = layers().drop(columns=["mag_dist", "mag_mu", "mag_sigma"])
    t = make(df, magnitudes=chunk_table()).validate()
    rng = np.random.default_rng(0)
    # layer 1: bytes [0,300) -> 0.1, [300,800) -> 0.9; pieces start at 0, 250, 500, 750
    assert t.chunk_magnitudes(1, 250, rng).tolist() == [0.1, 0.1, 0.9, 0.9]
    d = make().validate()
    m = d.chunk_magnitudes(0, 100, rng)
    assert len(m) == 4 and (m > 0).all()
    u = d.sample_magnitudes(2, 10_000, rng)  # uniform, mean 0.02, std 0.005
    assert abs(u.mean() - 0.02) < 5e-4 and abs(u.std() - 0.005) < 5e-4 and u.min() >= 0
    ln = d.sample_magnitudes(0, 10_000, rng)
    assert abs(np.median(np.log(ln)) + 7.0) < 0.05


def test_a_trace_of_sizes_and_backward_times_alone_gets_the_documented_defaults(tmp_path):
    from workloads import synthetic
    path = tmp_path / "two.csv"
    path.write_text("grad_bytes,backward_us\n400000,100\n800000,250.5\n")
    t = load_trace(path)
    layers = t.layers
    assert list(layers["layer_id"]) == [0, 1] and list(layers["name"]) == ["layer0", "layer1"]
    assert list(layers["forward_us"]) == [50.0, 125.25]          # half the backward time
    want = synthetic.lognormal_magnitudes(np.array([400000, 800000]))
    assert list(layers["mag_dist"]) == ["lognormal"] * 2
    assert np.allclose(layers["mag_mu"], want["mag_mu"]) and np.allclose(layers["mag_sigma"], 1.0)
    assert t.batch_time_us == 100 + 250.5 + 50 + 125.25
    assert t.meta["synthetic"].startswith("layer_id (row order); name; forward_us (0.5 x backward_us); magnitudes")
    # A column given in part is not completed: its gaps stay errors, named.
    path.write_text("grad_bytes,backward_us,mag_mu\n400,1,0.1\n")
    with pytest.raises(TraceError, match=r"missing magnitude column\(s\) \['mag_dist', 'mag_sigma'\]"):
        load_trace(path)
    path.write_text("grad_bytes\n400\n")
    with pytest.raises(TraceError, match="backward_us"):
        load_trace(path)
