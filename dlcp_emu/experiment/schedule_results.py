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
    sent = [message_columns(rec["messages_sent"]) for rec in records if "messages_sent" in rec]
    got = [message_columns(rec["messages_received"]) for rec in records if "messages_received" in rec]
    if not sum(len(m["gid"]) for m in sent):
        return pd.DataFrame(columns=MESSAGE_COLUMNS)
    s = pd.DataFrame({k: np.concatenate([m[k] for m in sent]) for k in MESSAGE_FIELDS[:7]})
    r = pd.DataFrame({k: np.concatenate([m[k] for m in got]) if got else np.zeros(0, dtype=np.int64)
                      for k in ("iteration", "gid", "done_ns", "lost_bytes")})
    d = s.merge(r, on=["iteration", "gid"], how="left")
    d["sent_s"] = (d["sent_ns"] - t0_ns) * scale.s_per_ns
    d["done_s"] = (d["done_ns"] - t0_ns) * scale.s_per_ns
    d["fct_s"] = d["done_s"] - d["sent_s"]
    codes = d["tclass"].to_numpy(dtype=np.int64)
    labels = {int(c): TrafficClass(int(c)).label for c in np.unique(codes)}
    d["tclass"] = pd.Series(codes).map(labels).to_numpy(dtype=object)
    return d[MESSAGE_COLUMNS].sort_values(["iteration", "gid"], ignore_index=True)


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
