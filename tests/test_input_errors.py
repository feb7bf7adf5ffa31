"""Bad input ends in a clear error naming the field, flag or file: exit status 2, one line
on stderr, no traceback. Each test is a repro of a bad input that once ended otherwise."""
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dlcp_emu.cli import main
from dlcp_emu.experiment.spec import SpecError, load_spec, parse_spec
from dlcp_emu.experiment.spec_checks import machine_memory_bytes
from topologies import build
from workloads.trace import TraceError, load_trace
from workloads.trace_checks import MAX_GRAD_BYTES

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "examples" / "default.toml"

SPEC = """\
name = "t"
time_limit_s = 5
{top}
[topology]
kind = "star"
hosts = 2
host_rate_bps = 1e9
[workload]
{workload}
workers = 2
iterations = 1
{tables}
"""

LAYERS = ("layer_id,name,grad_bytes,backward_us,forward_us,mag_dist,mag_mu,mag_sigma\n"
          "0,conv.weight,{size},10.0,5.0,lognormal,-7.0,1.0\n"
          "1,fc.weight,800,20.0,5.0,lognormal,-7.5,1.0\n")


def write_spec(tmp_path, top="", workload='model = "resnet50"', tables="", name="spec.toml"):
    path = tmp_path / name
    path.write_text(SPEC.format(top=top, workload=workload, tables=tables))
    return path


def cli(capsys, *argv):
    """Exit status and stderr of the CLI run in process (argparse exits by SystemExit)."""
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as e:
        rc = e.code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, err


def one_line_error(capsys, *argv):
    rc, err = cli(capsys, *argv)
    assert rc == 2, err
    assert err.count("\n") == 1, err
    return err


# -- numbers: NaN and infinity are refused wherever a number is read --------------------------

@pytest.mark.parametrize("top, tables, field, rule", [
    ("time_dilation = inf", "", "time_dilation: inf", "a number >= 1"),
    ("time_dilation = nan", "", "time_dilation: nan", "a number >= 1"),
    ("byte_scale = nan", "", "byte_scale: nan", "a number in (0, 1]"),
    ("mtu = inf", "", "mtu: inf", "an integer in 576..9000"),
    ("", "[transport]\nloss_bound = nan", "transport.loss_bound: nan", "a fraction in 0..0.5"),
    ("", "[compression]\nmode = \"fixed\"\nratio = nan", "compression.ratio: nan", "(0, 1]"),
    ("", "[background]\nload = inf", "background.load: inf", "(0, 0.95]"),
])
def test_nan_and_infinity_in_spec_fields_are_named_with_the_allowed_range(
        tmp_path, capsys, top, tables, field, rule):
    path = write_spec(tmp_path, top=top, tables=tables)
    with pytest.raises(SpecError) as e:
        load_spec(path)
    assert f"{field} is not allowed; must be" in str(e.value) and rule in str(e.value)
    err = one_line_error(capsys, "simulate", path, "--results", tmp_path / "r")
    assert field in err and str(path) in err


def test_nan_fusion_cycle_names_the_field(tmp_path, capsys):
    path = write_spec(tmp_path, workload='model = "resnet50"\nfusion_cycle_ms = nan')
    err = one_line_error(capsys, "simulate", path, "--results", tmp_path / "r")
    assert "workload.fusion_cycle_ms: nan is not allowed; must be a number of milliseconds > 0" in err


def test_nan_topology_rate_is_named():
    with pytest.raises(SpecError, match=r"topology: star: host_rate_bps must be a number > 0 \(bit/s\), got nan"):
        parse_spec({"topology": {"kind": "star", "hosts": 2, "host_rate_bps": float("nan")},
                    "workload": {"model": "resnet50", "workers": 2}})


def test_a_huge_time_dilation_is_reported_against_time_dilation(tmp_path):
    text = re.sub(r"time_dilation = [0-9.]+", "time_dilation = 1e9", DEFAULT.read_text()).replace(
        "byte_scale = 0.1\n", "byte_scale = 0.002\n")
    (tmp_path / "d.toml").write_text(text)
    with pytest.raises(SpecError) as e:
        load_spec(tmp_path / "d.toml")
    msg = str(e.value)
    assert msg.count("\n") == 0 and "rate_bps must be" not in msg
    assert "time_dilation: 1e+09 (with byte_scale 0.002) runs the slowest link" in msg
    assert "(l1-s1, 7.5e+09 bit/s) at 0.015 bit/s" in msg and "at most 1.5e+07 here" in msg
    # Only byte_scale written: it is the one named.
    spec = {"byte_scale": 1e-12, "topology": {"kind": "star", "hosts": 2, "host_rate_bps": 1e9},
            "workload": {"model": "resnet50", "workers": 2}}
    with pytest.raises(SpecError, match=r"byte_scale: 1e-12 \(with time_dilation 1\) .* at least 1e-09 here"):
        parse_spec(spec)
    assert parse_spec({**spec, "byte_scale": 1e-9}).byte_scale == 1e-9


def test_whatif_flags_refuse_nan_and_infinity(capsys):
    base = ["whatif", "--model", "resnet50", "--workers", "4"]
    for flag, value in (("--bandwidth-gbps", "nan"), ("--bandwidth-gbps", "inf"),
                        ("--compression", "nan"), ("--compression", "inf")):
        extra = [] if flag == "--bandwidth-gbps" else ["--bandwidth-gbps", "10"]
        err = one_line_error(capsys, *base, *extra, flag, value)
        assert f"argument {flag}: must be a finite number >=" in err and repr(value) in err
    from dlcp_emu.study.whatif import whatif
    with pytest.raises(ValueError, match="bandwidth_gbps must be > 0"):
        whatif("resnet50", 4, float("inf"))


# -- files: encodings, formats, unreadable ----------------------------------------------------

def test_a_spec_that_is_not_utf8_names_the_file(tmp_path, capsys):
    path = tmp_path / "latin1.toml"
    path.write_bytes('name = "caf\xe9"\n'.encode("latin-1"))
    with pytest.raises(SpecError, match=r"latin1.toml: not UTF-8 text \(byte 0xe9 at offset 11\)"):
        load_spec(path)
    err = one_line_error(capsys, "simulate", path, "--results", tmp_path / "r")
    assert f"{path}: not UTF-8 text" in err


def test_a_spec_nested_too_deeply_names_the_file(tmp_path):
    path = tmp_path / "deep.toml"
    path.write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(SpecError, match="deep.toml: not valid TOML"):
        load_spec(path)


@pytest.mark.parametrize("name, content, reason", [
    ("ragged.csv", b"layer_id,name\n0,a\n1,b,c,d\n", "cannot read it as a CSV trace: Error tokenizing data"),
    ("latin1.csv", "layer_id,name\n0,caf\xe9\n".encode("latin-1"), "not UTF-8 text (byte 0xe9"),
    ("empty.csv", b"", "cannot read it as a CSV trace: No columns to parse"),
    ("text.parquet", b"layer_id,name\n", "cannot read it as a Parquet trace: Parquet magic bytes not found"),
    ("version.csv", b"# dlcp-trace: one\n" + LAYERS.format(size=400).encode(), "metadata dlcp-trace"),
    ("sidecar.csv", b"# magnitudes: ../x.csv\n" + LAYERS.format(size=400).encode(), "must be a file name"),
])
def test_trace_read_errors_name_the_file(tmp_path, capsys, name, content, reason):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(TraceError) as e:
        load_trace(path)
    assert str(e.value).startswith(f"{path}: ") and reason in str(e.value)
    spec = write_spec(tmp_path, workload=f'trace = "{name}"')
    err = one_line_error(capsys, "simulate", spec, "--results", tmp_path / "r")
    assert f"workload.trace: {path}: " in err and reason in err


def test_a_trace_directory_names_the_file(tmp_path):
    (tmp_path / "dir.csv").mkdir()
    with pytest.raises(TraceError, match=r"dir.csv: cannot read it as a CSV trace: Is a directory"):
        load_trace(tmp_path / "dir.csv")


def test_trace_validation_names_the_file_and_each_problem(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(LAYERS.format(size=-5).replace("lognormal,-7.5", "zipf,-7.5"))
    with pytest.raises(TraceError) as e:
        load_trace(path)
    assert e.value.problems == [
        f"{path}: column 'grad_bytes' row 0 (layer_id 0): -5 is not allowed; grad_bytes must be "
        f"an integer > 0 and at most {MAX_GRAD_BYTES} (1 TiB)",
        f"{path}: column 'mag_dist' row 1 (layer_id 1): 'zipf' is not allowed; mag_dist must be "
        "one of lognormal, normal, uniform"]


# -- sizes past what the machine holds, refused before anything is allocated -----------------

def test_a_layer_of_1e18_bytes_is_refused_naming_the_field_and_layer(tmp_path, capsys):
    path = tmp_path / "big.csv"
    path.write_text(LAYERS.format(size="1e18"))
    with pytest.raises(TraceError, match=r"big.csv: column 'grad_bytes' row 0 \(layer_id 0\): "
                                         r"1e\+18 is not allowed; grad_bytes must be an integer > 0 "
                                         r"and at most 1099511627776"):
        load_trace(path)
    # The run itself (not a dry run) stops at the spec: it died allocating 909 TiB before.
    spec = write_spec(tmp_path, top="byte_scale = 0.001", workload='trace = "big.csv"')
    err = one_line_error(capsys, "simulate", spec, "--results", tmp_path / "r")
    assert "workload.trace:" in err and "column 'grad_bytes' row 0 (layer_id 0): 1e+18" in err
    assert not (tmp_path / "r").exists()


def test_infinite_and_wrapping_sizes_and_ids_are_refused(tmp_path):
    for size in ("inf", "1e19", "99999999999999999999999"):
        path = tmp_path / "t.csv"
        path.write_text(LAYERS.format(size=size))
        with pytest.raises(TraceError, match="column 'grad_bytes' row 0"):
            load_trace(path)
    path.write_text(LAYERS.format(size=400).replace("\n1,", "\ninf,"))
    with pytest.raises(TraceError, match="column 'layer_id' row 1: inf is not allowed"):
        load_trace(path)


def test_gradients_beyond_the_machines_memory_are_refused_naming_byte_scale(tmp_path, capsys):
    # Two ranks of a 1 TiB layer: within the format, beyond any machine this runs on.
    (tmp_path / "huge.csv").write_text(LAYERS.format(size=MAX_GRAD_BYTES))
    assert 2 * MAX_GRAD_BYTES > machine_memory_bytes()
    spec = write_spec(tmp_path, workload='trace = "huge.csv"')
    err = one_line_error(capsys, "simulate", spec, "--results", tmp_path / "r")
    assert "byte_scale: 1 x the model's 1,099,511,628,576 bytes of gradients x 2 ranks" in err
    assert "more than this machine's" in err and "or workload.workers" in err
    assert not (tmp_path / "r").exists()
    scale = 0.5 * machine_memory_bytes() / (2 * MAX_GRAD_BYTES)
    spec = write_spec(tmp_path, top=f"byte_scale = {scale!r}", workload='trace = "huge.csv"')
    assert load_spec(spec).byte_scale == scale


def test_topologies_past_the_link_limit_are_refused_before_building():
    with pytest.raises(ValueError, match="star: hosts 1000000000000 makes 1,000,000,000,000 links; "
                                         "at most 200,000"):
        build("star", hosts=1e12, host_rate_bps=1e9)
    with pytest.raises(ValueError, match=r"leaf-spine: leaves 100000 x \(hosts_per_leaf 1 \+ spines 100000\)"):
        build("leaf-spine", leaves=100_000, spines=100_000, hosts_per_leaf=1, host_rate_bps=1e9)
    with pytest.raises(ValueError, match="fat-tree: k 1000 makes 750,000,000 links"):
        build("fat-tree", k=1000, host_rate_bps=1e9)
    assert len(build("fat-tree", k=16, host_rate_bps=1e9).hosts()) == 1024


# -- output paths and list flags ---------------------------------------------------------------

def test_results_must_be_a_folder_we_can_write_in(tmp_path, capsys):
    spec = write_spec(tmp_path)
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    err = one_line_error(capsys, "simulate", spec, "--results", a_file)
    assert f"argument --results: {a_file} is a file, not a folder" in err
    err = one_line_error(capsys, "compare", spec, "--backend", "sim", "--results", a_file / "sub")
    assert f"argument --results: {a_file / 'sub'} is under a file ({a_file})" in err
    # Made by the run where the check passed but the system refuses: still a named error.
    from dlcp_emu.experiment import results
    with pytest.raises(RuntimeError, match=f"cannot create a run folder under {a_file}"):
        results.new_run_dir(a_file)


def test_empty_list_flags_are_errors(capsys):
    for argv in (["compare", DEFAULT, "--presets", ",,,"], ["compare", DEFAULT, "--presets", ""],
                 ["validate", DEFAULT, "--presets", " , "]):
        err = one_line_error(capsys, *argv)
        assert "argument --presets: must name at least one (comma-separated)" in err
    err = one_line_error(capsys, "compare", DEFAULT, "--vary", "compression.mode=,")
    assert "argument --vary: must be FIELD=V1,V2,..." in err


def test_a_bad_vary_value_is_named_at_a_dry_run(tmp_path, capsys):
    rc, err = cli(capsys, "compare", DEFAULT, "--backend", "sim", "--dry-run",
                  "--vary", "time_dilation=nan", "--results", tmp_path)
    assert rc == 2 and "time_dilation: nan is not allowed; must be a number >= 1" in err


def test_dry_run_checks_a_custom_switch_pipeline_without_running(tmp_path, capsys):
    spec = write_spec(tmp_path, tables='[switch]\npreset = "dlcp"\nscheduler = "fifo"')
    assert main(["simulate", str(spec), "--dry-run", "--results", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "1 variant(s) x 1 seed(s) would run (sim)" in out and "dlcp+custom:" in out
    assert not (tmp_path / "r").exists()


def test_report_and_clean_name_a_bad_folder_or_summary(tmp_path, capsys):
    (tmp_path / "summary.json").write_bytes(b"\xff")
    err = one_line_error(capsys, "report", tmp_path)
    assert f"{tmp_path / 'summary.json'} is not a run summary" in err
    (tmp_path / "summary.json").write_text(json.dumps({"presets": 3}))
    assert "is not a run summary" in one_line_error(capsys, "report", tmp_path)
    err = one_line_error(capsys, "clean", "--runtime-dir", tmp_path / "summary.json")
    assert "argument --runtime-dir: must be a folder" in err


def test_a_chunk_table_with_infinite_ids_is_a_trace_error():
    from workloads.trace import Trace
    layers = pd.read_csv(pd.io.common.StringIO(LAYERS.format(size=400)))
    layers = layers.drop(columns=["mag_dist", "mag_mu", "mag_sigma"])
    chunks = pd.DataFrame({"layer_id": [0, np.inf], "chunk": [0, 0], "nbytes": [400, 800],
                           "magnitude": [1.0, 1.0]})
    with pytest.raises(TraceError, match="magnitude table: column 'layer_id' row 1: inf"):
        Trace("t", layers, 1000.0, chunks).validate()


def spec_number_fields():
    """(table, field) of every field a spec reads, topology parameters of a star included."""
    from dlcp_emu.experiment import spec as S
    from topologies import builder_params
    tables = [("", S.TOP_FIELDS), ("workload", S._workload_fields()),
              ("transport", S.TRANSPORT_FIELDS), ("compression", S.COMPRESSION_FIELDS),
              ("background", S.BACKGROUND_FIELDS), ("topology", builder_params("star"))]
    return [(t, f) for t, fields in tables for f in fields
            if not (t == "" and f in ("topology", "workload", "transport", "switch",
                                      "background", "compression", "training", "variants", "jobs"))]


def test_every_spec_field_refuses_nan_and_infinity_naming_itself():
    good = {"topology": {"kind": "star", "hosts": 3, "host_rate_bps": 1e9},
            "workload": {"model": "resnet50", "workers": 2},
            "compression": {"mode": "dc2"}, "background": {"load": 0.1}}
    parse_spec(good)
    fields = spec_number_fields()
    assert len(fields) == 45   # workload.kind included
    for table, name in fields:
        for value in (float("nan"), float("inf"), float("-inf")):
            raw = {k: dict(v) for k, v in good.items()}
            (raw.setdefault(table, {}) if table else raw)[name] = value
            with pytest.raises(SpecError) as e:
                parse_spec(raw)
            where = f"topology: star: {name}" if table == "topology" else \
                f"{table}.{name}" if table else f"{name}:"
            assert where in str(e.value), (table, name, value, str(e.value))


# -- found by tests/test_fuzz_inputs.py ----------------------------------------------------------

@pytest.mark.parametrize("switch, named", [
    ({"preset": [1]}, "unknown preset [1]"),
    ({"preset": "pias", "classifier": {"name": "pias", "thresholds": 5}}, "pias: thresholds must be"),
    ({"preset": "fifo", "scheduler": {"name": "drr", "weights": 3}}, "drr: weights must be"),
    ({"preset": "fifo", "scheduler": {"name": "drr", "weights": [float("inf")]}}, "drr: weights must be"),
])
def test_bad_switch_stage_values_are_spec_errors(switch, named):
    with pytest.raises(SpecError, match="switch: ") as e:
        parse_spec({"topology": {"kind": "star", "hosts": 2, "host_rate_bps": 1e9},
                    "workload": {"model": "resnet50", "workers": 2}, "switch": switch})
    assert named in str(e.value)


def test_a_trace_field_that_is_not_a_string_is_named():
    with pytest.raises(SpecError, match=r"workload.trace: nan is not allowed; must be a path"):
        parse_spec({"topology": {"kind": "star", "hosts": 2, "host_rate_bps": 1e9},
                    "workload": {"trace": float("nan"), "workers": 2}})


def test_names_echoed_from_flags_stay_on_one_line(capsys):
    err = one_line_error(capsys, "compare", DEFAULT, "--presets", "fifo,a\rb", "--dry-run")
    assert "unknown preset(s) 'a\\rb'" in err
    err = one_line_error(capsys, "compare", DEFAULT, "--backend", "sim", "--dry-run",
                         "--vary", "compression.mode=a\nb")
    assert err.startswith("dlcp-emu: --vary compression.mode='a\\nb': compression.mode:")


def test_other_flags_name_what_is_allowed(capsys):
    assert "argument --k: must be an even integer in 2..64, got '3'" in one_line_error(
        capsys, "bench", "sim", "--k", "3")
    assert "argument --preset: must be a name" in one_line_error(
        capsys, "simulate", DEFAULT, "--preset", " ")
    assert "argument --trial-seconds: must be a finite number > 0, got 'nan'" in one_line_error(
        capsys, "bench", "switch", "--trial-seconds", "nan")
    assert "--sim runs at most 1024 workers (--workers), got 2000" in one_line_error(
        capsys, "whatif", "--model", "resnet50", "--workers", "2000", "--bandwidth-gbps", "10",
        "--sim")


def test_a_default_output_folder_in_the_way_is_named(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "whatif").write_text("a file where the folder goes")
    err = one_line_error(capsys, "whatif", "--sweep")
    assert err == "dlcp-emu whatif: --out results/whatif: File exists\n"
