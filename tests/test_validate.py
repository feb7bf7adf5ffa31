"""`dlcp-emu validate`'s comparison and its command line. The runs themselves are the
emulation and simulation tests'; here each backend's run hands back known figures, and the
report must hold the means, spreads and differences worked out by hand."""
import json
import os
from pathlib import Path

import pytest

from dlcp_emu.study import compare, validate
from dlcp_emu.cli import main
from dlcp_emu.experiment.spec import parse_spec

SPEC = parse_spec({"name": "t", "topology": {"kind": "star", "hosts": 2, "host_rate_bps": 1e9},
                   "workload": {"model": "resnet50", "workers": 2}})

# (backend, preset) -> per seed: (mean iteration time, p99 tensor completion time, the
# emulated run's fidelity estimate of its mean iteration, percent). The simulator's seeds
# after the second are validate's noise seeds (NOISE_SEEDS = 5 in all).
FIGURES = {
    ("emu", "fifo"): [(0.500, 0.040, 1.0), (0.520, 0.050, 1.0)],
    ("sim", "fifo"): [(0.505, 0.045, None), (0.515, 0.045, None),
                      (0.490, 0.045, None), (0.530, 0.045, None), (0.510, 0.045, None)],
    ("emu", "dlcp"): [(0.400, 0.030, 2.0), (0.400, 0.030, 10.0)],
    ("sim", "dlcp"): [(0.300, 0.020, None)] * 5,
    ("emu", "ndp"): [(1.25, 0.5, 0.0), (1.25, 0.5, 0.0)],
    ("sim", "ndp"): [(1.0, 1.0, None)] * 5,
}


def fidelity(pct):
    """An emulated run's fidelity with an estimate of `pct` (one term), or a simulated one's."""
    if pct is None:
        return {"fell_behind": False}
    est = {"iteration_pct": pct, "fct_p99_pct": pct / 2,
           "terms": {"host wait": {"iteration_pct": pct, "fct_p99_pct": pct / 2}}}
    return {"fell_behind": False, "estimate": est, "tolerance": 0.05, "estimate_flagged": pct > 5}


KIND = {"emulation": "emu", "simulation": "sim"}   # a Backend's name -> compare's backend


@pytest.fixture
def known_runs(monkeypatch):
    """compare.run_one (one preset, one seed, one backend) gives FIGURES' numbers; compare
    itself, which combines seeds and writes summaries, runs for real."""
    def run_one(spec, preset, run_dir, backend, log):
        backend = KIND[backend.name]
        it, fct, pct = FIGURES[backend, preset][spec.seed - SPEC.seed]
        return {"iteration_time_mean_s": it, "tensor_fct_p99_s": fct, "completed": True,
                "loss_within_bound": True, "compression": {}, "fidelity": fidelity(pct),
                "backend": "emulation" if backend == "emu" else "simulation"}
    monkeypatch.setattr(compare, "run_one", run_one)


def test_report_holds_means_per_seed_differences_and_verdicts(known_runs, tmp_path):
    out_dir, report = validate.validate(SPEC, ["fifo", "dlcp", "ndp"], seeds=2, tolerance=0.25,
                                        root=tmp_path, log=lambda m: None)
    assert json.loads((out_dir / "validation.json").read_text()) == report
    assert report["complete"] and (report["seeds"], report["tolerance"]) == (2, 0.25)
    rows = {r["preset"]: r for r in report["presets"]}
    fifo, dlcp, ndp = rows["fifo"]["iteration_time_mean_s"], rows["dlcp"], rows["ndp"]
    assert fifo["emu_seeds"] == [0.500, 0.520] and fifo["sim_seeds"] == [0.505, 0.515]
    assert fifo["emu"] == pytest.approx(0.510) and fifo["sim"] == pytest.approx(0.510)
    assert fifo["difference"] == pytest.approx(0.0, abs=1e-12)
    # The noise: the simulator's five seeds (505, 515, 490, 530, 510 ms: mean 510, sd
    # 14.58) give one seed's spread 2.859%, a difference of two 2-seed means sqrt(2/2) of it.
    assert report["noise_seeds"] == 5
    assert fifo["difference_sd"] == pytest.approx(14.577 / 510, rel=1e-3)
    assert rows["dlcp"]["iteration_time_mean_s"]["difference_sd"] == 0.0
    assert rows["fifo"]["tensor_fct_p99_s"]["emu"] == pytest.approx(0.045)
    assert rows["fifo"]["within_tolerance"] and rows["fifo"]["emulation_fidelity"] == "~+1.0%"
    # dlcp: 400 ms against 300 ms is +33.3 %, beyond 25 %; the emulated runs estimated +2%
    # and +10% of their own error: +6% over the seeds, above their 5% tolerance.
    assert dlcp["iteration_time_mean_s"]["difference"] == pytest.approx(1 / 3)
    assert dlcp["tensor_fct_p99_s"]["difference"] == pytest.approx(0.5)
    assert not dlcp["within_tolerance"] and dlcp["emulation_fidelity"] == "~+6.0%!"
    assert dlcp["fidelity_estimate"]["terms"]["host wait"] == {"iteration_pct": 6.0, "fct_p99_pct": 3.0}
    # ndp: exactly +25 % (binary-exact numbers) is within a 25 % tolerance; fct p99 -50 %.
    assert ndp["iteration_time_mean_s"]["difference"] == 0.25 and ndp["within_tolerance"]
    assert ndp["tensor_fct_p99_s"]["difference"] == -0.5
    # Both backends' own compare runs are kept beside the report.
    for backend in ("emu", "sim"):
        run_dir = Path(report["runs"][backend])
        assert run_dir.parent == tmp_path
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["backend"] == backend and set(summary["presets"]) == {"fifo", "dlcp", "ndp"}

    text = validate.table(report)
    line = {r: next(x for x in text.splitlines() if x.strip().startswith(r)) for r in rows}
    assert "510.0 ± 14.1" in line["fifo"] and "+0.0%" in line["fifo"] and line["fifo"].endswith("~+1.0%")
    assert "+0.0%  ±2.9%" in line["fifo"] and "spread over 5 seeds" in text
    assert "400.0 ± 0.0" in line["dlcp"] and "+33.3%" in line["dlcp"] and " NO " in line["dlcp"]
    assert line["dlcp"].endswith("~+6.0%!")
    assert "+25.0%" in line["ndp"] and "-50.0%" in line["ndp"] and " yes " in line["ndp"]
    assert "within 25%" in text


def test_a_verdict_inside_its_noise_says_how_many_seeds_would_tell(known_runs, tmp_path):
    """At a 2% tolerance, fifo's noise at 2 seeds (2.859% of one seed's spread x sqrt(2/2))
    is above it: 5 seeds bring it to 1.81% (4 would leave 2.02%). dlcp's is 0: no note."""
    _, report = validate.validate(SPEC, ["fifo", "dlcp"], seeds=2, tolerance=0.02,
                                  root=tmp_path, log=lambda m: None)
    rows = {r["preset"]: r for r in report["presets"]}
    assert rows["fifo"]["seeds_to_resolve"] == 5 and rows["dlcp"]["seeds_to_resolve"] == 1
    note = validate.table(report).splitlines()[-1]
    assert note == ("noise above the 2% tolerance at 2 seed(s), so the verdict cannot tell: "
                    "fifo ±2.9% (--seeds 5) would bring it within")
    assert validate.seeds_to_resolve(0.02, 4, 0.02) == 4 and validate.seeds_to_resolve(None, 1, 0.05) is None
    _, within = validate.validate(SPEC, ["fifo"], seeds=2, tolerance=0.25, root=tmp_path, log=lambda m: None)
    assert "noise above" not in validate.table(within)


def test_a_preset_without_figures_has_no_difference(known_runs, tmp_path, monkeypatch):
    real = compare.run_one

    def no_sim_figure(spec, preset, run_dir, backend, log):
        s = real(spec, preset, run_dir, backend, log)
        if backend.name == "simulation":
            s["iteration_time_mean_s"] = None    # e.g. the run stopped before an iteration ended
        return s
    monkeypatch.setattr(compare, "run_one", no_sim_figure)
    _, report = validate.validate(SPEC, ["fifo"], seeds=1, root=tmp_path, log=lambda m: None)
    row = report["presets"][0]
    assert row["iteration_time_mean_s"] == {"emu": 0.5, "sim": None, "emu_seeds": [0.5],
                                            "sim_seeds": [], "difference": None, "difference_sd": None}
    assert not row["within_tolerance"]
    assert " - " in validate.table(report).splitlines()[2]


def test_command_line_errors_name_the_flag(capsys):
    with pytest.raises(SystemExit):
        main(["validate", "examples/default.toml", "--tolerance", "5"])
    assert "argument --tolerance: must be a fraction in (0, 1), got '5'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["validate", "examples/default.toml", "--noise-seeds", "-1"])
    assert "argument --noise-seeds: must be an integer >= 0, got '-1'" in capsys.readouterr().err
    if os.geteuid() == 0:
        assert main(["validate", "examples/default.toml", "--presets", "fifo,fifoo"]) == 2
        assert "unknown preset(s) 'fifoo'" in capsys.readouterr().err
    else:
        assert main(["validate", "examples/default.toml"]) == 2
        assert "emulation needs root" in capsys.readouterr().err


def test_a_custom_pipeline_is_validated_under_its_name(monkeypatch, tmp_path):
    """A [switch] table (no preset of that name) runs in both backends as the table itself,
    and the report's row carries its pipeline's name."""
    table = {"preset": "fifo", "queue_manager": {"name": "ecn", "mark_fraction": 0.1}}
    given = []

    def run_one(spec, preset, run_dir, backend, log):
        backend = KIND[backend.name]
        given.append((backend, preset))
        return {"iteration_time_mean_s": 0.4 if backend == "emu" else 0.5, "tensor_fct_p99_s": 0.1,
                "completed": True, "loss_within_bound": True, "compression": {},
                "fidelity": fidelity(0.0 if backend == "emu" else None)}
    monkeypatch.setattr(compare, "run_one", run_one)
    _, report = validate.validate(SPEC, [table], root=tmp_path, log=lambda m: None)
    assert given == [("emu", table), ("sim", table)] + [("sim", table)] * 4   # and the noise seeds
    (row,) = report["presets"]
    assert row["preset"] == compare.preset_name(table) != "fifo"
    assert row["iteration_time_mean_s"]["difference"] == pytest.approx(-0.2)


def test_a_schedule_runs_fct_is_its_gradient_messages():
    """A schedule has no tensors (buckets): validate compares its DP gradient messages' p99."""
    from dlcp_emu.study.validate import _per_seed
    runs = {"per_seed": [{"tensor_fct_p99_s": None, "traffic_classes": {"gradient": {"fct_p99_s": 0.02},
                                                                        "activation": {"fct_p99_s": 1e-4}}},
                         {"tensor_fct_p99_s": None, "traffic_classes": {"gradient": {"fct_p99_s": 0.03}}}]}
    assert _per_seed(runs, "tensor_fct_p99_s") == [0.02, 0.03]
    assert _per_seed({"tensor_fct_p99_s": 0.5, "traffic_classes": {"gradient": {"fct_p99_s": 0.02}}},
                     "tensor_fct_p99_s") == [0.5]


def test_each_job_of_several_is_compared(monkeypatch, tmp_path):
    """A spec of [[jobs]]: each job's iteration mean, alone run and slowdown, emulated against
    simulated (seeds averaged by compare), beside the run's, with each job's own estimate."""
    figures = {("emu", "a"): (0.42, 0.40), ("sim", "a"): (0.40, 0.40),
               ("emu", "b"): (0.90, 0.60), ("sim", "b"): (1.00, 0.50)}

    def run_one(spec, preset, run_dir, backend, log):
        b = KIND[backend.name]
        jobs = {name: {"iteration_time_mean_s": figures[b, name][0],
                       "alone_iteration_time_mean_s": figures[b, name][1],
                       "slowdown": figures[b, name][0] / figures[b, name][1]} for name in ("a", "b")}
        return {"iteration_time_mean_s": 0.6, "tensor_fct_p99_s": 0.1, "completed": True,
                "loss_within_bound": True, "compression": {}, "jobs": jobs, "jain_fairness": 0.9,
                "fidelity": {**fidelity(8.0), "jobs": {"a": fidelity(1.0), "b": fidelity(8.0)}} if b == "emu"
                else fidelity(None)}
    monkeypatch.setattr(compare, "run_one", run_one)
    _, report = validate.validate(SPEC, ["fifo"], tolerance=0.05, root=tmp_path, log=lambda m: None,
                                  noise_seeds=0)
    jobs = report["presets"][0]["jobs"]
    assert jobs["a"]["iteration_time_mean_s"]["difference"] == pytest.approx(0.05)
    assert jobs["a"]["within_tolerance"]                   # +5% is within 5%
    assert jobs["b"]["iteration_time_mean_s"]["difference"] == pytest.approx(-0.1)
    assert not jobs["b"]["within_tolerance"]
    assert jobs["b"]["slowdown"]["emu"] == pytest.approx(1.5) and jobs["b"]["slowdown"]["sim"] == pytest.approx(2.0)
    assert jobs["b"]["slowdown"]["difference"] == pytest.approx(-0.25)
    text = validate.table(report)
    line = {j: next(x for x in text.splitlines() if x.split()[:2] == [j, "fifo"]) for j in "ab"}
    assert "420.0" in line["a"] and "+5.0%" in line["a"] and line["a"].split()[-2:] == ["yes", "~+1.0%"]
    assert "900.0" in line["b"] and "1000.0" in line["b"] and "-10.0%" in line["b"] and "1.500" in line["b"]
    assert line["b"].split()[-2:] == ["NO", "~+8.0%!"]   # each job its own estimate of its error
