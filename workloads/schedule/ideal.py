"""The iteration time of a Schedule on an ideal network (the oracle of the closed forms).

Dependency-driven: an op starts when the ops it waits for have ended. A compute op then
takes its duration. A collective starts when every member has reached it and ends for all
of them together, after its algorithm's critical path (``workloads.collectives``). A send is
eager: it ends on its rank when its bytes have left, and its recv ends when both the bytes
have arrived and the recv was reached. Links never contend (that is the engines' job).

Two networks: ``ZeroCost()`` (communication takes no time: the compute-only bound) and
``FixedBandwidth(bytes_per_s, latency_s, algorithms=..., intra_bytes_per_s=...,
gpus_per_server=...)``: a step of b bytes takes latency + b / bandwidth (the intra-server
bandwidth between GPUs of a server, when given).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from workloads.collectives import expand
from workloads.schedule.ops import OpKind, Schedule, ScheduleError


@dataclass(frozen=True)
class ZeroCost:
    def collective_us(self, s: Schedule, op: int) -> float:
        return 0.0

    def transfer_us(self, src: int, dst: int, nbytes: int) -> float:
        return 0.0


@dataclass
class FixedBandwidth:
    bytes_per_s: float
    latency_s: float = 0.0
    algorithms: dict = field(default_factory=dict)  # kind label -> algorithm name
    intra_bytes_per_s: float | None = None
    gpus_per_server: int | None = None
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        if not self.bytes_per_s > 0 or self.latency_s < 0:
            raise ValueError("FixedBandwidth needs bytes_per_s > 0 and latency_s >= 0")

    def _server(self, rank):
        return rank // self.gpus_per_server if self.gpus_per_server else 0

    def _seconds(self, src, dst, nbytes):
        bw = np.full(len(src), float(self.bytes_per_s))
        if self.intra_bytes_per_s and self.gpus_per_server:
            same = (np.asarray(src) // self.gpus_per_server) == (np.asarray(dst) // self.gpus_per_server)
            bw[same] = self.intra_bytes_per_s
        return self.latency_s + np.asarray(nbytes) / bw

    def collective_us(self, s: Schedule, op: int) -> float:
        kind = OpKind(int(s.kind[op])).label
        g, nbytes, root = int(s.group[op]), int(s.nbytes[op]), int(s.peer[op])
        key = (kind, g, nbytes, root)
        if key not in self._cache:
            server_of = (lambda r: r // self.gpus_per_server) if self.gpus_per_server else None
            steps = expand(kind, s.groups[g], nbytes, self.algorithms.get(kind),
                           root=root if root >= 0 else None, server_of=server_of)
            self._cache[key] = float(steps.finish_times(self._seconds).max(initial=0.0)) * 1e6
        return self._cache[key]

    def transfer_us(self, src: int, dst: int, nbytes: int) -> float:
        return float(self._seconds(np.array([src]), np.array([dst]), np.array([nbytes]))[0]) * 1e6


@dataclass(frozen=True)
class IdealResult:
    iteration_us: float
    start_us: np.ndarray  # per op
    end_us: np.ndarray  # per op
    rank_end_us: np.ndarray  # per rank: when its last op ends
    compute_us: np.ndarray  # per rank: the sum of its compute durations

    def busy_fraction(self) -> np.ndarray:
        """Per rank: compute time / iteration time (1 - bubble - exposed communication)."""
        return self.compute_us / self.iteration_us if self.iteration_us > 0 else self.compute_us


def ideal_iteration(s: Schedule, network=None) -> IdealResult:
    """Runs the schedule on the ideal ``network`` (default ZeroCost()); raises ScheduleError
    naming the waiting ranks when no rank can go on (a deadlock in the schedule)."""
    net = network or ZeroCost()
    n = s.n_ops
    start, end = np.zeros(n), np.full(n, np.nan)
    kind, dur = s.kind.tolist(), s.duration_us.tolist()
    group, peer, tag, nbytes = s.group.tolist(), s.peer.tolist(), s.tag.tolist(), s.nbytes.tolist()
    dep_ptr, dep_idx, base = s.dep_ptr.tolist(), s.dep_idx.tolist(), s.rank_ptr.tolist()
    pos = base[:-1].copy()
    coll_seq: dict[tuple[int, int], int] = {}  # (rank, group) -> collectives issued so far
    arrivals: dict[tuple[int, int], list] = {}  # (group, seq) -> [(op, ready)]
    sent: dict[tuple, float] = {}  # (src, dst, tag, k) -> arrival time at dst
    send_k: dict[tuple, int] = {}
    recv_k: dict[tuple, int] = {}
    waiting: dict[int, object] = {}  # rank -> what it waits for
    work = deque(range(s.n_ranks))
    endl = [0.0] * n
    coll_key_of: dict[int, tuple] = {}
    while work:
        r = work.popleft()
        i = pos[r]
        stop = base[r + 1]
        while i < stop:
            if i in coll_key_of:  # a collective this rank already arrived at
                break
            b = base[r]
            ready = 0.0
            for j in range(dep_ptr[i], dep_ptr[i + 1]):
                e = endl[b + dep_idx[j]]
                if e > ready:
                    ready = e
            k = kind[i]
            if k == OpKind.COMPUTE:
                start[i], endl[i] = ready, ready + dur[i]
            elif k == OpKind.SEND:
                key = (r, peer[i], tag[i])
                c = send_k.get(key, 0)
                send_k[key] = c + 1
                t = net.transfer_us(r, peer[i], nbytes[i])
                start[i], endl[i] = ready, ready + t
                sent[key + (c,)] = ready + t
                if waiting.get(peer[i]) == key + (c,):
                    del waiting[peer[i]]
                    work.append(peer[i])
            elif k == OpKind.RECV:
                key = (peer[i], r, tag[i])
                c = recv_k.get(key, 0)
                arrival = sent.get(key + (c,))
                if arrival is None:
                    waiting[r] = key + (c,)
                    break
                recv_k[key] = c + 1
                start[i], endl[i] = ready, max(ready, arrival)
            else:
                g = group[i]
                c = coll_seq.get((r, g), 0)
                coll_seq[(r, g)] = c + 1
                arr = arrivals.setdefault((g, c), [])
                arr.append((i, ready))
                coll_key_of[i] = (g, c)
                if len(arr) < len(s.groups[g]):
                    waiting[r] = (g, c)
                    break
                t0 = max(a[1] for a in arr)
                t1 = t0 + net.collective_us(s, i)
                for op, _ in arr:
                    start[op], endl[op] = t0, t1
                    del coll_key_of[op]
                del arrivals[(g, c)]
                for member in s.groups[g]:
                    if member != r and waiting.get(member) == (g, c):
                        del waiting[member]
                        pos[member] += 1
                        work.append(member)
            i += 1
        pos[r] = i
    stuck = [r for r in range(s.n_ranks) if pos[r] < base[r + 1]]
    if stuck:
        r = stuck[0]
        raise ScheduleError(f"the schedule deadlocks: {len(stuck)} ranks cannot go on; "
                            f"{s.describe(pos[r])} waits for {waiting.get(r)}")
    end[:] = endl
    rank = s.rank
    rank_end = np.zeros(s.n_ranks)
    np.maximum.at(rank_end, rank, end)
    comp = np.bincount(rank, weights=np.where(s.kind == OpKind.COMPUTE, s.duration_us, 0.0),
                       minlength=s.n_ranks)
    return IdealResult(float(end.max(initial=0.0)), start, end, rank_end, comp)
