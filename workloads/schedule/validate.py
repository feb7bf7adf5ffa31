"""Checks that a Schedule is well formed; every error names the op, rank or group at fault.

- shapes: one value per op in every column, rank_ptr and dep_ptr monotone;
- ops: a known kind; compute ops have no group, peer or class; communication ops carry a
  traffic class; sizes and durations are finite and >= 0;
- dependencies point to earlier ops of the same rank (the issue order is topological);
- collectives: the group exists and holds the rank; every member issues the same sequence of
  collectives on a group (same kind, same size): the k-th meets the k-th;
- send/recv: the peer is another rank; every send has the recv of its peer with the same tag
  and size, and the other way round.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from workloads.schedule.ops import COLUMNS, OpKind, Schedule, ScheduleError, TrafficClass


def validate(s: Schedule) -> Schedule:
    """The schedule itself if it is well formed; else ScheduleError saying what is wrong."""
    _check_shapes(s)
    _check_ops(s)
    _check_deps(s)
    _check_collectives(s)
    _check_point_to_point(s)
    return s


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


def _check_shapes(s: Schedule) -> None:
    if len(s.rank_ptr) != s.n_ranks + 1 or s.rank_ptr[0] != 0 or np.any(np.diff(s.rank_ptr) < 0):
        raise ScheduleError(f"rank_ptr must rise from 0 over {s.n_ranks} ranks")
    for name in COLUMNS:
        col = s.cols.get(name)
        if col is None or len(col) != s.n_ops:
            raise ScheduleError(f"column {name!r} needs {s.n_ops} values (one an op)")
    unknown = set(s.cols) - set(COLUMNS)
    if unknown:
        raise ScheduleError(f"unknown columns {sorted(unknown)}; allowed: {sorted(COLUMNS)}")
    if len(s.dep_ptr) != s.n_ops + 1 or s.dep_ptr[0] != 0 or np.any(np.diff(s.dep_ptr) < 0) \
            or s.dep_ptr[-1] != len(s.dep_idx):
        raise ScheduleError("dep_ptr must rise from 0 to len(dep_idx), one entry an op")
    if len(s.groups) != len(s.group_names):
        raise ScheduleError("every group needs a name")
    if s.n_ops and (s.label.min() < 0 or s.label.max() >= len(s.labels)):
        raise ScheduleError(f"op {_first((s.label < 0) | (s.label >= len(s.labels)))}: "
                            "label outside the label table")


def _check_ops(s: Schedule) -> None:
    kinds = [int(k) for k in OpKind]
    bad = ~np.isin(s.kind, kinds)
    if bad.any():
        raise ScheduleError(f"op {_first(bad)}: kind {int(s.kind[_first(bad)])} unknown; "
                            f"allowed: {', '.join(f'{int(k)} ({k.label})' for k in OpKind)}")
    checks = [
        (s.nbytes < 0, "nbytes must be >= 0"),
        (~np.isfinite(s.duration_us) | (s.duration_us < 0), "duration_us must be finite, >= 0"),
        (~np.isin(s.tclass, [int(c) for c in TrafficClass]),
         f"unknown traffic class; allowed: {', '.join(c.label for c in TrafficClass)}"),
    ]
    compute = s.kind == OpKind.COMPUTE
    coll = (s.kind >= OpKind.ALL_REDUCE) & (s.kind <= OpKind.BROADCAST)
    p2p = (s.kind == OpKind.SEND) | (s.kind == OpKind.RECV)
    checks += [
        (compute & ((s.group != -1) | (s.peer != -1) | (s.tclass != 0)),
         "a compute op has no group, peer or traffic class"),
        (~compute & (s.tclass == TrafficClass.NONE),
         "a communication op needs a traffic class (gradient, activation, "
         "activation-gradient, parameters, all-to-all)"),
        (coll & ((s.group < 0) | (s.group >= len(s.groups))),
         f"a collective needs a group 0..{len(s.groups) - 1}"),
        (p2p & ((s.peer < 0) | (s.peer >= s.n_ranks) | (s.peer == s.rank)),
         f"a send/recv needs a peer rank 0..{s.n_ranks - 1} other than its own"),
    ]
    for mask, what in checks:
        if mask.any():
            raise ScheduleError(f"{s.describe(_first(mask))}: {what}")
    members = {(g, r) for g, ranks in enumerate(s.groups) for r in ranks}
    for g, ranks in enumerate(s.groups):
        if len(set(ranks)) != len(ranks) or any(not 0 <= r < s.n_ranks for r in ranks):
            raise ScheduleError(f"group {g} ({s.group_names[g]}): ranks {ranks} must be "
                                f"distinct ranks 0..{s.n_ranks - 1}")
    ci = np.flatnonzero(coll)
    pairs = set(zip(s.group[ci].tolist(), s.rank[ci].tolist()))
    for g, r in pairs - members:
        op = int(ci[(s.group[ci] == g) & (s.rank[ci] == r)][0])
        raise ScheduleError(f"{s.describe(op)}: rank {r} is not in group {g} "
                            f"({s.group_names[g]}: {s.groups[g]})")


def _check_deps(s: Schedule) -> None:
    local = np.arange(s.n_ops) - np.repeat(s.rank_ptr[:-1], np.diff(s.rank_ptr))
    owner_local = np.repeat(local, np.diff(s.dep_ptr))
    bad = (s.dep_idx < 0) | (s.dep_idx >= owner_local)
    if bad.any():
        j = _first(bad)
        op = int(np.searchsorted(s.dep_ptr, j, side="right") - 1)
        raise ScheduleError(f"{s.describe(op)}: dependency {int(s.dep_idx[j])} is not an "
                            "earlier op of its rank (ops are listed in a topological order)")


def _check_collectives(s: Schedule) -> None:
    ci = np.flatnonzero((s.kind >= OpKind.ALL_REDUCE) & (s.kind <= OpKind.BROADCAST))
    if not len(ci):
        return
    df = pd.DataFrame({"op": ci, "group": s.group[ci], "rank": s.rank[ci], "kind": s.kind[ci],
                       "nbytes": s.nbytes[ci], "peer": s.peer[ci]})
    df["seq"] = df.groupby(["group", "rank"]).cumcount()
    sizes = np.array([len(g) for g in s.groups])
    agg = df.groupby(["group", "seq"]).agg(n=("rank", "size"), kmin=("kind", "min"),
                                           kmax=("kind", "max"), bmin=("nbytes", "min"),
                                           bmax=("nbytes", "max"), rmin=("peer", "min"),
                                           rmax=("peer", "max"), op=("op", "first"))
    g = agg.index.get_level_values("group").to_numpy()
    bad = (agg["n"].to_numpy() != sizes[g]) | (agg["kmin"] != agg["kmax"]).to_numpy() \
        | (agg["bmin"] != agg["bmax"]).to_numpy() | (agg["rmin"] != agg["rmax"]).to_numpy()
    if bad.any():
        row = agg.iloc[_first(bad)]
        grp, seq = agg.index[_first(bad)]
        got = df[(df["group"] == grp) & (df["seq"] == seq)]
        desc = ", ".join(f"rank {r}: {OpKind(k).label} {b} B" for r, k, b in
                         zip(got["rank"], got["kind"], got["nbytes"]))
        raise ScheduleError(
            f"group {grp} ({s.group_names[grp]}, ranks {s.groups[grp]}): collective #{seq} "
            f"does not match across members ({desc}; {int(row['n'])} of {sizes[grp]} "
            "members issue it); every member must issue the same collectives in the same order")


def _check_point_to_point(s: Schedule) -> None:
    si = np.flatnonzero(s.kind == OpKind.SEND)
    ri = np.flatnonzero(s.kind == OpKind.RECV)
    sends = pd.DataFrame({"src": s.rank[si], "dst": s.peer[si], "tag": s.tag[si],
                          "nbytes": s.nbytes[si], "send_op": si})
    recvs = pd.DataFrame({"src": s.peer[ri], "dst": s.rank[ri], "tag": s.tag[ri],
                          "nbytes": s.nbytes[ri], "recv_op": ri})
    for df in (sends, recvs):
        df["k"] = df.groupby(["src", "dst", "tag"]).cumcount()
    m = sends.merge(recvs, on=["src", "dst", "tag", "k"], how="outer", suffixes=("_s", "_r"))
    lone_send = m["recv_op"].isna()
    lone_recv = m["send_op"].isna()
    if lone_send.any():
        op = int(m.loc[lone_send, "send_op"].iloc[0])
        raise ScheduleError(f"{s.describe(op)}: no matching recv at rank {int(s.peer[op])} "
                            f"with tag {int(s.tag[op])}")
    if lone_recv.any():
        op = int(m.loc[lone_recv, "recv_op"].iloc[0])
        raise ScheduleError(f"{s.describe(op)}: no matching send from rank {int(s.peer[op])} "
                            f"with tag {int(s.tag[op])}")
    size = m["nbytes_s"] != m["nbytes_r"]
    if size.any():
        row = m[size].iloc[0]
        raise ScheduleError(f"{s.describe(int(row['send_op']))}: sends {int(row['nbytes_s'])} B "
                            f"but the recv expects {int(row['nbytes_r'])} B")
