"""Fuzzing the input paths: generated specs and traces, valid and not, through the real
parsers (load_spec, load_trace) and the CLI's main() in process (`simulate --dry-run`,
`compare --dry-run`). Nothing may escape but the project's own errors (SpecError,
TraceError), each naming the file and the field it is about; the CLI answers exit 0, or
exit 2 with a message naming the file or field, and never a traceback.

1,050 specs and 1,050 traces a run. Derandomized: every run tries the same cases, so a
failure here is a bug to fix, never noise; change FUZZ_SEED (or examples) to explore anew.
"""
import io
import json
import math
import random
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, seed, settings, strategies as st

from dlcp_emu.cli import main
from dlcp_emu.experiment.spec import SpecError, load_spec
from workloads.trace import TraceError, load_trace
from workloads.trace_checks import CHUNK_COLUMNS, MAG_COLUMNS, MAX_GRAD_BYTES, REQUIRED_COLUMNS

pytestmark = pytest.mark.slow
FUZZ_SEED = 14


def fuzz(examples):
    def wrap(f):
        return seed(FUZZ_SEED)(settings(max_examples=examples, deadline=None, derandomize=True,
                                        database=None,
                                        suppress_health_check=list(HealthCheck))(f))
    return wrap


_TMP = tempfile.TemporaryDirectory(prefix="dlcp-fuzz-")   # removed when the session ends
WORK = Path(_TMP.name)
NAN, INF = float("nan"), float("inf")

# -- values -----------------------------------------------------------------------------------
NASTY = [NAN, INF, -INF, 0, -1, 1, 0.5, 1e-300, 1e300, 10 ** 18, 2 ** 63 - 1, -(2 ** 63), True,
         False, "", "x", "nan", "inf", "1e18", [], [1, 2], {}, {"name": "x"}]
CHARS = "az09_-. é\u00ff\U00010000\x00\x7f\"\\\n"


def nasty(rnd):
    """A value of the wrong kind or out of range: NaN and infinities a third of the time."""
    pick = rnd.random()
    if pick < 0.33:
        return rnd.choice([NAN, INF, -INF])
    if pick < 0.66:
        return rnd.choice(NASTY)
    if pick < 0.75:
        return rnd.randint(-10 ** 6, 10 ** 6)
    if pick < 0.85:
        return rnd.choice([-1, 1]) * 10 ** rnd.uniform(-320, 310)
    if pick < 0.95:
        return "".join(rnd.choice(CHARS) for _ in range(rnd.randint(0, 8)))
    return [rnd.randint(0, 9) for _ in range(rnd.randint(0, 3))]


# Per field: values that are allowed (so that many generated specs are valid) or nearly so.
GOOD = {
    ("name",): ["t", "run-1", "a_b"],
    ("seed",): [0, 1, 7],
    ("time_dilation",): [1, 2.5, 100, 1e6],
    ("byte_scale",): [1e-6, 0.001, 0.5, 1],
    ("mtu",): [576, 1500, 9000],
    ("time_limit_s",): [1, 60, 86400],
    ("packet_records",): [True, False],
    ("payload",): ["values", "sizes"],
    ("topology", "kind"): ["star", "dumbbell", "leaf-spine", "fat-tree"],
    ("topology", "hosts"): [1, 2, 3, 16],
    ("topology", "rate_bps"): [1e9],   # the old name of host_rate_bps
    ("topology", "delay_ns"): [0, 1000, 10 ** 9],
    ("topology", "buffer_bytes"): [1514, 262144, 10 ** 12],
    ("workload", "model"): ["resnet50", "vgg16", "gpt2-small", "bert-base"],
    ("workload", "pattern"): ["ring", "ps", "ds-sync"],
    ("workload", "workers"): [1, 2, 3, 1024],
    ("workload", "iterations"): [1, 2, 10000],
    ("workload", "ps"): [1, 2, 64],
    ("workload", "group_size"): [1, 2, 3],
    ("workload", "fusion_bytes"): [0, 1, 64 << 20, 10 ** 15],
    ("workload", "fusion_cycle_ms"): [0.001, 5.0, 1e6],
    ("workload", "placement"): ["spread", "packed"],
    ("transport", "kind"): ["tcp", "reliable", "dlcp", "auto"],
    ("transport", "loss_bound"): [0, 0.01, 0.5],
    ("transport", "droppable_fraction"): [0, 0.5, 1],
    ("compression", "mode"): ["none", "fixed", "dc2"],
    ("compression", "ratio"): [0.01, 0.1, 1],
    ("compression", "min_ratio"): [0.01, 1],
    ("compression", "target_delay_ms"): [0.001, 1, 1e3],
    ("compression", "increase"): [0.05, 1],
    ("compression", "decrease"): [0.5, 1],
    ("background", "load"): [0.01, 0.2, 0.95],
    ("background", "distribution"): ["websearch", "datamining"],
    ("background", "transport"): ["reliable", "tcp"],
    ("switch", "preset"): ["fifo", "pias", "layer-prio", "dlcp", "ndp", "pfabric"],
    ("switch", "scheduler"): ["fifo", "strict", "drr", {"name": "drr", "quantum": 1500},
                              {"name": "drr", "quantum": INF}, {"name": "drr", "weights": [1, NAN]}],
    ("switch", "classifier"): ["single", "pias", "dlcp", {"name": "pias", "thresholds": [10000]},
                               {"name": "pias", "thresholds": 5}, {"name": "layer", "layer_weight": NAN}],
    ("switch", "queue_manager"): ["droptail", "ecn", "dlcp", {"name": "ecn", "mark_fraction": NAN},
                                  {"name": "dlcp", "threshold": INF}, {"name": "trim", "trim_packets": 1.5}],
    ("switch", "load_balancer"): ["single", "ecmp", "spray", {"name": "spray", "mode": []}],
    ("topology", "leaves"): [1, 2, 10 ** 9], ("topology", "spines"): [1, 2],
    ("topology", "hosts_per_leaf"): [1, 2], ("topology", "host_rate_bps"): [1, 1e3, 1e9, 100e9, NAN],
    ("topology", "oversubscription"): [1, 2.0, 0, INF], ("topology", "k"): [2, 4, 3, 10 ** 6],
    ("topology", "hosts_per_side"): [1, 2], ("topology", "edge_rate_bps"): [1e9],
    ("topology", "bottleneck_rate_bps"): [1e8],
    ("zz_unknown",): [1], ("workload", "wrokers"): [2], ("topology", "colour"): ["red"],
    ("switch", "stage"): ["fifo"],
}
FIELDS = sorted(GOOD)


def base_spec():
    return {"name": "fuzz", "time_limit_s": 5,
            "topology": {"kind": "star", "hosts": 3, "host_rate_bps": 1e9},
            "workload": {"model": "resnet50", "workers": 2, "iterations": 1},
            "switch": {"preset": "fifo"}}


@st.composite
def specs(draw):
    """(spec dict, mutated field paths): a valid base with 0-4 fields set, each to one of
    the field's values (GOOD) or, half the time, a nasty one; now and then a whole table
    replaced. Choices come from a generator seeded by one draw, so every field is as likely."""
    rnd = random.Random(draw(st.integers(0, 2 ** 32)))
    spec = base_spec()
    if rnd.random() < 0.5:
        spec["background"] = {"load": 0.1}
    if rnd.random() < 0.2:
        spec["compression"] = {"mode": "fixed", "ratio": 0.1}
    mutated = []
    for _ in range(rnd.choice([0, 1, 1, 1, 2, 3, 4])):   # one field alone, often
        path = rnd.choice(FIELDS)
        value = nasty(rnd) if rnd.random() < 0.5 else rnd.choice(GOOD[path])
        node = spec
        for i, key in enumerate(path[:-1]):
            if not isinstance(node.get(key), dict):
                node[key] = {}                      # a new table: its required fields missing
                mutated.append(path[:i + 1])
            node = node[key]
        node[path[-1]] = value
        mutated.append(path)
    if rnd.random() < 0.05:
        table = rnd.choice(["topology", "workload", "switch", "transport"])
        spec[table] = nasty(rnd)
        mutated.append((table,))
    return spec, mutated


def toml_str(text):
    """A TOML basic string: quotes, backslashes and control characters escaped."""
    def esc(c):
        if c in '"\\':
            return "\\" + c
        return f"\\u{ord(c):04x}" if ord(c) < 0x20 or ord(c) == 0x7F else c
    return '"' + "".join(esc(c) for c in text) + '"'


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) else repr(v)
    if isinstance(v, str):
        return toml_str(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{toml_str(str(k))} = {toml_value(x)}" for k, x in v.items()) + "}"
    raise TypeError(type(v))


def to_toml(spec):
    lines = [f"{toml_str(k)} = {toml_value(v)}" for k, v in spec.items() if not isinstance(v, dict)]
    for k, v in spec.items():
        if isinstance(v, dict):
            lines.append(f"[{toml_str(k)}]")
            lines += [f"{toml_str(str(f))} = {toml_value(x)}" for f, x in v.items()]
    return ("\n".join(lines) + "\n").encode()


@st.composite
def corruptions(draw):
    """None (three cases in four), or how to damage the file: cut it short, insert bytes
    (often not UTF-8), or replace it with random bytes."""
    rnd = random.Random(draw(st.integers(0, 2 ** 32)))
    kind = rnd.choice([None] * 9 + ["truncate", "insert", "replace"])
    if kind == "truncate":
        return kind, rnd.random()
    if kind == "insert":
        return kind, rnd.random(), rnd.randbytes(rnd.randint(1, 4))
    if kind == "replace":
        return kind, rnd.randbytes(rnd.randint(0, 64))
    return None


def corrupt(data, how):
    """The file's bytes cut short, with bytes inserted (often not UTF-8), or replaced."""
    if how is None:
        return data
    if how[0] == "truncate":
        return data[:int(len(data) * how[1])]
    if how[0] == "insert":
        at = int(len(data) * how[1])
        return data[:at] + how[2] + data[at:]
    return how[1]


def leaf_names(paths):
    return {p[-1] for p in paths}


def check_spec_error(message, path, mutated, how):
    """The error names the file and, when the file is whole, a field that was changed."""
    assert message.startswith(f"{path}: "), message
    if how is None:
        named = leaf_names(mutated) | {"workload.trace"}
        # A topology's or stage's errors name the builder's or stage's own parameters (a
        # changed kind makes the others unknown to it).
        named |= {f"{p[0]}: " for p in mutated if p[0] in ("topology", "switch")}
        assert any(n in message for n in named), (message, mutated)


def numbers(value):
    """Every number in a parsed spec's tables, however deep."""
    if isinstance(value, dict):
        for v in value.values():
            yield from numbers(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from numbers(v)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield value


def check_valid_spec(spec):
    """A spec that parses holds no NaN or infinity anywhere, and can be set up: its scaled
    topology builds and its plan is made."""
    from dlcp_emu.study.compare import dry_run
    tables = [spec.time_dilation, spec.byte_scale, spec.time_limit_s, spec.topology,
              spec.workload, spec.transport, spec.switch, spec.background, spec.compression]
    assert all(math.isfinite(x) for x in numbers(tables)), spec
    if spec.transport_for(spec.switch) != "tcp":
        assert dry_run(spec, [spec.switch], backend="sim")


@fuzz(700)
@given(specs(), corruptions())
def test_generated_specs_parse_or_name_the_bad_field(case, how):
    spec, mutated = case
    path = WORK / "spec.toml"
    path.write_bytes(corrupt(to_toml(spec), how))
    try:
        parsed = load_spec(path)
    except SpecError as e:
        check_spec_error(str(e), path, mutated, how)
        assert all(isinstance(p, str) and p for p in e.problems)
        return
    check_valid_spec(parsed)


def run_cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            rc = main([str(a) for a in argv])
        except SystemExit as e:     # argparse's own errors
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


flag_text = st.one_of(st.sampled_from(["fifo,dlcp", ",,,", "", " ", "fifo,,x", "dlcp"]),
                      st.text(max_size=8))
vary_text = st.one_of(st.sampled_from(["compression.mode=none,dc2", "seed=1,2", "time_dilation=nan",
                                       "byte_scale=inf,1", "workload.workers=0", "x=", "=1",
                                       "topology.kind=[1]"]), st.text(max_size=10))


@fuzz(350)
@given(specs(), corruptions(), st.integers(0, 3), flag_text, vary_text)
def test_generated_specs_through_the_cli_exit_0_or_2_with_a_named_error(case, how, form, presets, vary):
    spec, mutated = case
    path = WORK / "cli-spec.toml"
    path.write_bytes(corrupt(to_toml(spec), how))
    results = WORK / "results"
    if form == 0:
        argv = ["simulate", path, "--dry-run", "--results", results]
    elif form == 1:
        argv = ["run", path, "--dry-run", "--results", results]
    else:
        argv = ["compare", path, "--backend", "sim", "--dry-run", "--results", results,
                "--presets", presets, "--vary", vary]
    rc, out, err = run_cli(argv)
    assert "Traceback" not in err
    assert not results.exists()
    if rc == 0:
        assert "would run" in out and not err
        return
    assert rc == 2, (rc, err)
    lines = err.splitlines()
    assert lines and lines[0].startswith("dlcp-emu"), err
    if lines[0].startswith(f"dlcp-emu: {path}: "):  # the spec's own error
        check_spec_error(err[len("dlcp-emu: "):], path, mutated, how)
    elif lines[0].startswith("dlcp-emu: --vary "):   # a --vary value, checked like the file
        assert form >= 2 and lines[0].startswith(f"dlcp-emu: --vary {vary.partition('=')[0].strip()}="), err
    elif lines[0].startswith("dlcp-emu: unknown preset"):
        assert form >= 2 and len(lines) == 1, err
    else:                                            # argparse: one line naming the flag
        assert len(lines) == 1 and " error: argument --" in err, err


# -- traces ------------------------------------------------------------------------------------
GOOD_CELLS = {
    "name": ["conv.weight", "fc", "x y"],
    "grad_bytes": [4, 400, 10 ** 6, MAX_GRAD_BYTES],
    "backward_us": [0.0, 10.0, 1e4],
    "forward_us": [0.0, 5.0],
}
GOOD_MAGNITUDES = [("lognormal", -7.0, 1.0), ("normal", 0.5, 0.1), ("uniform", 10.0, 1.0),
                   ("uniform", 0.0, 0.0)]
CELL_NASTY = [NAN, INF, -INF, -1, 0, 1.5, 1e18, 1e19, 2 ** 40 + 1, 2 ** 63 - 1, -(2 ** 63), "",
              "x", "1e18", " 7", True, None, 1e-300, -0.0, "\u00e9", "a,b", '"']


@st.composite
def traces(draw):
    """(layer table, metadata, chunk table or None, format). Cells come from a generator
    seeded by one draw: hundreds of cell draws a case would cost more than the reading."""
    rnd = random.Random(draw(st.integers(0, 2 ** 32)))
    nasty_share = rnd.choice([0.0] * 5 + [0.02, 0.1, 0.5])
    n = 0 if rnd.random() < 0.04 else rnd.randint(1, 5)
    rows = [{"layer_id": i, **{c: rnd.choice(v) for c, v in GOOD_CELLS.items()},
             **dict(zip(MAG_COLUMNS, rnd.choice(GOOD_MAGNITUDES)))} for i in range(n)]
    columns = {}
    for col in REQUIRED_COLUMNS + MAG_COLUMNS:
        if rnd.random() < 0.02:
            continue                                   # a missing column
        columns[col] = [rnd.choice(CELL_NASTY) if rnd.random() < nasty_share else row[col]
                        for row in rows]
    if rnd.random() < 0.02:
        columns["extra"] = [1] * n
    layers = pd.DataFrame(columns)
    meta = {}
    if rnd.random() < 0.5:
        meta["dlcp-trace"] = rnd.choice([1] * 12 + [2, "one", ""])
        meta["model"] = rnd.choice(["toy"] * 4 + ["", "a:b"])
        meta["batch_time_us"] = rnd.choice([1e9] * 8 + [1.0, 0, -1, "abc", NAN, INF, -INF])
    chunks = None
    if rnd.random() < 0.15:
        meta["magnitudes"] = rnd.choice(["t.mag.csv"] * 6 + ["../x.csv", "none.csv", "t.mag.txt", ""])
        if rnd.random() < 0.8:                         # the chunk table replaces mag_* columns
            layers = layers.drop(columns=[c for c in MAG_COLUMNS if c in layers])
        chunks = pd.DataFrame({"layer_id": list(range(n)), "chunk": [0] * n,
                               "nbytes": [rnd.choice([400, 400, 1e18, NAN, INF, -5]) for _ in range(n)],
                               "magnitude": [rnd.choice([1.0, 1.0, NAN, -1.0]) for _ in range(n)]})
        if rnd.random() < 0.3:
            chunks = chunks.drop(columns=[rnd.choice(CHUNK_COLUMNS)])
    fmt = rnd.choice(["csv", "csv", "parquet"])
    return layers, meta, chunks, fmt


def write_trace(directory, layers, meta, chunks, fmt, how):
    path = directory / f"t.{fmt}"
    for old in directory.glob("t.*"):
        old.unlink()
    if fmt == "csv":
        head = "".join(f"# {k}: {v}\n" for k, v in meta.items())
        data = head.encode() + layers.to_csv(index=False).encode()
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq
        table = pa.Table.from_pandas(layers.astype(str) if _mixed(layers) else layers,
                                     preserve_index=False)
        table = table.replace_schema_metadata({b"dlcp-trace": json.dumps(meta).encode()})
        buf = io.BytesIO()
        pq.write_table(table, buf)
        data = buf.getvalue()
    path.write_bytes(corrupt(data, how))
    if chunks is not None:
        chunks.to_csv(directory / "t.mag.csv", index=False)
    return path


def _mixed(df):
    """Columns Arrow cannot store as one type: written as text then (as a CSV would be)."""
    return any(len({type(v) for v in df[c]}) > 1 for c in df.columns)


def check_valid_trace(trace):
    layers = trace.layers
    assert layers["layer_id"].tolist() == list(range(len(layers)))
    sizes = layers["grad_bytes"].to_numpy()
    assert sizes.dtype == np.int64 and ((sizes > 0) & (sizes <= MAX_GRAD_BYTES)).all()
    for col in ("backward_us", "forward_us"):
        assert np.isfinite(layers[col]).all() and (layers[col] >= 0).all()
    assert math.isfinite(trace.batch_time_us) and trace.batch_time_us > 0


def check_trace_error(e, path):
    """The error, and each of its problems, names the trace (a sidecar's, both files)."""
    assert str(path) in str(e), str(e)
    assert e.problems and all(str(path) in p for p in e.problems), e.problems


@fuzz(750)
@given(traces(), corruptions())
def test_generated_traces_load_or_name_the_file(case, how):
    path = write_trace(WORK, *case, how)
    try:
        trace = load_trace(path)
    except TraceError as e:
        check_trace_error(e, path)
        return
    check_valid_trace(trace)


@fuzz(300)
@given(traces(), corruptions())
def test_generated_traces_through_the_cli_exit_0_or_2_naming_the_trace(case, how):
    directory = WORK / "cli-trace"
    directory.mkdir(exist_ok=True)
    path = write_trace(directory, *case, how)
    spec = directory / "spec.toml"
    spec.write_bytes(to_toml({**base_spec(), "workload": {"trace": path.name, "workers": 2}}))
    try:
        load_trace(path)
        bad = None
    except TraceError as e:
        bad = e
    rc, out, err = run_cli(["simulate", spec, "--dry-run", "--results", directory / "results"])
    assert "Traceback" not in err
    if bad is not None:
        assert rc == 2 and f"workload.trace: {path}" in err or "t.mag." in err, err
        assert err.startswith(f"dlcp-emu: {spec}: "), err
    elif rc == 2:   # a valid trace too large for this machine's memory at byte_scale 1
        assert f"dlcp-emu: {spec}: byte_scale: 1 x the model's" in err, err
    else:
        assert rc == 0 and "would run" in out, (rc, out, err)
