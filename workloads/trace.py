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
``magnitude`` (float >= 0, representative |gradient| of those bytes). Distributions (drawn by
workloads/magnitudes.py, in float32):

- ``lognormal``: ln|g| ~ N(mag_mu, mag_sigma);
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
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from workloads import magnitudes, synthetic
from workloads.trace_checks import (
    FORMAT_VERSION, _MAX_PROBLEMS, TraceError, _check_batch_time, _check_chunks, _check_layers,
    _normalise_chunks, _normalise_layers, _reason,
)

_PARQUET_KEY = b"dlcp-trace"
FORWARD_PER_BACKWARD = 0.5   # a trace without forward_us: synthetic.py's forward:backward = 1:2


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
        return magnitudes.draw(row["mag_dist"], row["mag_mu"], row["mag_sigma"], n, rng).astype(float)

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
    layers, filled = fill_defaults(layers, magnitudes is not None)
    if filled:
        head["synthetic"] = "; ".join(filter(None, [str(head.get("synthetic", "")), *filled]))
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


def fill_defaults(layers: pd.DataFrame, has_chunks: bool) -> tuple[pd.DataFrame, list[str]]:
    """A trace may be as small as `grad_bytes` and `backward_us`, rows in forward order: the
    columns it leaves out entirely are filled, and said (for the `synthetic` key). layer_id:
    the row order; name: `layer<i>`; forward_us: half the backward time (synthetic.py's
    forward:backward = 1:2); magnitudes (all three mag_* columns absent and no chunk table):
    synthetic.py's lognormal by tensor size. A column given in part is never completed: its
    gaps stay errors of validate()."""
    if "grad_bytes" not in layers or "backward_us" not in layers:
        return layers, []
    layers, filled = layers.copy(), []
    if "layer_id" not in layers:
        layers.insert(0, "layer_id", np.arange(len(layers)))
        filled.append("layer_id (row order)")
    if "name" not in layers:
        layers.insert(1, "name", [f"layer{i}" for i in layers["layer_id"]])
        filled.append("name")
    if "forward_us" not in layers:
        layers["forward_us"] = pd.to_numeric(layers["backward_us"], errors="coerce") * FORWARD_PER_BACKWARD
        filled.append(f"forward_us ({FORWARD_PER_BACKWARD:g} x backward_us)")
    if not has_chunks and not {"mag_dist", "mag_mu", "mag_sigma"} & set(layers):
        sizes = pd.to_numeric(layers["grad_bytes"], errors="coerce").to_numpy(float)
        for k, v in synthetic.lognormal_magnitudes(np.where(sizes > 0, sizes, 1.0)).items():
            layers[k] = v
        filled.append("magnitudes (lognormal by tensor size, workloads/synthetic.py)")
    return layers, filled


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
