"""A run's tables from what its hosts and switches recorded, the same for both backends:
every time in real-world seconds (the run's scale divided back)."""
import numpy as np
import pandas as pd

from dlcp_emu.experiment.record_columns import delivery_columns


def tables(records, run_scale, t0_ns=0):
    """records: the hosts' record dicts (hostd's format). Returns (iterations, tensors,
    deliveries) DataFrames with times in real-world seconds from the run's start."""
    scale = run_scale.s_per_ns
    its, tens, dels = [], [], []
    for rec in records:
        rank = rec["rank"]
        it = sorted(rec.get("iterations", []), key=lambda r: r["iteration"])
        for i, r in enumerate(it):
            end = it[i + 1]["start_ns"] if i + 1 < len(it) else r["comm_end_ns"]
            done = end is not None and end >= 0
            total = (end - r["start_ns"]) * scale if done else None
            its.append({"rank": rank, "iteration": r["iteration"],
                        "start_s": (r["start_ns"] - t0_ns) * scale,
                        "compute_s": r["compute_ns"] * scale,
                        "total_s": total,
                        "comm_s": None if total is None else max(0.0, total - r["compute_ns"] * scale)})
        for r in rec.get("tensors", []):
            done = r["done_ns"] >= 0
            tens.append({"rank": rank, "iteration": r["iteration"], "bucket": r["bucket"],
                         "nbytes": r["nbytes"], "ready_s": (r["ready_ns"] - t0_ns) * scale,
                         "done_s": (r["done_ns"] - t0_ns) * scale if done else None,
                         "fct_s": (r["done_ns"] - r["ready_ns"]) * scale if done else None,
                         "lost_bytes": r["lost_bytes"], "ratio": r["ratio"],
                         "sent_bytes": r["sent_bytes"], "dense_bytes": r["dense_bytes"],
                         "energy_kept": r["energy_kept"],
                         "delay_s": r["delay_ns"] * scale if r["delay_ns"] >= 0 else None})
    return pd.DataFrame(its), pd.DataFrame(tens), _deliveries(records, scale, t0_ns)


def _deliveries(records, scale, t0_ns):
    """The deliveries' table, by columns: a run of a thousand hosts delivers millions of
    messages, and a Python object a row cost seconds (`record_columns`)."""
    parts, lost_by_class, n = [], [], 0
    for rec in records:
        cols, by_class = delivery_columns(rec.get("deliveries", []))
        m = len(cols["src"])
        if m:
            parts.append({**cols, "dst": np.full(m, rec["rank"], dtype=np.int64)})
            lost_by_class += [(n + i, classes) for i, classes in by_class]
            n += m
    if not n:
        return pd.DataFrame()
    # Each intermediate let go as soon as it is used: at 1024 GPUs a column is 85 MB.
    col = {f: np.concatenate([p[f] for p in parts]) for f in parts[0]}
    del parts
    columns = {"src": col["src"], "dst": col["dst"], "iteration": col["iteration"],
               "tensor_id": col["tensor_id"], "nbytes": col["nbytes"], "lost_bytes": col["lost_bytes"],
               "first_s": (col["first_ns"] - t0_ns) * scale, "done_s": (col["done_ns"] - t0_ns) * scale}
    del col
    lost = np.zeros((9, n), dtype=np.int64)   # by class -1..7 (-1: never seen, not even trimmed)
    for i, classes in lost_by_class:
        for k, b in classes.items():     # keys are str in hosts' files
            if -1 <= int(k) <= 7:
                lost[int(k) + 1, i] = int(b)
    for k in range(-1, 8):
        columns[f"lost_mag{k}"] = lost[k + 1]
    del lost
    return pd.DataFrame(columns)


def active_seconds(tensors):
    """Real-world seconds from the start to the last synchronised tensor: the span over
    which link utilisation is averaged."""
    return float(tensors["done_s"].max()) if len(tensors) and tensors["done_s"].notna().any() else None


def port_table(counters_by_switch, duration_s, scale, roles=None):
    """Switch counters -> one row per egress port, with utilisation over duration_s
    (real-world seconds; the counters' rates are the scaled ones, so time is dilated back).
    roles: {switch: role} (`Topology.role_of`: `server` for a server's fabric, else
    `switch`), the `role` column."""
    rows = []
    for sw, c in counters_by_switch.items():
        role = (roles or {}).get(sw, "switch")
        for port, p in c["ports"].items():
            rate = p.get("rate_bps")
            row = {"switch": sw, "role": role, "port": int(port), "tx_packets": p["tx_packets"],
                   "tx_bytes": p["tx_bytes"], "enqueued": p["enqueued"],
                   "trimmed": p["trimmed"], "marked": p["marked"],
                   "max_queue_bytes": p["max_bytes"], "dropped": sum(p["drops"].values()),
                   "rate_bps": rate,
                   "utilization": (p["tx_bytes"] * 8 / (rate * duration_s * scale.dilation))
                   if rate and duration_s else None}
            # by name: the engines' counters list reasons in different orders (first seen,
            # the core's codes), and the columns must not depend on which ran
            for reason, count in sorted(p["drops"].items()):
                row[f"drop_{reason}"] = count
            rows.append(row)
    return pd.DataFrame(rows)


def queue_table(samples_by_switch, t0_ns, scale):
    """{switch: {"ports": [...], "samples": rows of (t_ns, bytes...), a list or an int64
    array}} -> long table of (switch, port, t_s, queued_bytes), t_s in real-world seconds
    from t0; ports that never queued anything are left out."""
    columns = ["switch", "port", "t_s", "queued_bytes"]
    names, ports, times, queued = [], [], [], []   # one entry a port, joined once below:
    for sw, q in samples_by_switch.items():      # a frame a port cost seconds at 1024 hosts
        if not q or not len(q.get("samples", ())):
            continue
        a = np.asarray(q["samples"], dtype=np.int64)
        t_s = scale.seconds(a[:, 0] - t0_ns)
        for i, port in enumerate(q["ports"]):
            if a[:, i + 1].any():
                names.append(sw)
                ports.append(int(port))
                times.append(t_s)
                queued.append(a[:, i + 1])
    if not names:
        return pd.DataFrame([], columns=columns)
    lengths = [len(t) for t in times]
    return pd.DataFrame({"switch": np.repeat(np.array(names, dtype=object), lengths),
                         "port": np.repeat(np.array(ports, dtype=np.int64), lengths),
                         "t_s": np.concatenate(times), "queued_bytes": np.concatenate(queued)})
