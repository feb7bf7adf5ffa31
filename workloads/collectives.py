"""Collective algorithms: a collective on a group -> point-to-point steps.

``expand(kind, ranks, nbytes, algorithm)`` gives ``Steps``: numpy columns ``src``, ``dst``,
``nbytes``, ``round`` and ``dep`` (the step this one waits for, -1 for none). One rule makes
the dependencies of every algorithm: a step leaves its source after the last step that
source received in an earlier round (what it forwards or reduces came in with it).

Sizes are whole buffers, as in a Schedule: the all-reduced tensor, the reduce-scatter input,
the all-gather output, one rank's all-to-all send buffer, the broadcast tensor. What each rank
sends, for a group of n and a buffer of S bytes:

- all-reduce ``ring``: reduce-scatter then all-gather around the ring, 2(n-1) rounds,
  2(n-1)/n S; ``halving-doubling`` (Rabenseifner; n a power of two): recursive halving then
  doubling, 2 log2 n rounds, the same bytes; ``hierarchical``: a ring reduce-scatter among
  each server's GPUs, a ring all-reduce of each GPU's share across the servers (GPU i of every
  server: rail i), an all-gather among the server's GPUs, as NCCL does on rail-optimized
  fabrics: 2(g-1)/g S inside a server of g GPUs plus 2(m-1)/m S/g across m servers;
- reduce-scatter, all-gather ``ring``: n-1 rounds, (n-1)/n S; ``halving-doubling``:
  log2 n rounds, the same bytes; ``hierarchical``: the inside then the across part;
- all-to-all ``pairwise``: in round k rank i sends its block for rank i+k, n-1 rounds,
  (n-1)/n S;
- broadcast ``tree`` (binomial, log2 n rounds) and ``ring`` (a chain from the root): every
  rank but the leaves sends S (ring: all but the last);
- send/recv ``direct``: one step.

Chunks split S into n parts whose sizes differ by at most one byte, so totals are exact.
Adding an algorithm: write ``def _kind_name(b, ranks, nbytes, **kw)`` that calls
``b.round(...)`` once per round and register it in ``ALGORITHMS``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np


@dataclass(frozen=True)
class Steps:
    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    round: np.ndarray
    dep: np.ndarray  # index of the step this one waits for, -1 for none
    tclass: int = 0  # the traffic class of the collective, carried by every step

    def __len__(self) -> int:
        return len(self.src)

    def sent_by(self, rank: int) -> int:
        return int(self.nbytes[self.src == rank].sum())

    def sent(self, ranks: Sequence[int]) -> np.ndarray:
        """Bytes sent by each of ``ranks``, in their order."""
        return np.array([self.sent_by(r) for r in ranks], dtype=np.int64)

    @property
    def rounds(self) -> int:
        return int(self.round.max()) + 1 if len(self.round) else 0

    def finish_times(self, seconds: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
                     ) -> np.ndarray:
        """When each step ends if a step takes ``seconds(src, dst, nbytes)`` once its
        dependency has ended (no contention: the ideal network)."""
        end = np.zeros(len(self))
        cost = seconds(self.src, self.dst, self.nbytes)
        for r in range(self.rounds):
            i = np.flatnonzero(self.round == r)
            d = self.dep[i]
            end[i] = np.where(d >= 0, end[np.maximum(d, 0)], 0.0) + cost[i]
        return end


class _Builder:
    def __init__(self):
        self.cols: list[tuple] = []      # one (src, dst, nbytes, round, dep) of arrays a round
        self.n = 0
        self.last_in = np.full(0, -1, dtype=np.int64)   # by rank: the last step it received
        self.rounds = 0

    def round(self, src, dst, nbytes) -> None:
        """Add one round of steps; each waits for the last step its source received."""
        s, d, b = (np.asarray(x, dtype=np.int64).reshape(-1) for x in (src, dst, nbytes))
        keep = b > 0
        s, d, b = s[keep], d[keep], b[keep]
        if len(s):
            top = int(max(s.max(), d.max())) + 1
            if top > len(self.last_in):
                self.last_in = np.r_[self.last_in, np.full(top - len(self.last_in), -1, dtype=np.int64)]
            idx = self.n + np.arange(len(s), dtype=np.int64)
            self.cols.append((s, d, b, np.full(len(s), self.rounds, dtype=np.int64), self.last_in[s]))
            np.maximum.at(self.last_in, d, idx)   # the round's last step into each rank
            self.n += len(s)
        self.rounds += 1

    def steps(self, tclass: int) -> Steps:
        if not self.cols:
            z = np.zeros(0, dtype=np.int64)
            return Steps(z, z.copy(), z.copy(), z.copy(), z.copy(), tclass)
        a = [np.concatenate(c) for c in zip(*self.cols)]
        return Steps(a[0], a[1], a[2], a[3], a[4], tclass)


def chunks(nbytes: int, n: int) -> np.ndarray:
    """n sizes summing to nbytes, differing by at most one byte (the first take the extra)."""
    base, extra = divmod(int(nbytes), n)
    return base + (np.arange(n) < extra).astype(np.int64)


# ---- ring ----------------------------------------------------------------------------------
def _ring_rs(b: _Builder, ranks, c: np.ndarray) -> None:
    n = len(ranks)
    idx = np.arange(n)
    for k in range(n - 1):  # member i sends chunk (i - k) mod n to i + 1
        b.round([ranks[i] for i in idx], [ranks[(i + 1) % n] for i in idx], c[(idx - k) % n])


def _ring_ag(b: _Builder, ranks, c: np.ndarray) -> None:
    n = len(ranks)
    idx = np.arange(n)
    for k in range(n - 1):  # member i owns chunk (i + 1) mod n after the reduce-scatter
        b.round([ranks[i] for i in idx], [ranks[(i + 1) % n] for i in idx], c[(idx + 1 - k) % n])


def _all_reduce_ring(b, ranks, nbytes, **_):
    c = chunks(nbytes, len(ranks))
    _ring_rs(b, ranks, c)
    _ring_ag(b, ranks, c)


def _reduce_scatter_ring(b, ranks, nbytes, **_):
    _ring_rs(b, ranks, chunks(nbytes, len(ranks)))


def _all_gather_ring(b, ranks, nbytes, **_):
    _ring_ag(b, ranks, chunks(nbytes, len(ranks)))


# ---- halving-doubling ----------------------------------------------------------------------
def _power_of_two(ranks) -> int:
    n = len(ranks)
    if n & (n - 1):
        raise ValueError(f"halving-doubling needs a power-of-two group, got {n} ranks; "
                         "use ring or hierarchical")
    return n.bit_length() - 1


def _halving(b, ranks, c):
    """Recursive halving: in round k, member i keeps the half of its block holding i and
    sends the other half to i xor d, d = n / 2^(k+1)."""
    n, pre = len(ranks), np.concatenate([[0], np.cumsum(c)])
    idx = np.arange(n)
    for k in range(_power_of_two(ranks)):
        d = n >> (k + 1)
        lo = (idx // (2 * d)) * 2 * d + np.where(idx & d, 0, d)  # the half i gives away
        b.round([ranks[i] for i in idx], [ranks[i ^ d] for i in idx], pre[lo + d] - pre[lo])


def _doubling(b, ranks, c):
    """Recursive doubling: in round k, member i sends the 2^k chunks it holds to i xor 2^k."""
    n, pre = len(ranks), np.concatenate([[0], np.cumsum(c)])
    idx = np.arange(n)
    for k in range(_power_of_two(ranks)):
        d = 1 << k
        lo = (idx // d) * d
        b.round([ranks[i] for i in idx], [ranks[i ^ d] for i in idx], pre[lo + d] - pre[lo])


def _all_reduce_hd(b, ranks, nbytes, **_):
    c = chunks(nbytes, len(ranks))
    _halving(b, ranks, c)
    _doubling(b, ranks, c)


def _reduce_scatter_hd(b, ranks, nbytes, **_):
    _halving(b, ranks, chunks(nbytes, len(ranks)))


def _all_gather_hd(b, ranks, nbytes, **_):
    _doubling(b, ranks, chunks(nbytes, len(ranks)))


# ---- hierarchical (inside a server, then across the rails) ----------------------------------
def _servers(ranks, server_of) -> list[list[int]]:
    """The group's ranks by server, each server's in group order; equal counts required."""
    if server_of is None:
        raise ValueError("hierarchical needs server_of (rank -> server)")
    by: dict[int, list[int]] = {}
    for r in ranks:
        by.setdefault(int(server_of(r)), []).append(r)
    sizes = {len(v) for v in by.values()}
    if len(sizes) != 1:
        raise ValueError(f"hierarchical needs the same number of the group's ranks on every "
                         f"server, got {sorted(len(v) for v in by.values())}")
    return [by[s] for s in sorted(by)]


def _hier(b, ranks, nbytes, server_of, parts):
    servers = _servers(ranks, server_of)
    g = len(servers[0])
    intra = chunks(nbytes, g)
    # each server runs its part at once: the rounds of all servers are merged
    def merged(phase, groups, sizes):
        sub = [_Builder() for _ in groups]
        for sb, grp, sz in zip(sub, groups, sizes):
            phase(sb, grp, sz)
        for k in range(max(sb.rounds for sb in sub)):
            rows = [c for sb in sub for c in sb.cols if c[3][0] == k]   # a round's steps, server by server
            b.round(*(np.concatenate([r[i] for r in rows]) if rows else [] for i in range(3)))
    rails = [[srv[j] for srv in servers] for j in range(g)]
    own = intra[(np.arange(g) + 1) % g]  # the chunk local GPU j owns after a ring RS
    if "rs" in parts:
        merged(_ring_rs, servers, [intra] * len(servers))
    if parts == ("rs", "ar", "ag"):
        merged(_ring_rs, rails, [chunks(x, len(rails[0])) for x in own])
        merged(_ring_ag, rails, [chunks(x, len(rails[0])) for x in own])
    elif parts == ("rs",):
        merged(_ring_rs, rails, [chunks(x, len(rails[0])) for x in own])
    elif parts == ("ag",):
        merged(_ring_ag, rails, [chunks(x, len(rails[0])) for x in own])
    if "ag" in parts:
        merged(_ring_ag, servers, [intra] * len(servers))


def _all_reduce_hier(b, ranks, nbytes, server_of=None, **_):
    _hier(b, ranks, nbytes, server_of, ("rs", "ar", "ag"))


def _reduce_scatter_hier(b, ranks, nbytes, server_of=None, **_):
    _hier(b, ranks, nbytes, server_of, ("rs",))


def _all_gather_hier(b, ranks, nbytes, server_of=None, **_):
    _hier(b, ranks, nbytes, server_of, ("ag",))


# ---- all-to-all, broadcast, send/recv --------------------------------------------------------
def _all_to_all_pairwise(b, ranks, nbytes, **_):
    n = len(ranks)
    c = chunks(nbytes, n)  # rank i's block for member j is c[j]
    for k in range(1, n):
        b.round(ranks, [ranks[(i + k) % n] for i in range(n)], [c[(i + k) % n] for i in range(n)])


def _broadcast_tree(b, ranks, nbytes, root=None, **_):
    n = len(ranks)
    start = ranks.index(root) if root is not None else 0
    order = [ranks[(start + i) % n] for i in range(n)]
    d = 1
    while d < n:  # members 0..d-1 (relative to the root) hold the data and send to i + d
        src = [order[i] for i in range(d) if i + d < n]
        b.round(src, [order[i + d] for i in range(len(src))], [nbytes] * len(src))
        d *= 2


def _broadcast_ring(b, ranks, nbytes, root=None, **_):
    n = len(ranks)
    start = ranks.index(root) if root is not None else 0
    order = [ranks[(start + i) % n] for i in range(n)]
    for i in range(n - 1):
        b.round([order[i]], [order[i + 1]], [nbytes])


def _direct(b, ranks, nbytes, **_):
    b.round([ranks[0]], [ranks[1]], [nbytes])


ALGORITHMS: dict[str, dict[str, Callable]] = {
    "all-reduce": {"ring": _all_reduce_ring, "halving-doubling": _all_reduce_hd,
                   "hierarchical": _all_reduce_hier},
    "reduce-scatter": {"ring": _reduce_scatter_ring, "halving-doubling": _reduce_scatter_hd,
                       "hierarchical": _reduce_scatter_hier},
    "all-gather": {"ring": _all_gather_ring, "halving-doubling": _all_gather_hd,
                   "hierarchical": _all_gather_hier},
    "all-to-all": {"pairwise": _all_to_all_pairwise},
    "broadcast": {"tree": _broadcast_tree, "ring": _broadcast_ring},
    "send": {"direct": _direct},
}
DEFAULT = {"all-reduce": "ring", "reduce-scatter": "ring", "all-gather": "ring",
           "all-to-all": "pairwise", "broadcast": "tree", "send": "direct"}


def expand(kind: str, ranks: Sequence[int], nbytes: int, algorithm: str | None = None, *,
           tclass: int = 0, root: int | None = None,
           server_of: Callable[[int], int] | None = None) -> Steps:
    """The steps of one collective (``kind`` as in ``OpKind.label``) on ``ranks`` (in ring
    order); for ``send``, ranks = (src, dst). Unknown kinds or algorithms are errors naming
    what is allowed."""
    if kind not in ALGORITHMS:
        raise ValueError(f"unknown collective {kind!r}; allowed: {', '.join(ALGORITHMS)}")
    algorithm = algorithm or DEFAULT[kind]
    if algorithm not in ALGORITHMS[kind]:
        raise ValueError(f"unknown algorithm {algorithm!r} for {kind}; allowed: "
                         f"{', '.join(ALGORITHMS[kind])}")
    ranks = [int(r) for r in ranks]
    if nbytes < 0 or len(set(ranks)) != len(ranks) or len(ranks) < (2 if kind == "send" else 1):
        raise ValueError(f"{kind} needs distinct ranks and nbytes >= 0, got {ranks}, {nbytes}")
    if root is not None and root not in ranks:
        raise ValueError(f"broadcast root {root} is not in the group {ranks}")
    b = _Builder()
    if len(ranks) > 1:
        ALGORITHMS[kind][algorithm](b, ranks, int(nbytes), root=root, server_of=server_of)
    return b.steps(tclass)
