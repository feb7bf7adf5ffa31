"""Run results: one folder per run with Parquet tables and a summary.

    results/<run-id>/
        spec.toml            the spec as given
        iterations.parquet   per worker and iteration: start, compute, communication, total
        tensors.parquet      per worker, iteration and bucket: ready, done, completion time, bytes lost
        packets.parquet      per packet (when recorded): send/receive time, size, priority, fate
        ports.parquet        per switch port: counters, drops by reason, lateness
        summary.json         per preset: the figures below
    results/latest -> <run-id>

Every time in the tables and the summary is in real-world seconds: emulated and simulated
times are divided by the time-dilation factor before they are written.
"""
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dlcp_emu.jsonio import write_json_atomic

SUMMARY_KEYS = ("iteration_time_mean_s", "iteration_time_p99_s", "tensor_fct_p50_s",
                "tensor_fct_p99_s", "tensor_fct_p999_s", "loss_fraction", "link_utilization",
                "scaling_factor", "compression", "fidelity")


def new_run_dir(root="results", name="run"):
    root = Path(root)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    try:
        root.mkdir(parents=True, exist_ok=True)
        for i in range(1000):
            run = root / f"{stamp}-{name}" if i == 0 else root / f"{stamp}-{name}-{i}"
            try:
                run.mkdir()
                return run
            except FileExistsError:
                continue
    except OSError as e:   # a file in the way, no permission, a read-only disk: say where
        raise RuntimeError(f"cannot create a run folder under {root}: "
                           f"{e.strerror or e}") from None
    raise RuntimeError(f"cannot create a run folder under {root}")


def point_latest(run_dir):
    """results/latest -> this run (replaced atomically)."""
    run_dir = Path(run_dir)
    tmp = run_dir.parent / f".latest-{os.getpid()}"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(run_dir.name)
    tmp.replace(run_dir.parent / "latest")


def write_table(run_dir, name, rows):
    """rows: a DataFrame or a list of dicts; written even when empty so readers find it."""
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
    frame.to_parquet(Path(run_dir) / f"{name}.parquet", index=False)
    return frame


def percentile(values, q):
    values = np.asarray(values, dtype=float)
    return float(np.percentile(values, q)) if values.size else None


def measured_iterations(iterations):
    """The iterations the statistics count: finished ones, without iteration 0, which waits
    for no update (nothing was synchronised before it: warm-up), unless it is all there is.
    The plots count the same (study/report.py)."""
    it = iterations[iterations["total_s"].notna()] if len(iterations) else iterations
    if len(it) and it["iteration"].nunique() > 1:
        it = it[it["iteration"] > 0]
    return it


def summarize(iterations, tensors, deliveries, ports, *, compute_s, workers, loss_bound,
              fidelity, duration_s):
    """The per-preset figures of summary.json from the tables of one run (seconds, real-world).

    scaling_factor = T_n / (n T) in throughput terms, which for data parallelism with a fixed
    per-worker batch is T_1 / T_n: one worker's pure compute time over the measured mean
    iteration time (1.0 means the network costs nothing). loss_fraction: gradient bytes the
    transports zero-filled over all bytes they delivered. link_utilization: the busiest
    port of the network's switches (a server's fabric, role `server`, is not the network)."""
    it = measured_iterations(iterations)
    fct = tensors["fct_s"].dropna() if len(tensors) else pd.Series(dtype=float)
    mean_it = float(it["total_s"].mean()) if len(it) else None
    total = float(deliveries["nbytes"].sum()) if len(deliveries) else 0.0
    loss = float(deliveries["lost_bytes"].sum()) / total if total else 0.0
    util = None
    if len(ports) and "utilization" in ports:
        busy = ports[ports["utilization"].notna()]
        if "role" in busy:
            busy = busy[busy["role"] != "server"]
        util = float(busy["utilization"].max()) if len(busy) else None
    return {
        "iteration_time_mean_s": mean_it,
        "iteration_time_p99_s": percentile(it["total_s"], 99) if len(it) else None,
        "tensor_fct_p50_s": percentile(fct, 50),
        "tensor_fct_p99_s": percentile(fct, 99),
        "tensor_fct_p999_s": percentile(fct, 99.9),
        "loss_fraction": loss,
        "loss_bound": loss_bound,
        "loss_within_bound": loss <= loss_bound + 1e-12,
        "link_utilization": util,
        "scaling_factor": (compute_s / mean_it) if mean_it else None,
        "workers": workers,
        "iterations_measured": int(len(it)),
        "tensors_measured": int(len(fct)),
        "duration_s": duration_s,
        "fidelity": fidelity,
    }


def transport_label(summary):
    """A run's transport as tables name it: the transport, and a packet transport's congestion
    control (reliable/newreno, reliable/dctcp, dlcp/newreno); kernel TCP is just tcp."""
    settings = summary.get("transport_settings") or {}
    return summary.get("transport", "") + (f"/{settings['congestion']}" if settings else "")


def compression_summary(settings, tensors):
    """What compression did over a run: the kept ratio the buckets went with (mean, least),
    the bytes sent against the bytes uncompressed, the share of the gradients' sum of squares
    the messages carried (weighted by uncompressed bytes), and the buckets' synchronisation
    delay beyond serialisation, which DC2 steers by (measured with compression off too)."""
    out = {"mode": settings.get("mode", "none")}
    done = tensors[tensors["fct_s"].notna()] if len(tensors) and "ratio" in tensors else None
    if done is None or not len(done):
        return out
    dense, w = float(done["dense_bytes"].sum()), done["dense_bytes"]
    out.update({
        "ratio_mean": float(done["ratio"].mean()),
        "ratio_min": float(done["ratio"].min()),
        "wire_fraction": float(done["sent_bytes"].sum()) / dense if dense else None,
        "energy_kept": float((done["energy_kept"] * w).sum() / w.sum()) if w.sum() else None,
        "delay_p50_s": percentile(done["delay_s"].dropna(), 50),
        "delay_p99_s": percentile(done["delay_s"].dropna(), 99),
    })
    return out


def write_summary(run_dir, summary):
    path = Path(run_dir) / "summary.json"
    write_json_atomic(path, summary, indent=2, default=_plain)
    return path


def _plain(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    raise TypeError(f"cannot write {type(value).__name__} to JSON")
