"""The calibration grid's bookkeeping and report (study/calibrate.py, calibration_report.py),
on records made up here: the grid's cases and resuming, the fit recovering known
coefficients, the seeds' means and the confusion matrix of the flag."""
import json
import math

import numpy as np
import pytest

from dlcp_emu.study import calibrate, calibration_report as R

FRAME_NS = 100_000
SLACK = R.E.WAIT_SLACK_FRAMES


def record(spec, dilation, seed, *, lag_us, it, fct=None, stretch=0.0, steps=20, iteration_s=0.5, share=0.2,
           preset="fifo", late_us=0.0):
    r = {"spec": spec, "preset": preset, "dilation": dilation, "seed": seed,
         "fidelity": {"host_rx_lag_mean_us": lag_us, "host_compute_stretch": stretch, "p99_lateness_us": late_us},
         "inputs": {"frame_ns": FRAME_NS, "compute_share": share, "steps": steps, "dilation": dilation,
                    "iteration_s": iteration_s},
         "emu": {"iteration_time_mean_s": iteration_s * (1 + it), "tensor_fct_p99_s": 0.1 * (1 + (fct or it))},
         "sim": {"iteration_time_mean_s": iteration_s, "tensor_fct_p99_s": 0.1}}
    r["iteration"], r["fct_p99"] = it, fct if fct is not None else it
    r["estimate"] = R.E.estimate(r["fidelity"], **r["inputs"])
    return r


def test_the_grid_runs_first_seeds_first_and_resumes_where_it_stopped(tmp_path):
    keys = calibrate.pending(tmp_path / "none.jsonl")
    first = [k for k in keys if k.endswith(":0")]
    assert keys[:len(first)] == first and len(keys) == len(set(keys))
    out = tmp_path / "grid.jsonl"
    out.write_text(json.dumps({"case": keys[0]}) + "\n" + json.dumps({"case": keys[0]}) + "\n")
    assert calibrate.pending(out) == keys[1:]
    with pytest.raises(ValueError, match="no spec 'nope' in the grid"):
        calibrate.run_key("nope:4:0", out)


def test_the_fit_recovers_the_coefficients_that_made_the_differences():
    rows = []
    for k, (lag, steps, dil) in enumerate([(50, 10, 4), (400, 200, 8), (900, 40, 16), (150, 400, 4), (30, 5, 32)]):
        r = record("s", dil, k, lag_us=lag, it=0.0, steps=steps, stretch=0.01 * k)
        fixed, x = R.features(r, "iteration")
        r["iteration"] = fixed + 0.2 * x[0] + 2.5 * x[1]
        rows.append(r)
    assert R.fit(rows, "iteration", "iteration") == pytest.approx([0.2, 2.5, 0.0], abs=1e-6)
    # A coefficient would be negative to fit these: it stays at 0 (a lateness never speeds a run).
    for r in rows:
        r["iteration"] = -R.features(r, "iteration")[1][0]
    assert R.fit(rows, "iteration", "iteration")[0] == 0.0


def test_left_out_specs_are_predicted_by_the_others_fit():
    # Specs a and b lose 0.1 of the iteration per log(1 + frames of wait) (over the 80% that
    # communicates), spec c 0.3: left out, c is predicted with a and b's 0.1.
    rows = [record(s, 8, k, lag_us=lag, it=coef * math.log1p(lag * 1e3 / FRAME_NS - SLACK) * 0.8, steps=0)
            for k, (s, lag, coef) in enumerate([("a", 100, 0.1), ("a", 900, 0.1), ("b", 300, 0.1),
                                                ("b", 600, 0.1), ("c", 50, 0.3)])]
    out = R.leave_one_spec_out(rows, "iteration", "iteration")
    coef, rms = out["c"]
    assert coef[0] == pytest.approx(0.1, rel=1e-6)
    assert rms == pytest.approx(100 * 0.2 * math.log1p(0.5 - SLACK) * 0.8, rel=1e-6)   # 0.5 frame of wait
    assert out["a"][0][0] > 0.1 and out["a"][1] > 0


def test_a_case_is_the_seeds_mean_and_the_matrix_counts_flags_by_measured_band():
    rows = [record("s", 4, 0, lag_us=2_000, it=0.08), record("s", 4, 1, lag_us=2_000, it=0.04),   # 6%: flagged?
            record("s", 16, 0, lag_us=10, it=0.01), record("s", 16, 1, lag_us=10, it=-0.01),
            record("t", 8, 0, lag_us=10, it=0.01, fct=-0.045)]
    cases = {(c["spec"], c["dilation"]): c for c in R.cases(rows)}
    assert cases["s", 4]["seeds"] == 2 and cases["s", 4]["iteration"] == pytest.approx(0.06)
    assert cases["s", 4]["estimate"]["iteration_pct"] == pytest.approx(rows[0]["estimate"]["iteration_pct"])
    assert R.E.flagged(cases["s", 4]["estimate"], 0.05) and not R.E.flagged(cases["s", 16]["estimate"], 0.05)
    assert R.confusion(cases.values()) == {("> 5%", True): 1, ("< 3%", False): 2}
    # By size, t's p99 tensor completion 4.5% faster than its model is 3-5%.
    assert R.confusion(cases.values(), signed=False) == {("> 5%", True): 1, ("< 3%", False): 1, ("3-5%", False): 1}


def test_the_report_writes_the_table_the_matrix_and_the_plot(tmp_path, monkeypatch):
    rows = [record("s", 4, 0, lag_us=2_000, it=0.08), record("s", 16, 0, lag_us=10, it=0.01),
            record("t", 8, 0, lag_us=10, it=0.02)]
    monkeypatch.setattr(R, "load", lambda path: [{**r, "iteration_difference": r["iteration"],
                                                  "fct_p99_difference": r["fct_p99"]} for r in rows])
    R.write("grid.jsonl", tmp_path, "dlcp-emu calibrate")
    text = (tmp_path / "fidelity-grid.md").read_text()
    assert "| s | fifo | 4 | 1 | +8.0% |" in text and "| > 5% | 1 | 0 | 1 | 0 |" in text and "| < 3% | 0 | 2 | 0 | 2 |" in text
    assert (tmp_path / "fidelity-grid.png").read_bytes()[:4] == b"\x89PNG"
    assert np.isfinite([float(x) for x in text.split("| mean iteration | all specs | ")[1].split(" |")[:3]]).all()


def test_a_spec_at_another_dilation_keeps_its_real_world_time_limit():
    from dlcp_emu.experiment.spec import load_spec
    spec = load_spec("examples/default.toml")
    for d in (8, 16, 64):
        s = calibrate.at_dilation(spec, d)
        assert s.time_dilation == d and s.time_limit_s / d == pytest.approx(spec.time_limit_s / spec.time_dilation)
