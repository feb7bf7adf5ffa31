"""Where ranks meet: the collectives and messages of a Schedule, matched across ranks.

``collectives(s)``: one row a collective instance (the k-th collective of a group), with
its kind, size, root, traffic class and the op of each member (``ops``, in group order);
``steps(s, row, algorithms, server_of)`` expands one into point-to-point steps carrying its
class. ``messages(s)``: one row a send matched with its recv. Together with the ops' own
dependencies this is all an engine needs to run a schedule step by step.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from workloads.collectives import Steps, expand
from workloads.schedule.ops import OpKind, Schedule


def _coll_frame(s: Schedule) -> pd.DataFrame:
    ci = np.flatnonzero((s.kind >= OpKind.ALL_REDUCE) & (s.kind <= OpKind.BROADCAST))
    df = pd.DataFrame({"op": ci, "group": s.group[ci], "rank": s.rank[ci], "kind": s.kind[ci],
                       "nbytes": s.nbytes[ci], "root": s.peer[ci], "tclass": s.tclass[ci]})
    df["seq"] = df.groupby(["group", "rank"]).cumcount()
    return df


def collectives(s: Schedule) -> pd.DataFrame:
    """Collective instances of a VALID schedule (``validate`` first): columns group, seq,
    kind, nbytes, root, tclass and ops (the members' global op indices, in group order)."""
    df = _coll_frame(s)
    if df.empty:
        return pd.DataFrame(columns=["group", "seq", "kind", "nbytes", "root", "tclass", "ops"])
    pos = {(g, r): i for g, ranks in enumerate(s.groups) for i, r in enumerate(ranks)}
    df["member"] = [pos[(g, r)] for g, r in zip(df["group"].tolist(), df["rank"].tolist())]
    df = df.sort_values(["group", "seq", "member"], kind="stable")
    # one instance a run of equal (group, seq): its first row's fields, its members' ops
    key = df[["group", "seq"]].to_numpy()
    starts = np.flatnonzero(np.r_[True, np.any(key[1:] != key[:-1], axis=1)])
    out = df.iloc[starts][["group", "seq", "kind", "nbytes", "root", "tclass"]].reset_index(drop=True)
    out["ops"] = np.split(df["op"].to_numpy(), starts[1:])
    return out


def steps(s: Schedule, row, algorithms: dict | None = None, server_of=None) -> Steps:
    """The point-to-point steps of one collective instance (a row of ``collectives``)."""
    kind = OpKind(int(row["kind"])).label
    root = int(row["root"])
    return expand(kind, s.groups[int(row["group"])], int(row["nbytes"]),
                  (algorithms or {}).get(kind), tclass=int(row["tclass"]),
                  root=root if root >= 0 else None, server_of=server_of)


def messages(s: Schedule) -> pd.DataFrame:
    """Sends matched with their recvs (in order per src, dst and tag): columns send_op,
    recv_op, src, dst, tag, nbytes, tclass."""
    si = np.flatnonzero(s.kind == OpKind.SEND)
    ri = np.flatnonzero(s.kind == OpKind.RECV)
    sends = pd.DataFrame({"send_op": si, "src": s.rank[si], "dst": s.peer[si], "tag": s.tag[si],
                          "nbytes": s.nbytes[si], "tclass": s.tclass[si]})
    recvs = pd.DataFrame({"recv_op": ri, "src": s.peer[ri], "dst": s.rank[ri], "tag": s.tag[ri]})
    for df in (sends, recvs):
        df["k"] = df.groupby(["src", "dst", "tag"]).cumcount()
    m = sends.merge(recvs, on=["src", "dst", "tag", "k"], how="inner")
    return m[["send_op", "recv_op", "src", "dst", "tag", "nbytes", "tclass"]]


def wire_bytes(s: Schedule, algorithms: dict | None = None, server_of=None,
               mask=None) -> np.ndarray:
    """Bytes each rank puts on the wire in one iteration: every collective expanded by its
    algorithm, plus the sends. ``mask(row)`` may select collective instances."""
    out = np.zeros(s.n_ranks)
    for _, row in collectives(s).iterrows():
        if mask is not None and not mask(row):
            continue
        st = steps(s, row, algorithms, server_of)
        np.add.at(out, st.src, st.nbytes)
    if mask is None:
        m = messages(s)
        np.add.at(out, m["src"].to_numpy(), m["nbytes"].to_numpy())
    return out
