"""Communication patterns as pure schedules of messages (no I/O), plus numpy executors.

A schedule says who sends which byte range of a tensor to whom, step by step; transports
turn transfers into packets. The executors follow a schedule on real float32 arrays, so
tests can show the schedule really computes a sum.

- ``ring_allreduce(n, nbytes)``: the tensor is cut into n chunks; reduce-scatter (n-1 steps,
  the receiver adds) then all-gather (n-1 steps, the receiver overwrites). In reduce-scatter
  step s, rank r sends chunk (r - s) mod n to rank r+1; afterwards rank r owns the reduced
  chunk (r + 1) mod n, which all-gather passes around the ring.
- ``parameter_server(workers, ps_ranks, nbytes)``: the tensor is sharded over the PS ranks by
  byte range; every worker pushes shard k to ps_ranks[k], each PS sums what it received, then
  every PS sends its summed shard back to every worker.
- ``ds_sync_groups(n, group_size, iteration, seed)``: DS-Sync's disjoint groups, reshuffled
  every iteration.

What one rank does is ``ring_steps`` / ``ps_steps``; the whole schedules are built from them.
``PATTERNS`` names the patterns a spec may choose; the agents run ``Pattern.steps``.

Chunk boundaries fall on multiples of ``align`` bytes (default 4, one float32) so no element
is split; sizes differ by at most ``align`` bytes, the first chunks taking the extra ones,
and bytes beyond the last multiple of ``align`` go to the last chunk. Empty chunks (a tensor
smaller than n * align) send nothing: their transfers are left out of the schedule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, NamedTuple, Sequence

import numpy as np


class Step(NamedTuple):
    """One step of a rank's collective: phase 0 reduces (a received range is added), phase 1
    distributes (a received range replaces); `send` and `recv` are Transfers or None."""
    phase: int
    step: int
    send: "Transfer | None"
    recv: "Transfer | None"


class Transfer(NamedTuple):
    src: int
    dst: int
    chunk: int  # chunk (ring) or shard (PS) index
    start: int  # byte range [start, stop) of the whole tensor
    stop: int

    @property
    def nbytes(self) -> int:
        return self.stop - self.start


def split_bounds(nbytes: int, parts: int, align: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """`split_ranges` as two int64 arrays, starts and stops."""
    if parts < 1 or align < 1 or nbytes < 0:
        raise ValueError(f"need parts >= 1, align >= 1, nbytes >= 0; got {parts}, {align}, "
                         f"{nbytes}")
    units, rest = divmod(nbytes, align)
    base, extra = divmod(units, parts)
    stops = np.cumsum((base + (np.arange(parts) < extra)) * align, dtype=np.int64)
    starts = np.concatenate(([0], stops[:-1])).astype(np.int64)
    stops[-1] += rest
    return starts, stops


def split_ranges(nbytes: int, parts: int, align: int = 4) -> list[tuple[int, int]]:
    """``parts`` contiguous byte ranges covering [0, nbytes), boundaries on ``align``."""
    starts, stops = split_bounds(nbytes, parts, align)
    return list(zip(starts.tolist(), stops.tolist()))


class StepTable:
    """A rank's steps as int64 columns, read as a sequence of `Step`: a ring over 1024 ranks
    has 2046 steps a rank and a collective, which the compiled core takes as one array
    (sim/core_ring.py) and the Python worker reads a step at a time. `send` columns: dst,
    chunk, start, stop; `recv`: src, chunk, start, stop; a row of -1s where a step sends or
    receives nothing."""
    __slots__ = ("rank", "phase", "step", "send", "recv", "_rows")

    def __init__(self, rank, phase, step, send, recv):
        self.rank, self.phase, self.step, self.send, self.recv = rank, phase, step, send, recv
        self._rows = None

    def __len__(self):
        return len(self.phase)

    def __getitem__(self, k):
        if self._rows is None:   # Python ints once, not numpy scalars a field at a time
            self._rows = np.column_stack((self.phase, self.step, self.send, self.recv)).tolist()
        phase, step, dst, c, a, b, src, rc, ra, rb = self._rows[k]
        return Step(phase, step, None if dst < 0 else Transfer(self.rank, dst, c, a, b),
                    None if src < 0 else Transfer(src, self.rank, rc, ra, rb))

    def __iter__(self):
        return (self[k] for k in range(len(self)))


# ---- ring all-reduce ------------------------------------------------------------------------
@dataclass(frozen=True)
class RingSchedule:
    n: int
    nbytes: int
    chunks: tuple[tuple[int, int], ...]
    reduce_scatter: tuple[tuple[Transfer, ...], ...]  # n-1 steps; the receiver adds
    all_gather: tuple[tuple[Transfer, ...], ...]  # n-1 steps; the receiver overwrites

    def steps(self) -> Iterator[tuple[str, int, tuple[Transfer, ...]]]:
        """(phase, step index, transfers) in execution order; a step's transfers run at once."""
        for phase, steps in (("reduce_scatter", self.reduce_scatter),
                             ("all_gather", self.all_gather)):
            for i, step in enumerate(steps):
                yield phase, i, step


def ring_steps(rank: int, group: Sequence[int], nbytes: int, align: int = 4) -> StepTable:
    """One rank's share of a ring all-reduce over `group` (ranks in ring order): each step
    (phase, step id, what it sends, what it receives). Reduce-scatter step s: position p sends
    chunk p - s to p + 1; all-gather step s: chunk p + 1 - s. Computed for one rank alone:
    building the whole schedule at every rank costs O(n^2) a rank, minutes at 1024 ranks."""
    n = len(group)
    me = group.index(rank)
    starts, stops = split_bounds(nbytes, n, align)
    k = np.arange(2 * (n - 1), dtype=np.int64)
    phase = (k >= n - 1).astype(np.int64)
    offset = np.where(phase == 0, -k, 1 - (k - (n - 1)))
    return StepTable(rank, phase, k, _transfers(group[(me + 1) % n], (me + offset) % n, starts, stops),
                     _transfers(group[(me - 1) % n], (me - 1 + offset) % n, starts, stops))


def _transfers(peer, chunk, starts, stops):
    """A StepTable's columns for transfers of `chunk`s with `peer`: -1s where a chunk is empty."""
    a, b = starts[chunk], stops[chunk]
    cols = np.column_stack((np.full(len(chunk), peer, dtype=np.int64), chunk, a, b))
    cols[b <= a] = -1
    return cols


def ring_allreduce(n: int, nbytes: int, align: int = 4) -> RingSchedule:
    """The whole ring: every rank's `ring_steps`, step by step."""
    if n < 1:
        raise ValueError(f"ring all-reduce needs n >= 1 ranks, got {n}")
    group = tuple(range(n))
    per_rank = [ring_steps(r, group, nbytes, align) for r in group]
    steps = tuple(tuple(st[k].send for st in per_rank if st[k].send is not None)
                  for k in range(2 * (n - 1)))
    return RingSchedule(n, nbytes, tuple(split_ranges(nbytes, n, align)), steps[:n - 1], steps[n - 1:])


# ---- parameter server -----------------------------------------------------------------------
class Aggregate(NamedTuple):
    ps: int
    shard: int
    start: int
    stop: int
    sources: tuple[int, ...]  # workers whose pushes are summed, in this order


@dataclass(frozen=True)
class PSSchedule:
    workers: tuple[int, ...]
    ps_ranks: tuple[int, ...]
    nbytes: int
    shards: tuple[tuple[int, int], ...]  # shard k lives on ps_ranks[k]
    push: tuple[Transfer, ...]  # worker -> PS
    aggregate: tuple[Aggregate, ...]
    pull: tuple[Transfer, ...]  # PS -> worker


def _ranks(spec: int | Sequence[int], start: int, what: str) -> tuple[int, ...]:
    ranks = tuple(range(start, start + spec)) if isinstance(spec, int) else tuple(spec)
    if not ranks or len(set(ranks)) != len(ranks):
        raise ValueError(f"{what} must be a non-empty list of distinct ranks, got {spec!r}")
    return ranks


def ps_steps(rank: int, ps_ranks: Sequence[int], nbytes: int, align: int = 4) -> list[Step]:
    """One worker's share of a parameter-server exchange: push shard k to PS k (all at once,
    phase 0), then receive each summed shard back (phase 1)."""
    shards = split_ranges(nbytes, len(ps_ranks), align)
    live = [(k, ps, a, b) for k, (ps, (a, b)) in enumerate(zip(ps_ranks, shards)) if b > a]
    return ([Step(0, k, Transfer(rank, ps, k, a, b), None) for k, ps, a, b in live]
            + [Step(1, k, None, Transfer(ps, rank, k, a, b)) for k, ps, a, b in live])


def parameter_server(workers: int | Sequence[int], ps_ranks: int | Sequence[int],
                     nbytes: int, align: int = 4) -> PSSchedule:
    """Push / aggregate / pull, from every worker's `ps_steps`. Integers mean counts: workers
    0..W-1, PS ranks W..W+P-1. A rank may be both worker and PS (colocated); its transfer to
    itself is then local."""
    workers = _ranks(workers, 0, "workers")
    ps_ranks = _ranks(ps_ranks, max(workers) + 1, "ps_ranks")
    shards = split_ranges(nbytes, len(ps_ranks), align)
    per_worker = {w: ps_steps(w, ps_ranks, nbytes, align) for w in workers}
    push = tuple(st.send for w in workers for st in per_worker[w] if st.phase == 0)
    live = [(k, ps, s) for k, (ps, s) in enumerate(zip(ps_ranks, shards)) if s[1] > s[0]]
    aggregate = tuple(Aggregate(ps, k, *s, workers) for k, ps, s in live)
    pulls = {(st.recv.chunk, w): st.recv for w in workers for st in per_worker[w] if st.phase == 1}
    pull = tuple(pulls[k, w] for k, _, _ in live for w in workers)
    return PSSchedule(workers, ps_ranks, nbytes, tuple(shards), push, aggregate, pull)


# ---- DS-Sync --------------------------------------------------------------------------------
def ds_sync_groups(n: int, group_size: int, iteration: int, seed: int) -> list[tuple[int, ...]]:
    """Disjoint groups covering workers 0..n-1, reshuffled every iteration: the permutation
    comes from ``numpy.random.default_rng([seed, iteration])``, so any (seed, iteration) gives
    the same groups on every host without coordination. If ``group_size`` does not divide n,
    the last group holds the remaining n % group_size workers. Members are sorted."""
    if n < 1 or not 1 <= group_size <= n:
        raise ValueError(f"need n >= 1 and 1 <= group_size <= n, got n={n}, "
                         f"group_size={group_size}")
    if iteration < 0 or seed < 0:
        raise ValueError("iteration and seed must be >= 0")
    perm = np.random.default_rng([seed, iteration]).permutation(n)
    return [tuple(sorted(int(w) for w in perm[i:i + group_size]))
            for i in range(0, n, group_size)]


# ---- reference executors --------------------------------------------------------------------
def _as_rows(arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    if len(arrays) < 1:
        raise ValueError("need at least one array")
    rows = [np.array(a, copy=True).reshape(-1) for a in arrays]
    if len({(r.shape, r.dtype) for r in rows}) != 1:
        raise ValueError("all arrays must have the same shape and dtype")
    return rows


def _elems(t: Transfer | Aggregate, itemsize: int) -> slice:
    return slice(t.start // itemsize, t.stop // itemsize)


def execute_ring_allreduce(arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Run ``ring_allreduce`` on one array per rank; returns every rank's final array."""
    bufs = _as_rows(arrays)
    item = bufs[0].itemsize
    sched = ring_allreduce(len(bufs), bufs[0].nbytes, align=item)
    for phase, _, step in sched.steps():
        # all transfers of a step leave before any lands (what a real step does)
        payloads = [bufs[t.src][_elems(t, item)].copy() for t in step]
        for t, data in zip(step, payloads):
            if phase == "reduce_scatter":
                bufs[t.dst][_elems(t, item)] += data
            else:
                bufs[t.dst][_elems(t, item)] = data
    return [b.reshape(np.shape(arrays[0])) for b in bufs]


def execute_ps(arrays: Sequence[np.ndarray], n_ps: int) -> list[np.ndarray]:
    """Run ``parameter_server`` with len(arrays) workers and ``n_ps`` separate PS ranks;
    returns every worker's pulled array."""
    bufs = _as_rows(arrays)
    item = bufs[0].itemsize
    sched = parameter_server(len(bufs), n_ps, bufs[0].nbytes, align=item)
    inbox = {(t.dst, t.chunk, t.src): bufs[t.src][_elems(t, item)].copy() for t in sched.push}
    summed = {}
    for agg in sched.aggregate:
        acc = inbox[(agg.ps, agg.shard, agg.sources[0])].copy()
        for w in agg.sources[1:]:
            acc += inbox[(agg.ps, agg.shard, w)]
        summed[(agg.ps, agg.shard)] = acc
    out = {w: np.zeros_like(bufs[0]) for w in sched.workers}
    for t in sched.pull:
        out[t.dst][_elems(t, item)] = summed[(t.src, t.chunk)]
    return [out[w].reshape(np.shape(arrays[0])) for w in sched.workers]


# ---- the registry ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Pattern:
    """A collective pattern as the agents run it: one line in PATTERNS each."""
    name: str
    description: str
    uses_ps: bool = False     # ranks after the workers serve as parameter servers
    regroups: bool = False    # DS-Sync: disjoint groups, reshuffled every iteration

    def group(self, rank: int, workers: int, iteration: int, group_size: int | None, seed: int):
        """The ranks `rank` synchronises with in this iteration (itself included)."""
        if self.regroups:
            return next(g for g in ds_sync_groups(workers, group_size, iteration, seed) if rank in g)
        return tuple(range(workers))

    def steps(self, rank: int, nbytes: int, *, workers: int, ps_ranks: Sequence[int] = (),
              iteration: int = 0, group_size: int | None = None, seed: int = 0) -> Sequence[Step]:
        """What a worker sends and receives, step by step, to synchronise one tensor (a ring's
        steps as a StepTable: none for a group of one)."""
        if self.uses_ps:
            return ps_steps(rank, ps_ranks, nbytes)
        return ring_steps(rank, self.group(rank, workers, iteration, group_size, seed), nbytes)


PATTERNS = {p.name: p for p in (
    Pattern("ring", "ring all-reduce over all workers"),
    Pattern("ps", "parameter servers, the tensor sharded over them", uses_ps=True),
    Pattern("ds-sync", "ring all-reduce within DS-Sync groups reshuffled every iteration",
            regroups=True),
)}
