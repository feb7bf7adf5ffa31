"""A schedule run's own results (`host.schedule_agent`): every message with its traffic class
and completion time (sent by its source's agent to whole at its destination's), per class the
tail of those completions, and the communication each rank's iterations exposed (iteration
time beyond the rank's compute: communication it waited on, pipeline bubbles included).
Tables: `messages`, `traffic_classes`, `exposed` (the measured iterations of every rank),
`exposure` (what each rank's waits were on: `schedule_exposure`)."""
import numpy as np
import pandas as pd

from workloads.schedule import TrafficClass

from dlcp_emu.experiment.record_columns import MESSAGE_FIELDS, message_columns
from dlcp_emu.experiment.results import measured_iterations, percentile
from dlcp_emu.experiment.schedule_exposure import exposure_by_dim, exposure_table

MESSAGE_COLUMNS = ["iteration", "gid", "src", "dst", "tclass", "nbytes", "sent_s", "done_s", "fct_s", "lost_bytes"]


def message_table(records, scale, t0_ns=0):
    """Every message sent, in (iteration, gid) order, with its arrival where it arrived (NaN
    where not): numpy over the records' columns (ten million rows at 1024 GPUs)."""
    sent = _joined([rec["messages_sent"] for rec in records if "messages_sent" in rec], MESSAGE_FIELDS[:7])
    got = _joined([rec["messages_received"] for rec in records if "messages_received" in rec],
                  ("iteration", "gid", "done_ns", "lost_bytes"))
    if not len(sent["gid"]):
        return pd.DataFrame(columns=MESSAGE_COLUMNS)
    # Each intermediate let go as soon as it is used: at 1024 GPUs a column is 85 MB.
    top = int(max(sent["gid"].max(), got["gid"].max(initial=0))) + 1
    order = np.lexsort((sent["gid"], sent["iteration"]))
    d = pd.DataFrame({k: v[order] for k, v in sent.items()})
    del sent, order
    want = d["iteration"].to_numpy() * top + d["gid"].to_numpy()
    have = got["iteration"] * top + got["gid"]
    by = np.argsort(have, kind="stable")
    have = have[by]
    at = np.minimum(np.searchsorted(have, want), max(len(by) - 1, 0))
    found = have[at] == want if len(by) else np.zeros(len(want), dtype=bool)
    del have, want
    for k in ("done_ns", "lost_bytes"):   # as a left merge gives them: float with NaN if any is missing
        v = got.pop(k)[by][at] if len(by) else np.zeros(len(at), dtype=np.int64)
        d[k] = v if found.all() else np.where(found, v, np.nan)
    del got, by, at, found
    d["sent_s"] = (d["sent_ns"] - t0_ns) * scale.s_per_ns
    d["done_s"] = (d["done_ns"] - t0_ns) * scale.s_per_ns
    d["fct_s"] = d["done_s"] - d["sent_s"]
    codes = d["tclass"].to_numpy(dtype=np.int64)
    labels = np.asarray([TrafficClass(int(c)).label for c in range(int(codes.max(initial=0)) + 1)], dtype=object)
    d["tclass"] = labels[codes]
    return d[MESSAGE_COLUMNS]


def _joined(parts, fields):
    cols = [message_columns(p) for p in parts]
    return {k: np.concatenate([c[k] for c in cols]) if cols else np.zeros(0, dtype=np.int64) for k in fields}


def class_table(messages):
    """Per traffic class: messages, bytes, completion p50/p99 (s), bytes lost, unfinished."""
    rows = []
    for tclass, m in messages.groupby("tclass", sort=True):
        fct = m["fct_s"].dropna()
        rows.append({"tclass": tclass, "messages": int(len(m)), "bytes": int(m["nbytes"].sum()),
                     "fct_p50_s": percentile(fct, 50), "fct_p99_s": percentile(fct, 99),
                     "lost_bytes": int(m["lost_bytes"].fillna(0).sum()),
                     "unfinished": int(m["done_s"].isna().sum())})
    return pd.DataFrame(rows, columns=["tclass", "messages", "bytes", "fct_p50_s", "fct_p99_s", "lost_bytes",
                                       "unfinished"])


def exposed_table(records, iterations, scale):
    """Per rank and iteration: time beyond the rank's compute (busy) time."""
    busy = {(rec["rank"], i): b * scale.s_per_ns for rec in records for i, b in enumerate(rec.get("busy_ns", []))}
    if not len(iterations):
        return pd.DataFrame(columns=["rank", "iteration", "total_s", "busy_s", "exposed_s"])
    d = iterations[["rank", "iteration", "total_s"]].copy()
    d["busy_s"] = [busy.get((r, i)) for r, i in zip(d["rank"], d["iteration"])]
    d["exposed_s"] = d["total_s"] - d["busy_s"]
    return d


def add_schedule_results(plan, records, scale, s, frames, msgs):
    """msgs: message_table(records, ...)."""
    classes = class_table(msgs)
    frames["messages"], frames["traffic_classes"] = msgs, classes
    s["traffic_classes"] = {r["tclass"]: {k: r[k] for k in ("messages", "bytes", "fct_p50_s", "fct_p99_s",
                                                              "lost_bytes", "unfinished")}
                            for r in classes.to_dict("records")}
    exposed = frames["exposed"] = exposed_table(records, measured_iterations(frames["iterations"]), scale)
    s["exposed_comm_mean_s"] = float(exposed["exposed_s"].mean()) if len(exposed) else None
    by_dim = frames["exposure"] = exposure_table(plan, records, scale)
    s["exposed_comm_by_dim_s"] = exposure_by_dim(by_dim, exposed)
    s["schedule"] = {"ranks": plan.n_ranks, "messages_per_iteration": plan.n_messages,
                     "generator": (plan.schedule.meta or {}).get("generator") if plan.schedule is not None else None}
