"""The checks of a trace: every problem found, each naming the file, the column and the layer
(row), so one reading of the errors is enough to fix a file; and the normal form a checked
table is kept in."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from workloads.magnitudes import DISTS as MAG_DISTS

FORMAT_VERSION = 1
REQUIRED_COLUMNS = ("layer_id", "name", "grad_bytes", "backward_us", "forward_us")
MAG_COLUMNS = ("mag_dist", "mag_mu", "mag_sigma")
CHUNK_COLUMNS = ("layer_id", "chunk", "nbytes", "magnitude")
_MAX_PROBLEMS = 20  # enough to fix a file; more would bury the first one
MAX_GRAD_BYTES = 1 << 40  # 1 TiB a layer: far above any real layer, far below int64 limits
_SIZE_RULE = f"an integer > 0 and at most {MAX_GRAD_BYTES} (1 TiB)"


class TraceError(ValueError):
    """A trace breaks the format; the message lists every problem found (up to 20), and
    ``problems`` holds them one an item."""

    def __init__(self, message: str, problems: list[str] | None = None):
        super().__init__(message)
        self.problems = list(problems) if problems else [message]


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


def _check_batch_time(trace, problems: list[str]) -> None:
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
