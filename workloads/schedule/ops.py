"""A training iteration as data: every rank's ops, their sizes, groups and dependencies.

The shape is Chakra's execution-trace graph, one graph per rank: compute ops (a duration)
and communication ops (a collective on a process group, or a send/recv to a peer), each
naming the earlier ops of its own rank it waits for. Ranks meet only through communication:
the k-th collective a rank issues on a group is the k-th of every member (same kind, same
size), and a send meets the recv of its peer with the same tag.

All ops of all ranks are columns of numpy arrays, rank by rank in issue order
(``rank_ptr`` delimits them); dependencies are local op indices in CSR form (``dep_ptr``,
``dep_idx``) and always point to an EARLIER op of the same rank, so the issue order is a
topological order. Sizes of collectives (``nbytes``) are the whole buffer: the all-reduced
tensor, the reduce-scatter input, the all-gather output, a rank's all-to-all send buffer,
the broadcast tensor. Every communication op carries its traffic class.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np


class OpKind(IntEnum):
    COMPUTE = 0
    ALL_REDUCE = 1
    REDUCE_SCATTER = 2
    ALL_GATHER = 3
    ALL_TO_ALL = 4
    BROADCAST = 5
    SEND = 6
    RECV = 7

    @property
    def label(self) -> str:
        return self.name.lower().replace("_", "-")

    @property
    def is_collective(self) -> bool:
        return OpKind.ALL_REDUCE <= self <= OpKind.BROADCAST


class TrafficClass(IntEnum):
    """What a message carries. Only gradients tolerate bounded loss."""
    NONE = 0  # compute ops
    GRADIENT = 1
    ACTIVATION = 2
    ACTIVATION_GRADIENT = 3
    PARAMETERS = 4
    ALL_TO_ALL = 5

    @property
    def label(self) -> str:
        return self.name.lower().replace("_", "-")


KIND_BY_LABEL = {k.label: k for k in OpKind}
CLASS_BY_LABEL = {c.label: c for c in TrafficClass if c is not TrafficClass.NONE}

# the columns every schedule has, with their dtypes
COLUMNS = {"kind": np.int8, "nbytes": np.int64, "duration_us": np.float64, "group": np.int32,
           "peer": np.int32, "tag": np.int64, "tclass": np.int8, "layer": np.int32,
           "micro": np.int32, "label": np.int32}


class ScheduleError(ValueError):
    """A schedule (or the input it came from) that is not well formed; says where and why."""


@dataclass(frozen=True)
class Schedule:
    """All ranks' ops of one iteration (see the module doc). ``groups[g]`` are the ranks of
    process group g, in ring order; ``group_names[g]`` say what it is ("tp", "dp[3]" ...).
    ``labels[label[i]]`` names op i. ``meta`` holds provenance (generator, model, figures)."""
    n_ranks: int
    rank_ptr: np.ndarray
    cols: dict[str, np.ndarray]
    dep_ptr: np.ndarray
    dep_idx: np.ndarray
    groups: tuple[tuple[int, ...], ...]
    group_names: tuple[str, ...]
    labels: tuple[str, ...]
    meta: dict = field(default_factory=dict)

    def __getattr__(self, name):  # s.kind, s.nbytes ... read the columns
        cols = self.__dict__.get("cols")
        if cols is not None and name in cols:
            return cols[name]
        raise AttributeError(name)

    @property
    def n_ops(self) -> int:
        return int(self.rank_ptr[-1])

    @property
    def rank(self) -> np.ndarray:
        """The rank of every op."""
        return np.repeat(np.arange(self.n_ranks, dtype=np.int32), np.diff(self.rank_ptr))

    def deps(self, op: int) -> np.ndarray:
        """The global indices of the ops that op waits for."""
        r = int(np.searchsorted(self.rank_ptr, op, side="right") - 1)
        return self.dep_idx[self.dep_ptr[op]:self.dep_ptr[op + 1]] + self.rank_ptr[r]

    def ops_of(self, rank: int) -> slice:
        return slice(int(self.rank_ptr[rank]), int(self.rank_ptr[rank + 1]))

    def describe(self, op: int) -> str:
        r = int(np.searchsorted(self.rank_ptr, op, side="right") - 1)
        kind = OpKind(int(self.kind[op])).label
        return f"rank {r} op {op - int(self.rank_ptr[r])} ({kind} {self.labels[self.label[op]]!r})"

    def table(self):
        """The ops as a pandas DataFrame with readable kinds, classes and names."""
        import pandas as pd
        df = pd.DataFrame({"rank": self.rank,
                           "op": np.arange(self.n_ops) - np.repeat(self.rank_ptr[:-1],
                                                                   np.diff(self.rank_ptr)),
                           **self.cols})
        df["kind"] = [OpKind(k).label for k in df["kind"]]
        df["tclass"] = [TrafficClass(c).label for c in df["tclass"]]
        df["label"] = np.asarray(self.labels, dtype=object)[df["label"].to_numpy()]
        return df

    def sent_bytes(self, mask: np.ndarray | None = None) -> np.ndarray:
        """The bytes each rank's communication ops name (collective buffer sizes and sends),
        per rank: what the algorithms of ``workloads.collectives`` then expand."""
        comm = (self.kind != OpKind.COMPUTE) & (self.kind != OpKind.RECV)
        if mask is not None:
            comm &= mask
        return np.bincount(self.rank[comm], weights=self.nbytes[comm], minlength=self.n_ranks)


class RankOps:
    """Builds one rank's op list in issue order (used by generators and importers)."""

    def __init__(self, labels: dict[str, int] | None = None):
        self.rows: dict[str, list] = {c: [] for c in COLUMNS}
        self.deps: list[list[int]] = []
        self.labels = {} if labels is None else labels  # shared label -> id

    def __len__(self) -> int:
        return len(self.deps)

    def add(self, kind: OpKind, label: str, deps=(), *, nbytes: int = 0, duration_us: float = 0.0,
            group: int = -1, peer: int = -1, tag: int = -1,
            tclass: TrafficClass = TrafficClass.NONE, layer: int = -1, micro: int = -1) -> int:
        row = self.rows
        row["kind"].append(int(kind))
        row["nbytes"].append(int(nbytes))
        row["duration_us"].append(float(duration_us))
        row["group"].append(group)
        row["peer"].append(peer)
        row["tag"].append(tag)
        row["tclass"].append(int(tclass))
        row["layer"].append(layer)
        row["micro"].append(micro)
        row["label"].append(self.labels.setdefault(label, len(self.labels)))
        self.deps.append([d for d in deps if d is not None and d >= 0])
        return len(self.deps) - 1

    def arrays(self) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
        cols = {c: np.asarray(v, dtype=COLUMNS[c]) for c, v in self.rows.items()}
        lengths = np.fromiter((len(d) for d in self.deps), dtype=np.int64, count=len(self.deps))
        ptr = np.zeros(len(self.deps) + 1, dtype=np.int64)
        np.cumsum(lengths, out=ptr[1:])
        idx = np.fromiter((d for ds in self.deps for d in ds), dtype=np.int32, count=int(ptr[-1]))
        return cols, ptr, idx


def assemble(n_ranks: int, per_rank: list[tuple[dict, np.ndarray, np.ndarray]],
             groups, group_names, labels: dict[str, int], meta: dict | None = None) -> Schedule:
    """One Schedule from each rank's (cols, dep_ptr, dep_idx), rank 0 first."""
    if len(per_rank) != n_ranks:
        raise ScheduleError(f"need the ops of {n_ranks} ranks, got {len(per_rank)}")
    counts = np.array([len(p[1]) - 1 for p in per_rank], dtype=np.int64)
    rank_ptr = np.zeros(n_ranks + 1, dtype=np.int64)
    np.cumsum(counts, out=rank_ptr[1:])
    cols = {c: np.concatenate([p[0][c] for p in per_rank]) if per_rank else np.zeros(0, t)
            for c, t in COLUMNS.items()}
    dep_counts = np.concatenate([np.diff(p[1]) for p in per_rank])
    dep_ptr = np.zeros(len(dep_counts) + 1, dtype=np.int64)
    np.cumsum(dep_counts, out=dep_ptr[1:])
    dep_idx = np.concatenate([p[2] for p in per_rank]).astype(np.int32)
    names = [""] * len(labels)
    for name, i in labels.items():
        names[i] = name
    return Schedule(n_ranks, rank_ptr, cols, dep_ptr, dep_idx,
                    tuple(tuple(int(r) for r in g) for g in groups), tuple(group_names),
                    tuple(names), dict(meta or {}))
