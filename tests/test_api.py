"""The Python API (`import dlcp_emu`): specs from files or dicts, runs that return their tables as
DataFrames and their summary, finished runs read again; what the command line writes too."""
import json
import subprocess
import sys

import pandas as pd
import pytest

import dlcp_emu
from dlcp_emu.cli import main

from test_experiments_sim import TINY as SIM_TINY

TINY = {k: v for k, v in SIM_TINY.items() if k != "background"}


def test_importing_the_package_loads_the_api_only_when_used():
    code = ("import sys, dlcp_emu; assert 'pandas' not in sys.modules and 'dlcp_emu.api' not in sys.modules; "
            "dlcp_emu.simulate; assert 'dlcp_emu.api' in sys.modules; print(sorted(dlcp_emu.API))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "'compare', 'emulate', 'load_spec', 'parse_spec', 'simulate'" in out
    with pytest.raises(AttributeError, match="no attribute 'simulat'"):
        dlcp_emu.simulat


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    return dlcp_emu.compare(TINY, ["fifo", "dlcp"], seeds=2, root=tmp_path_factory.mktemp("r"))


def test_a_comparison_returns_its_summary_and_tables(result):
    on_disk = json.loads((result.path / "summary.json").read_text())
    assert result.summary == json.loads(json.dumps(on_disk)) and result.complete
    assert result.variants == ["fifo", "dlcp"] and list(result.figures.index) == ["fifo", "dlcp"]
    assert list(result.figures["transport"]) == ["reliable", "dlcp"]
    assert result.figures.loc["dlcp", "iteration_time_mean_s"] == on_disk["presets"]["dlcp"]["iteration_time_mean_s"]
    seeds = result.per_seed
    assert list(zip(seeds["variant"], seeds["seed"])) == [("fifo", 2), ("fifo", 3), ("dlcp", 2), ("dlcp", 3)]
    assert list(seeds["iteration_time_mean_s"]) == [s["iteration_time_mean_s"] for v in ("fifo", "dlcp")
                                                    for s in on_disk["presets"][v]["per_seed"]]
    assert result.tables[:4] == ["iterations", "tensors", "packets", "ports"]
    for name in ("iterations", "tensors", "packets", "ports"):
        frame = getattr(result, name)
        assert list(frame.columns[:2]) == ["variant", "seed"]
        one = pd.read_parquet(result.path / "dlcp" / "seed-3" / f"{name}.parquet")
        rows = frame[(frame["variant"] == "dlcp") & (frame["seed"] == 3)].drop(columns=["variant", "seed"])
        pd.testing.assert_frame_equal(rows[one.columns].reset_index(drop=True), one)
    ports = result.ports   # a drop reason fifo saw and dlcp did not: none, not missing, in dlcp's rows
    assert {c for c in ports.columns if c.startswith("drop_")} and not ports.isna().any().any()
    # 4 workers x 3 iterations in each of the 4 runs
    assert result.iterations.groupby(["variant", "seed"]).size().tolist() == [12] * 4


def test_a_finished_run_reads_again(result):
    again = dlcp_emu.Result.load(result.path)
    assert again.summary == result.summary
    pd.testing.assert_frame_equal(again.tensors, result.tensors)
    pd.testing.assert_frame_equal(again.figures, result.figures)
    with pytest.raises(KeyError, match="no run of .* has a 'nosuch' table; it has: iterations, tensors"):
        again.table("nosuch")


def test_what_the_command_line_writes_reads_as_a_result(tmp_path):
    path = tmp_path / "tiny.toml"
    path.write_text('name = "tiny"\ntime_dilation = 2.0\nbyte_scale = 0.002\n[topology]\nkind = "star"\n'
                    'hosts = 4\nhost_rate_bps = 10e9\n[workload]\nmodel = "resnet50"\nworkers = 4\niterations = 2\n'
                    '[switch]\npreset = "pias"\n')
    assert main(["simulate", str(path), "--results", str(tmp_path / "r")]) == 0
    from_cli = dlcp_emu.Result.load(tmp_path / "r" / "latest")
    from_api = dlcp_emu.simulate(path, root=tmp_path / "api")
    assert from_cli.variants == from_api.variants == ["pias"]
    pd.testing.assert_frame_equal(from_cli.iterations, from_api.iterations)


def test_bad_input_is_refused_by_name_before_anything_runs(tmp_path):
    with pytest.raises(ValueError, match="presets: unknown preset 'fast'; known: dlcp, "):
        dlcp_emu.compare(TINY, ["fifo", "fast"], root=tmp_path / "r")
    with pytest.raises(dlcp_emu.SpecError, match="workload.workers: 0 is not allowed"):
        dlcp_emu.simulate({**TINY, "workload": {**TINY["workload"], "workers": 0}}, root=tmp_path / "r")
    with pytest.raises(TypeError, match="spec: a Spec, a dict of its tables or a path to a TOML file, not int"):
        dlcp_emu.simulate(3, root=tmp_path / "r")
    with pytest.raises(ValueError, match="backend: 'ns3'; must be 'sim' .virtual time. or 'emu'"):
        dlcp_emu.compare(TINY, ["fifo"], backend="ns3", root=tmp_path / "r")
    with pytest.raises(FileNotFoundError, match="no summary.json; a run folder is what"):
        dlcp_emu.Result.load(tmp_path)
    assert not (tmp_path / "r").exists()


@pytest.mark.root
@pytest.mark.slow
def test_emulate_runs_on_the_emulated_network_and_reads_as_a_simulation_does(tmp_path):
    """`emulate` is a real Mininet run: its Result has the simulator's tables and figures, and
    the emulator's own files beside them."""
    spec = {**TINY, "time_dilation": 4.0, "workload": {**TINY["workload"], "workers": 2, "iterations": 2},
            "topology": {"kind": "star", "hosts": 2, "host_rate_bps": 10e9}}
    result = dlcp_emu.emulate(spec, preset="fifo", root=tmp_path, log=None)
    assert result.complete and result.summary["backend"] == "emu" and result.variants == ["fifo"]
    assert result.iterations.groupby("seed").size().to_dict() == {2: 2 * 2}
    assert result.figures.loc["fifo", "iteration_time_mean_s"] >= 0.12809   # ResNet-50's compute
    assert (result.path / "fifo" / "seed-2" / "switches.json").is_file()
    assert set(result.ports["switch"]) == {"s1"}
