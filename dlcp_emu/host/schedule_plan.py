"""Per-rank programs of a training schedule (`workloads.schedule.Schedule`): what each rank's
`ScheduleAgent` runs, derived once for the whole run.

Every collective instance is expanded into its algorithm's point-to-point steps
(`workloads.schedule.matching.steps`) and every send is matched with its recv; each step or
message gets a global number (gid). A rank's op then knows the messages it sends (with the
step each waits for: the one its source received before, e.g. ring step k needs step k-1's
receive) and the messages it waits to receive. Times and sizes are scaled here (integer ns,
bytes x byte_scale).

A message's tensor_id on the wire is layer << 16 | n, n counting the messages of that layer
between the same two ranks (the switches read the high 16 bits as the layer, as for the
data-parallel plans); the receiver maps (src, tensor_id) back to the gid.
"""
from dataclasses import dataclass

import numpy as np

from workloads.schedule import OpKind, TrafficClass, collectives, messages, steps

from dlcp_emu.wire.layout import TENSOR_LAYER_SHIFT

MAX_LAYER_MESSAGES = 1 << TENSOR_LAYER_SHIFT


@dataclass(frozen=True)
class Send:
    gid: int
    dst: int
    nbytes: int          # scaled, as the schedule says (the wire rounds up to whole float32 values)
    after: int           # the gid this send waits to have received (-1: none)
    tid: int             # tensor_id on the wire


@dataclass
class RankProgram:
    """One rank's ops in issue order (local indices)."""
    rank: int
    duration_ns: list     # compute ops' time (0 for communication)
    is_compute: list
    deps: list            # [tuple of local op indices]
    sends: list           # [[Send]]
    recvs: list           # [[gid]]
    tclass: list          # TrafficClass of each op (NONE for compute)
    priority: list        # 0..7 of each op's messages: 0 (first) but for gradients (1..7)
    recv_gid: dict        # (src, tid) -> gid of a message this rank receives
    compute_ns: int = 0   # the sum of the rank's compute


@dataclass(frozen=True)
class SchedulePlan:
    programs: tuple       # RankProgram by rank
    gid_tclass: np.ndarray   # the traffic class of every message
    gid_src: np.ndarray
    gid_dst: np.ndarray
    gid_nbytes: np.ndarray
    n_ranks: int
    compute_ns: int       # the largest rank's compute (the summary's compute time)
    schedule: object = None
    gid_dim: tuple = ()   # the parallelism of every message: its group's kind (tp, pp, dp, ep, ...),
                          # a send's pp when a pp group holds both ranks, else p2p

    @property
    def n_messages(self):
        return len(self.gid_src)

    @property
    def critical_steps(self):
        """The messages a rank waits for in an iteration, the most of any rank: the steps
        whose every receive pays a host's wait (`fidelity_estimate`; a data-parallel worker's
        is its buckets' collective steps, the same count)."""
        return max((sum(map(len, p.recvs)) for p in self.programs), default=0)


def make_schedule_plan(s, scale, algorithms=None, server_of=None):
    """The programs of a valid schedule `s` on a run of this `scale` (dlcp_emu.scale.Scale).
    algorithms: {collective kind: algorithm} (workloads.collectives.ALGORITHMS)."""
    n_ops = s.n_ops
    op_sends = [[] for _ in range(n_ops)]
    op_recvs = [[] for _ in range(n_ops)]
    src, dst, nbytes, tclass, layer_of, dims = [], [], [], [], [], []
    op_layer = s.layer.tolist()

    def add(op_s, op_r, a, b, n, after, tc, dim):
        gid = len(src)
        dims.append(dim)
        src.append(a)
        dst.append(b)
        nbytes.append(max(1, scale.nbytes(n)))
        tclass.append(tc)
        layer_of.append(op_layer[op_s])
        op_sends[op_s].append((gid, after))
        op_recvs[op_r].append(gid)
        return gid

    for _, row in collectives(s).iterrows():
        st = steps(s, row, algorithms, server_of)
        op_of = dict(zip(s.groups[int(row["group"])], (int(o) for o in row["ops"])))
        dim = _kind(s.group_names[int(row["group"])])
        g0 = len(src)
        for k, (a, b, n, d) in enumerate(zip(st.src.tolist(), st.dst.tolist(), st.nbytes.tolist(),
                                              st.dep.tolist())):
            add(op_of[a], op_of[b], a, b, n, g0 + d if d >= 0 else -1, int(row["tclass"]), dim)
    pp = [set(g) for g, name in zip(s.groups, s.group_names) if _kind(name) == "pp"]
    for m in messages(s).itertuples(index=False):
        a, b = int(m.src), int(m.dst)
        add(int(m.send_op), int(m.recv_op), a, b, int(m.nbytes), -1, int(m.tclass),
            "pp" if any(a in g and b in g for g in pp) else "p2p")
    tids = _tensor_ids(src, dst, layer_of)
    programs = tuple(_program(s, r, op_sends, op_recvs, src, dst, nbytes, tids, scale)
                     for r in range(s.n_ranks))
    return SchedulePlan(programs, np.asarray(tclass, dtype=np.int8), np.asarray(src), np.asarray(dst),
                        np.asarray(nbytes, dtype=np.int64), s.n_ranks,
                        max((p.compute_ns for p in programs), default=0), s, tuple(dims))


def _kind(group_name):
    """`tp[3]` -> `tp` (workloads.schedule.layout's names; an imported group's name whole)."""
    return group_name.split("[", 1)[0]


def _tensor_ids(src, dst, layer_of):
    count, out = {}, []
    for a, b, layer in zip(src, dst, layer_of):
        code = min(max(layer + 1, 0), (1 << 16) - 1)   # -1 (no layer): 0
        n = count.get((a, b, code), 0)
        if n >= MAX_LAYER_MESSAGES:
            raise ValueError(f"more than {MAX_LAYER_MESSAGES} messages of layer {layer} from rank {a} "
                             f"to rank {b} in one iteration: they cannot be told apart on the wire")
        count[(a, b, code)] = n + 1
        out.append(code << TENSOR_LAYER_SHIFT | n)
    return out


def _program(s, r, op_sends, op_recvs, src, dst, nbytes, tids, scale):
    lo, hi = int(s.rank_ptr[r]), int(s.rank_ptr[r + 1])
    kinds = s.kind[lo:hi].tolist()
    dur = [scale.time_ns(us) if k == OpKind.COMPUTE else 0 for k, us in zip(kinds, s.duration_us[lo:hi].tolist())]
    deps = [tuple(s.dep_idx[s.dep_ptr[i]:s.dep_ptr[i + 1]].tolist()) for i in range(lo, hi)]
    n_layers = max(1, int(s.layer.max(initial=0)) + 1)
    tcl = s.tclass[lo:hi].tolist()
    # What blocks compute (activations, their gradients, parameters, all-to-all) goes first;
    # gradients, which overlap backward, after: front layers first, a bucket of no one layer last.
    prio = [0 if tc != TrafficClass.GRADIENT else 7 if layer < 0 else 1 + min(6, layer * 7 // n_layers)
            for tc, layer in zip(tcl, s.layer[lo:hi].tolist())]
    sends = [[Send(g, dst[g], nbytes[g], after, tids[g]) for g, after in op_sends[i]] for i in range(lo, hi)]
    recvs = [list(op_recvs[i]) for i in range(lo, hi)]
    recv_gid = {(src[g], tids[g]): g for rs in recvs for g in rs}
    return RankProgram(r, dur, [k == OpKind.COMPUTE for k in kinds], deps, sends, recvs, tcl, prio,
                       recv_gid, compute_ns=sum(dur))
