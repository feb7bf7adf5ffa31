"""Where ranks sit and which process groups follow (Megatron's order).

rank = tp_i + tp * (pp_i + pp * dp_i): tensor parallelism varies fastest, so a TP group
shares a server (its all-reduces stay on the server's fabric), then pipeline stages, then
data-parallel replicas. rank -> (server, gpu) = divmod(rank, gpus_per_server); GPU i of every
server sits on rail i of a rail-optimized fabric.

Groups, each listed in ring order (ascending rank):
- ``tp``: same (dp_i, pp_i); ``pp``: same (dp_i, tp_i); ``dp``: same (pp_i, tp_i);
- ``ep``: expert parallelism splits each dp group into dp/ep consecutive blocks of ep
  replicas (dp_i // ep the same) that exchange tokens by all-to-all;
- ``edp``: expert data parallelism: the replicas holding the same experts (dp_i % ep the
  same), which all-reduce the expert gradients;
- ``embed``: the first and last pipeline stage of one (dp_i, tp_i), which all-reduce the
  gradients of tied embeddings.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

GROUP_KINDS = ("tp", "pp", "dp", "ep", "edp", "embed")


@dataclass(frozen=True)
class RankLayout:
    dp: int = 1
    tp: int = 1
    pp: int = 1
    ep: int = 1
    gpus_per_server: int = 8

    def __post_init__(self):
        for name in ("dp", "tp", "pp", "ep", "gpus_per_server"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {v!r}")
        if self.dp % self.ep:
            raise ValueError(f"ep ({self.ep}) must divide dp ({self.dp}): expert parallelism "
                             "splits the data-parallel replicas")

    @property
    def n_ranks(self) -> int:
        return self.dp * self.tp * self.pp

    def rank(self, dp_i, pp_i, tp_i):
        return tp_i + self.tp * (pp_i + self.pp * dp_i)

    def coords(self, rank) -> tuple:
        """(dp_i, pp_i, tp_i) of rank (ints or arrays)."""
        rest, tp_i = np.divmod(rank, self.tp)
        dp_i, pp_i = np.divmod(rest, self.pp)
        return dp_i, pp_i, tp_i

    def server(self, rank):
        return np.asarray(rank) // self.gpus_per_server

    def gpu(self, rank):
        return np.asarray(rank) % self.gpus_per_server

    @cached_property
    def _table(self) -> tuple[list[tuple[int, ...]], list[str], np.ndarray]:
        ranks = np.arange(self.n_ranks)
        dp_i, pp_i, tp_i = self.coords(ranks)
        keys = {
            "tp": dp_i * self.pp + pp_i,
            "pp": dp_i * self.tp + tp_i,
            "dp": pp_i * self.tp + tp_i,
            "ep": ((dp_i // self.ep) * self.pp + pp_i) * self.tp + tp_i,
            "edp": ((dp_i % self.ep) * self.pp + pp_i) * self.tp + tp_i,
            "embed": np.where((pp_i == 0) | (pp_i == self.pp - 1), dp_i * self.tp + tp_i, -1),
        }
        groups, names = [], []
        of = np.full((self.n_ranks, len(GROUP_KINDS)), -1, dtype=np.int32)
        for k, kind in enumerate(GROUP_KINDS):
            key = keys[kind]
            for value in np.unique(key[key >= 0]):
                members = ranks[key == value]
                of[members, k] = len(groups)
                groups.append(tuple(int(m) for m in members))
                names.append(f"{kind}[{int(value)}]")
        return groups, names, of

    @property
    def groups(self) -> list[tuple[int, ...]]:
        return self._table[0]

    @property
    def group_names(self) -> list[str]:
        return self._table[1]

    def group_of(self, rank: int, kind: str) -> int:
        """The id of rank's group of ``kind`` (one of GROUP_KINDS); -1 if it has none."""
        if kind not in GROUP_KINDS:
            raise ValueError(f"unknown group kind {kind!r}; allowed: {', '.join(GROUP_KINDS)}")
        return int(self._table[2][rank, GROUP_KINDS.index(kind)])

    def group_table(self) -> np.ndarray:
        """[rank, kind index] -> group id (-1: none)."""
        return self._table[2]
