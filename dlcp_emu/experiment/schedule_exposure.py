"""Which parallelism a schedule rank's exposed communication waited on (TP, PP, DP, ...).

A rank is exposed while none of its compute runs; a wait ends when a message arrives that
lets compute start (or ends the iteration), and is laid to that message's dimension
(`SchedulePlan.gid_dim`). The records say when each message arrived, not which op a rank
waited on, so each rank's program is played again on the arrival times it recorded, its
compute taking the planned times: in the simulator that is the run itself (the waits add up
to the exposed time, `exposed_table`); in the emulator, whose compute timers fired late, the
dimensions' shares of it.

The replay is the rank's `ScheduleAgent` event for event (tests/exposure_oracle.py runs that
agent and must agree row for row), computed an op at a time rather than a message at a time:
a 1024-GPU plan has ten million messages and a few hundred ops a rank. Every event has a key,
the order the agent takes events in: (time, 0, 0, n) for a compute op's end (timers first at
equal times; n > 0 for a zero-length one, taken right after the event that started it),
(time, 1, k, 0) for the rank's k-th arrival in (done_ns, iteration, gid) order, (time, -1, 0,
0) for the first iteration's start. An op starts at the largest end key of its dependencies
(ops point to earlier ops only), a compute op ends its duration later, a communication op at
the largest of its start and its messages' arrivals (a collective step waits for a step of
the same op, so its sends add nothing)."""
import math

import numpy as np
import pandas as pd

from dlcp_emu.experiment.record_columns import message_columns

COLUMNS = ["rank", "iteration", "dim", "exposed_s"]
NEVER = (math.inf, 0, 0, 0)     # the key of what never happened (the run stopped first)


def exposure_table(plan, records, scale):
    """Per rank, iteration and dimension the seconds (real-world) the rank waited on it."""
    rows = []
    for rec in records:
        if "messages_received" not in rec or not rec.get("iterations"):
            continue
        waits = rank_waits(plan, rec)
        rows += [(rec["rank"], it, dim, ns * scale.s_per_ns) for (it, dim), ns in sorted(waits.items())]
    return pd.DataFrame(rows, columns=COLUMNS)


def rank_waits(plan, rec):
    """{(iteration, dim): ns} the rank of record `rec` waited with no compute running."""
    p = plan.programs.arrays(rec["rank"])
    its = sorted(rec["iterations"], key=lambda r: r["iteration"])
    arrival_t, arrival_gid, last = _arrivals(p, rec["messages_received"], len(its))
    deps_ptr, deps = p.dep_ptr.tolist(), p.dep_idx.tolist()
    dur, compute = p.duration_ns.tolist(), p.is_compute.astype(bool).tolist()
    n_ops = len(dur)
    waits = {}
    start = (its[0]["start_ns"], -1, 0, 0)
    for it in range(len(its)):
        if start is NEVER:
            break
        ends, computes, mx = [None] * n_ops, [], last[it]
        for i in range(n_ops):
            a, b = deps_ptr[i], deps_ptr[i + 1]
            s = start if a == b else max(ends[d] for d in deps[a:b])
            if s is NEVER:
                ends[i] = NEVER
            elif compute[i]:
                ends[i] = (s[0] + dur[i], 0, 0, 0) if dur[i] > 0 else (s[0], s[1], s[2], s[3] + 1)
                computes.append((s, ends[i]))
            else:
                k = mx[i]
                ends[i] = s if k < 0 else max(s, (arrival_t[k], 1, k, 0) if k < len(arrival_t) else NEVER)
        end = max(ends, default=start)
        _gaps(waits, it, start, end, computes, arrival_gid, plan.gid_dim)
        start = end
    return waits


def _gaps(waits, it, start, end, computes, arrival_gid, gid_dim):
    """Adds iteration `it`'s idle spans (no compute op between their start and end keys) to
    waits, each laid to the arrival that ended it; spans the run never closed are left out."""
    computes.sort()
    idle = None if computes and computes[0][0] == start else start
    busy = start
    for s, e in computes:
        if s is NEVER:
            return
        if idle is None and s > busy:
            idle = busy                  # the last compute ended before this one began
        if idle is not None:             # s is an arrival: a wait ends
            _add(waits, it, gid_dim[arrival_gid[s[2]]], s[0] - idle[0])
            idle = None
        busy = max(busy, e)
    if idle is None and end > busy:
        idle = busy
    if idle is not None and end is not NEVER and end > idle:
        _add(waits, it, gid_dim[arrival_gid[end[2]]], end[0] - idle[0])


def _add(waits, it, dim, ns):
    waits[(it, dim)] = waits.get((it, dim), 0) + ns


def _arrivals(p, received, n_its):
    """(arrival times in (done_ns, iteration, gid) order, their gids, and per iteration and
    op the order of the op's last arrival: -1 for an op that receives nothing, past the
    arrivals' count for one still missing a message)."""
    m = message_columns(received)
    it, gid, done = m["iteration"], m["gid"], m["done_ns"]
    order = np.lexsort((gid, it, done))
    it, gid, done = it[order], gid[order], done[order]
    n_recv, n_ops = len(p.recv_gid), len(p.duration_ns)
    by_gid = np.argsort(p.recv_gid, kind="stable")
    slot = by_gid[np.searchsorted(p.recv_gid[by_gid], gid)] if n_recv else np.zeros(0, dtype=np.int64)
    pos = np.full((n_its, n_recv), len(done), dtype=np.int64)     # missing: past the last arrival
    keep = (it >= 0) & (it < n_its)
    pos[it[keep], slot[keep]] = np.flatnonzero(keep)
    last = np.full((n_its, n_ops), -1, dtype=np.int64)
    counts = np.diff(p.recv_ptr)
    has = np.flatnonzero(counts > 0)
    if len(has):
        last[:, has] = np.maximum.reduceat(pos, p.recv_ptr[has], axis=1)
    return done.tolist(), gid.tolist(), last.tolist()


def exposure_by_dim(exposure, measured):
    """{dim: mean seconds a rank waited on it an iteration}, over `measured` (the exposed
    table's rank and iteration rows: the iterations the statistics count)."""
    if not len(exposure) or not len(measured):
        return {}
    keep = exposure.merge(measured[["rank", "iteration"]], on=["rank", "iteration"])
    per = keep.pivot_table(index=["rank", "iteration"], columns="dim", values="exposed_s", aggfunc="sum")
    per = per.reindex(pd.MultiIndex.from_frame(measured[["rank", "iteration"]])).fillna(0.0)
    return {dim: float(np.mean(per[dim])) for dim in per.columns}
