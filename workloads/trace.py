"""Per-layer training traces: the workload a host agent replays.

A trace describes one training iteration of one model on one worker, one row per gradient
tensor ("layer"). It is a table readable by pandas from CSV or Parquet:

=============  =======  ====================================================================
column         type     meaning
=============  =======  ====================================================================
layer_id       int      0 = first layer of the model in forward order; ids are exactly
                        0..L-1. Backward produces gradients in *descending* layer_id.
name           str      human-readable tensor name (e.g. ``layer4.2.conv3.weight``).
grad_bytes     int > 0  size of this layer's gradient in bytes, at most MAX_GRAD_BYTES (1 TiB:
                        the largest layer of a real model is a few GB; a bound checked before
                        anything is allocated).
backward_us    float>=0 backward compute time (microseconds) spent before this gradient is
                        ready, counted from the previous gradient in backward order (for the
                        last layer: from the start of backward).
forward_us     float>=0 forward compute time of this layer (microseconds).
mag_dist       str      magnitude model of |gradient| values of this layer: "lognormal",
                        "normal" or "uniform" (see below).
mag_mu         float    first parameter of the magnitude model.
mag_sigma      float>=0 second parameter of the magnitude model.
=============  =======  ====================================================================

Magnitude model: either the three ``mag_*`` columns, or (instead of them) a separate
per-chunk magnitude table with columns ``layer_id`` (int), ``chunk`` (int, 0..k-1 per layer,
in byte order), ``nbytes`` (int > 0; a layer's chunks sum to its ``grad_bytes``) and
``magnitude`` (float >= 0, representative |gradient| of those bytes). Distributions:

- ``lognormal``: ln|g| ~ N(mag_mu, mag_sigma) (numpy's ``lognormal(mean, sigma)``);
- ``normal``: |g| = |X| with X ~ N(mag_mu, mag_sigma) (folded normal);
- ``uniform``: |g| ~ U(mag_mu - sqrt(3) mag_sigma, mag_mu + sqrt(3) mag_sigma), i.e. mean
  mag_mu and standard deviation mag_sigma; the lower end must be >= 0.

Trace-level metadata: ``model`` (str), ``batch_time_us`` (float > 0, one iteration's compute
time on one worker; at least sum(forward_us) + sum(backward_us)) and free-form provenance
strings (``source``, ``synthetic``: which columns are not measured). In CSV they are leading
``# key: value`` lines (so ``pd.read_csv(path, comment="#")`` reads the table); in Parquet
they are JSON under the schema metadata key ``dlcp-trace``. A chunk table lives beside the
trace as ``<stem>.mag.csv`` / ``<stem>.mag.parquet``, named by the ``magnitudes`` key. A CSV
without metadata loads with model = file stem and batch time = forward + backward total.

Any other column is an error, as are NaNs, infinities, wrong types and out-of-range values;
``Trace.validate`` names the column, the row (0-based, as stored) and what is allowed.
``load_trace`` raises only ``TraceError``, naming the file, for a file it cannot read as a
trace (missing, not UTF-8, not CSV or Parquet, bad metadata).
See also ``workloads/TRACE_FORMAT.md``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

FORMAT_VERSION = 1
REQUIRED_COLUMNS = ("layer_id", "name", "grad_bytes", "backward_us", "forward_us")
MAG_COLUMNS = ("mag_dist", "mag_mu", "mag_sigma")
MAG_DISTS = ("lognormal", "normal", "uniform")
CHUNK_COLUMNS = ("layer_id", "chunk", "nbytes", "magnitude")
_PARQUET_KEY = b"dlcp-trace"
_MAX_PROBLEMS = 20  # enough to fix a file; more would bury the first one
MAX_GRAD_BYTES = 1 << 40  # 1 TiB a layer: far above any real layer, far below int64 limits
_SIZE_RULE = f"an integer > 0 and at most {MAX_GRAD_BYTES} (1 TiB)"


class TraceError(ValueError):
    """A trace breaks the format; the message lists every problem found (up to 20), and
    ``problems`` holds them one an item."""

    def __init__(self, message: str, problems: list[str] | None = None):
        super().__init__(message)
        self.problems = list(problems) if problems else [message]


@dataclass
class Trace:
    """One model's per-layer trace. Call ``validate()`` after building one by hand."""

    model: str
    layers: pd.DataFrame
    batch_time_us: float
    magnitudes: pd.DataFrame | None = None  # per-chunk table, instead of mag_* columns
    meta: dict[str, str] = field(default_factory=dict)  # provenance: source, synthetic, ...

    # ---- checking -------------------------------------------------------------------------
    def validate(self) -> "Trace":
        """Raise TraceError naming every bad column/row; on success normalise dtypes, sort
        the layers by layer_id, and return self."""
        problems: list[str] = []
        layers = self.layers
        if not isinstance(layers, pd.DataFrame):
            raise TraceError(f"trace {self.model!r}: layers must be a pandas DataFrame")
        _check_layers(layers, self.magnitudes is not None, problems)
        if not problems and self.magnitudes is not None:
            _check_chunks(self.magnitudes, layers, problems)
        if not problems:
            _check_batch_time(self, problems)
        if not isinstance(self.model, str) or not self.model:
            problems.append(f"model name must be a non-empty string, got {self.model!r}")
        if problems:
            shown = problems[:_MAX_PROBLEMS]
            more = len(problems) - len(shown)
            if more:
                shown.append(f"... and {more} more")
            text = "\n  ".join(shown)
            raise TraceError(f"trace {self.model!r} is invalid:\n  {text}", shown)
        self.layers = _normalise_layers(layers)
        if self.magnitudes is not None:
            self.magnitudes = _normalise_chunks(self.magnitudes)
        self.batch_time_us = float(self.batch_time_us)
        return self

    # ---- derived figures ------------------------------------------------------------------
    @property
    def num_layers(self) -> int:
        return len(self.layers)

    @property
    def total_bytes(self) -> int:
        return int(self.layers["grad_bytes"].sum())

    @property
    def backward_total_us(self) -> float:
        return float(self.layers["backward_us"].sum())

    @property
    def forward_total_us(self) -> float:
        return float(self.layers["forward_us"].sum())

    def backward_schedule(self) -> pd.DataFrame:
        """Gradients in the order backward produces them (descending layer_id), with
        ``ready_us``: when each is ready, counted from the start of backward."""
        order = self.layers.sort_values("layer_id", ascending=False)
        out = order[["layer_id", "name", "grad_bytes"]].reset_index(drop=True)
        out["ready_us"] = order["backward_us"].cumsum().to_numpy()
        return out

    # ---- magnitudes -----------------------------------------------------------------------
    def sample_magnitudes(self, layer_id: int, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` draws of |gradient| for one layer (from a chunk table: byte-weighted draws
        of its chunks' magnitudes)."""
        if self.magnitudes is not None:
            rows = self._chunks_of(layer_id)
            p = rows["nbytes"].to_numpy(float)
            return rng.choice(rows["magnitude"].to_numpy(float), size=n, p=p / p.sum())
        row = self._layer(layer_id)
        return _draw(row["mag_dist"], float(row["mag_mu"]), float(row["mag_sigma"]), n, rng)

    def chunk_magnitudes(
        self, layer_id: int, chunk_bytes: int, rng: np.random.Generator
    ) -> np.ndarray:
        """One representative |gradient| per ``chunk_bytes`` piece of a layer (the last may be
        shorter): one draw of the layer's distribution per piece, or, from a chunk table, the
        magnitude of the table chunk holding the piece's first byte."""
        if chunk_bytes <= 0:
            raise ValueError(f"chunk_bytes must be > 0, got {chunk_bytes}")
        size = int(self._layer(layer_id)["grad_bytes"])
        starts = np.arange(0, size, chunk_bytes)
        if self.magnitudes is None:
            return self.sample_magnitudes(layer_id, len(starts), rng)
        rows = self._chunks_of(layer_id)
        ends = np.cumsum(rows["nbytes"].to_numpy())
        return rows["magnitude"].to_numpy(float)[np.searchsorted(ends, starts, side="right")]

    def _layer(self, layer_id: int) -> pd.Series:
        hit = self.layers[self.layers["layer_id"] == layer_id]
        if hit.empty:
            raise KeyError(f"trace {self.model!r} has no layer_id {layer_id}")
        return hit.iloc[0]

    def _chunks_of(self, layer_id: int) -> pd.DataFrame:
        rows = self.magnitudes[self.magnitudes["layer_id"] == layer_id].sort_values("chunk")
        if rows.empty:
            raise KeyError(f"trace {self.model!r} has no magnitude chunks for layer {layer_id}")
        return rows

    # ---- files ----------------------------------------------------------------------------
    def _header(self, mag_file: str | None) -> dict:
        head = {"dlcp-trace": FORMAT_VERSION, "model": self.model,
                "batch_time_us": self.batch_time_us}
        if mag_file:
            head["magnitudes"] = mag_file
        for key, value in self.meta.items():
            if key in head or "\n" in str(value):
                raise TraceError(f"meta key {key!r} is reserved or its value has a newline")
            head[key] = str(value)
        return head

    def to_csv(self, path: str | Path) -> Path:
        """Write ``# key: value`` metadata lines then the layer table (and a chunk-table
        sidecar ``<stem>.mag.csv`` if there is one)."""
        path = Path(path)
        mag_file = None
        if self.magnitudes is not None:
            mag_file = path.with_name(path.stem + ".mag.csv").name
            self.magnitudes.to_csv(path.with_name(mag_file), index=False)
        with open(path, "w", newline="") as f:
            for key, value in self._header(mag_file).items():
                f.write(f"# {key}: {value}\n")
            self.layers.to_csv(f, index=False)
        return path

    def to_parquet(self, path: str | Path) -> Path:
        """Write the layer table with metadata as JSON in the Parquet schema metadata."""
        path = Path(path)
        mag_file = None
        if self.magnitudes is not None:
            mag_file = path.with_name(path.stem + ".mag.parquet").name
            self.magnitudes.to_parquet(path.with_name(mag_file), index=False)
        table = pa.Table.from_pandas(self.layers, preserve_index=False)
        meta = dict(table.schema.metadata or {})
        meta[_PARQUET_KEY] = json.dumps(self._header(mag_file)).encode()
        pq.write_table(table.replace_schema_metadata(meta), path)
        return path


def load_trace(path: str | Path) -> Trace:
    """Read a trace from ``.csv`` or ``.parquet`` (see module doc) and validate it. Every
    problem, with the file or with its contents, is a TraceError naming the file."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise TraceError(f"{path}: unknown trace file type {suffix!r}; use .csv or .parquet")
    head, layers = _read(path, suffix)
    try:
        version = int(head.pop("dlcp-trace", FORMAT_VERSION))
    except (TypeError, ValueError):
        raise TraceError(f"{path}: metadata dlcp-trace must be the format version "
                         f"{FORMAT_VERSION}") from None
    if version != FORMAT_VERSION:
        raise TraceError(f"{path}: trace format version {version}, this code reads "
                         f"{FORMAT_VERSION}")
    model = str(head.pop("model", path.stem))
    batch = head.pop("batch_time_us", None)
    mag_file = head.pop("magnitudes", None)
    magnitudes = None
    if mag_file:
        magnitudes = _read_magnitudes(path, str(mag_file))
    if batch is None:  # hand-written CSV: the iteration is just its compute
        numeric = pd.to_numeric
        with np.errstate(invalid="ignore", over="ignore"):   # bad cells are reported below
            batch = float(numeric(layers.get("forward_us", pd.Series(dtype=float)),
                                  errors="coerce").sum()
                          + numeric(layers.get("backward_us", pd.Series(dtype=float)),
                                    errors="coerce").sum())
    try:
        batch = float(batch)
    except (TypeError, ValueError):
        raise TraceError(f"{path}: batch_time_us {batch!r} is not a number") from None
    trace = Trace(model, layers, batch, magnitudes, {k: str(v) for k, v in head.items()})
    try:
        return trace.validate()
    except TraceError as e:
        problems = [f"{path}: {p}" for p in e.problems]
        raise TraceError(problems[0] if len(problems) == 1 else f"{path}: {e}", problems) from None


# Errors of the readers on a file that is not what its name says; anything else is a bug.
_READ_ERRORS = (OSError, UnicodeDecodeError, ValueError, pa.ArrowException)


def _read(path: Path, suffix: str) -> tuple[dict, pd.DataFrame]:
    """(metadata, layer table) of a trace file, or TraceError naming the file."""
    kind = "CSV" if suffix == ".csv" else "Parquet"
    try:
        if suffix == ".csv":
            head, skip = _read_csv_header(path)
            layers = pd.read_csv(path, skiprows=skip, encoding="utf-8")
        else:
            raw = pq.read_schema(path).metadata or {}
            head = json.loads(raw[_PARQUET_KEY]) if _PARQUET_KEY in raw else {}
            layers = pd.read_parquet(path)
    except _READ_ERRORS as e:
        raise TraceError(f"{path}: cannot read it as a {kind} trace: {_reason(e)}") from None
    if not isinstance(head, dict):
        raise TraceError(f"{path}: the {_PARQUET_KEY.decode()} metadata must be a JSON object")
    return head, layers


def _read_magnitudes(path: Path, name: str) -> pd.DataFrame:
    """The chunk table named by the ``magnitudes`` key: a file beside the trace."""
    if Path(name).name != name or name in ("", ".", ".."):
        raise TraceError(f"{path}: metadata magnitudes {name!r} must be a file name beside "
                         "the trace")
    mag_path = path.with_name(name)
    suffix = mag_path.suffix.lower()
    if suffix not in (".csv", ".parquet", ".pq"):
        raise TraceError(f"{path}: magnitude table {name!r}: unknown file type {suffix!r}; "
                         "use .csv or .parquet")
    try:
        if suffix == ".csv":
            return pd.read_csv(mag_path, encoding="utf-8")
        return pd.read_parquet(mag_path)
    except _READ_ERRORS as e:
        raise TraceError(f"{path}: cannot read its magnitude table {mag_path}: "
                         f"{_reason(e)}") from None


def _reason(e: Exception) -> str:
    """An exception's own words on one line, without the file name some of them repeat."""
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    if isinstance(e, UnicodeDecodeError):
        return f"not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start})"
    text = " ".join(str(e).split()) or type(e).__name__
    return text[:300]


# ---- validation helpers ---------------------------------------------------------------------
def _missing(value) -> bool:
    """A cell pandas reads as missing; False for lists and other non-scalar cells."""
    return pd.api.types.is_scalar(value) and bool(pd.isna(value))


def _show(value) -> str:
    """A cell as the user wrote it: -5, not np.int64(-5)."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def _row_label(layers: pd.DataFrame, pos: int) -> str:
    lid = layers["layer_id"].iloc[pos] if "layer_id" in layers else None
    try:
        return f"row {pos} (layer_id {int(lid)})"
    except (TypeError, ValueError, OverflowError):
        return f"row {pos}"


def _numeric(df: pd.DataFrame, col: str, rule: str, label, problems: list[str]) -> np.ndarray:
    """Column as float64, reporting NaN and non-numbers; bad cells become NaN."""
    values = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    raw_missing = df[col].isna().to_numpy()
    for pos in np.flatnonzero(np.isnan(values)):
        what = ("missing value (NaN)" if raw_missing[pos]
                else f"{_show(df[col].iloc[pos])} is not a number")
        problems.append(f"column {col!r} {label(pos)}: {what}; {col} must be {rule}")
    return values


def _check_range(values, ok, col, rule, df, label, problems):
    for pos in np.flatnonzero(~ok & ~np.isnan(values)):
        problems.append(f"column {col!r} {label(pos)}: {_show(df[col].iloc[pos])} is not "
                        f"allowed; {col} must be {rule}")


def _check_layers(layers: pd.DataFrame, has_chunks: bool, problems: list[str]) -> None:
    cols = list(layers.columns)
    allowed = REQUIRED_COLUMNS + MAG_COLUMNS
    for col in cols:
        if col not in allowed:
            problems.append(f"unknown column {col!r}; allowed columns are {', '.join(allowed)}"
                            " (per-chunk magnitudes go in a separate table)")
    for col in REQUIRED_COLUMNS:
        if col not in cols:
            problems.append(f"missing column {col!r}; required columns are "
                            f"{', '.join(REQUIRED_COLUMNS)}")
    mags = [c for c in MAG_COLUMNS if c in cols]
    if has_chunks and mags:
        problems.append(f"columns {mags} and a per-chunk magnitude table both given; "
                        "use one magnitude model")
    elif not has_chunks and len(mags) != len(MAG_COLUMNS):
        absent = [c for c in MAG_COLUMNS if c not in cols]
        problems.append(f"missing magnitude column(s) {absent}; give all of "
                        f"{', '.join(MAG_COLUMNS)} or a per-chunk magnitude table")
    if problems:
        return
    if layers.empty:
        problems.append("the trace has no rows; it needs at least one layer")
        return
    label = lambda pos: _row_label(layers, pos)  # noqa: E731

    ids = _numeric(layers, "layer_id", "an integer >= 0", lambda p: f"row {p}", problems)
    _check_range(ids, np.isfinite(ids) & (ids == np.round(ids)), "layer_id", "an integer",
                 layers, lambda p: f"row {p}", problems)
    seen: dict[float, int] = {}
    for pos, lid in enumerate(ids):
        if not np.isfinite(lid):
            continue
        if lid in seen:
            problems.append(f"column 'layer_id' row {pos}: duplicate layer id {int(lid)} "
                            f"(first at row {seen[lid]}); layer ids must be unique")
        else:
            seen[lid] = pos
    if not problems:
        expected = set(range(len(layers)))
        stray = sorted(int(v) for v in seen if v not in expected)
        missing = sorted(expected - {int(v) for v in seen})
        if stray or missing:
            problems.append(f"column 'layer_id': ids must be exactly 0..{len(layers) - 1} "
                            f"(0 = first layer in forward order); missing {missing[:10]}, "
                            f"unexpected {stray[:10]}")

    for pos, name in enumerate(layers["name"]):
        if not isinstance(name, str) or not name.strip():
            what = "missing value (NaN)" if _missing(name) else f"{_show(name)} is not allowed"
            problems.append(f"column 'name' {label(pos)}: {what}; name must be a non-empty "
                            "string")

    size = _numeric(layers, "grad_bytes", _SIZE_RULE, label, problems)
    _check_range(size, (size > 0) & (size <= MAX_GRAD_BYTES) & (size == np.round(size)),
                 "grad_bytes", _SIZE_RULE, layers, label, problems)
    for col in ("backward_us", "forward_us"):
        t = _numeric(layers, col, "a finite number >= 0 (microseconds)", label, problems)
        _check_range(t, np.isfinite(t) & (t >= 0), col, "a finite number >= 0 (microseconds)",
                     layers, label, problems)

    if has_chunks:
        return
    for pos, dist in enumerate(layers["mag_dist"]):
        if not (isinstance(dist, str) and dist in MAG_DISTS):
            what = "missing value (NaN)" if _missing(dist) else f"{_show(dist)} is not allowed"
            problems.append(f"column 'mag_dist' {label(pos)}: {what}; mag_dist must be one of "
                            f"{', '.join(MAG_DISTS)}")
    mu = _numeric(layers, "mag_mu", "a finite number", label, problems)
    _check_range(mu, np.isfinite(mu), "mag_mu", "a finite number", layers, label, problems)
    sigma = _numeric(layers, "mag_sigma", "a finite number >= 0", label, problems)
    _check_range(sigma, np.isfinite(sigma) & (sigma >= 0), "mag_sigma", "a finite number >= 0",
                 layers, label, problems)
    low = mu - math.sqrt(3) * sigma
    uniform = np.array([isinstance(d, str) and d == "uniform" for d in layers["mag_dist"]],
                       dtype=bool)
    for pos in np.flatnonzero(uniform & (low < 0)):
        problems.append(f"columns 'mag_mu'/'mag_sigma' {label(pos)}: uniform magnitudes would "
                        f"go below 0 (mu - sqrt(3) sigma = {low[pos]:.3g}); need "
                        "mag_mu >= sqrt(3) * mag_sigma")


def _check_chunks(chunks: pd.DataFrame, layers: pd.DataFrame, problems: list[str]) -> None:
    if not isinstance(chunks, pd.DataFrame):
        problems.append("magnitudes must be a pandas DataFrame")
        return
    for col in chunks.columns:
        if col not in CHUNK_COLUMNS:
            problems.append(f"magnitude table: unknown column {col!r}; allowed columns are "
                            f"{', '.join(CHUNK_COLUMNS)}")
    for col in CHUNK_COLUMNS:
        if col not in chunks.columns:
            problems.append(f"magnitude table: missing column {col!r}")
    if problems:
        return
    label = lambda pos: f"row {pos}"  # noqa: E731
    before = len(problems)
    lid = _numeric(chunks, "layer_id", "an existing layer id", label, problems)
    _check_range(lid, np.isfinite(lid) & (lid == np.round(lid)), "layer_id",
                 "an existing layer id", chunks, label, problems)
    idx = _numeric(chunks, "chunk", "an integer >= 0", label, problems)
    _check_range(idx, np.isfinite(idx) & (idx == np.round(idx)) & (idx >= 0), "chunk",
                 "an integer >= 0", chunks, label, problems)
    nbytes = _numeric(chunks, "nbytes", _SIZE_RULE, label, problems)
    _check_range(nbytes, (nbytes > 0) & (nbytes <= MAX_GRAD_BYTES) & (nbytes == np.round(nbytes)),
                 "nbytes", _SIZE_RULE, chunks, label, problems)
    mag = _numeric(chunks, "magnitude", "a finite number >= 0", label, problems)
    _check_range(mag, np.isfinite(mag) & (mag >= 0), "magnitude", "a finite number >= 0",
                 chunks, label, problems)
    if len(problems) > before:
        problems[before:] = ["magnitude table: " + p for p in problems[before:]]
        return
    sizes = dict(zip(pd.to_numeric(layers["layer_id"]).astype(int),
                     pd.to_numeric(layers["grad_bytes"]).astype(int)))
    table = pd.DataFrame({"layer_id": lid, "chunk": idx, "nbytes": nbytes})
    for layer, rows in table.groupby("layer_id"):
        if int(layer) not in sizes:
            problems.append(f"magnitude table: layer_id {int(layer)} is not a layer of the trace")
            continue
        if sorted(rows["chunk"]) != list(range(len(rows))):
            problems.append(f"magnitude table: layer {int(layer)} chunks must be numbered "
                            f"0..{len(rows) - 1} once each")
        if int(rows["nbytes"].sum()) != sizes[int(layer)]:
            problems.append(f"magnitude table: layer {int(layer)} chunks hold "
                            f"{int(rows['nbytes'].sum())} bytes, its grad_bytes is "
                            f"{sizes[int(layer)]}")
    uncovered = sorted(set(sizes) - set(int(v) for v in lid))
    if uncovered:
        problems.append(f"magnitude table: layers without chunks: {uncovered[:10]}")


def _check_batch_time(trace: Trace, problems: list[str]) -> None:
    try:
        batch = float(trace.batch_time_us)
    except (TypeError, ValueError):
        problems.append(f"batch_time_us {trace.batch_time_us!r} is not a number")
        return
    compute = float(pd.to_numeric(trace.layers["forward_us"]).sum()
                    + pd.to_numeric(trace.layers["backward_us"]).sum())
    if not (math.isfinite(batch) and batch > 0):
        problems.append(f"batch_time_us must be a finite number > 0, got {batch}")
    elif batch < compute * (1 - 1e-9):
        problems.append(f"batch_time_us {batch:.6g} is less than forward + backward compute "
                        f"{compute:.6g}; the batch must contain its compute")


def _normalise_layers(layers: pd.DataFrame) -> pd.DataFrame:
    cols = [c for c in REQUIRED_COLUMNS + MAG_COLUMNS if c in layers.columns]
    out = layers[cols].copy()
    for col, kind in (("layer_id", "int64"), ("grad_bytes", "int64"), ("backward_us", "float64"),
                      ("forward_us", "float64"), ("mag_mu", "float64"),
                      ("mag_sigma", "float64")):
        if col in out:
            out[col] = pd.to_numeric(out[col]).astype(kind)
    for col in ("name", "mag_dist"):
        if col in out:
            out[col] = out[col].astype(str)
    return out.sort_values("layer_id").reset_index(drop=True)


def _normalise_chunks(chunks: pd.DataFrame) -> pd.DataFrame:
    out = chunks[list(CHUNK_COLUMNS)].copy()
    for col in ("layer_id", "chunk", "nbytes"):
        out[col] = pd.to_numeric(out[col]).astype("int64")
    out["magnitude"] = pd.to_numeric(out["magnitude"]).astype("float64")
    return out.sort_values(["layer_id", "chunk"]).reset_index(drop=True)


def _draw(dist: str, mu: float, sigma: float, n: int, rng: np.random.Generator) -> np.ndarray:
    if dist == "lognormal":
        return rng.lognormal(mu, sigma, n)
    if dist == "normal":
        return np.abs(rng.normal(mu, sigma, n))
    half = math.sqrt(3) * sigma
    return rng.uniform(mu - half, mu + half, n)


def _read_csv_header(path: Path) -> tuple[dict, int]:
    """Leading ``# key: value`` lines -> (metadata, number of lines to skip)."""
    head: dict[str, str] = {}
    skip = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("#"):
                break
            skip += 1
            key, sep, value = line[1:].partition(":")
            if sep:
                head[key.strip()] = value.strip()
    return head, skip
