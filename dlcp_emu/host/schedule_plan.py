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

from workloads.schedule import messages

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
    programs: object      # RankProgram by rank (schedule_programs.Programs: made when asked for)
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
        return self.programs.most_receives()


def make_schedule_plan(s, scale, algorithms=None, server_of=None):
    """The programs of a valid schedule `s` on a run of this `scale` (dlcp_emu.scale.Scale).
    algorithms: {collective kind: algorithm} (workloads.collectives.ALGORITHMS).

    Built with numpy a collective at a time, each shape of collective expanded once
    (`schedule_steps`; a 1024-GPU LLaMA has ten million messages):
    the messages' columns in gid order, each rank's program cut from them when asked for."""
    from dlcp_emu.host.schedule_programs import Programs
    from dlcp_emu.host.schedule_steps import collective_steps

    cols = {k: [] for k in ("src", "dst", "nbytes", "after", "send_op", "recv_op", "tclass")}
    dims, n = [], 0
    op_of = np.full(s.n_ranks, -1, dtype=np.int64)
    for row, st in collective_steps(s, algorithms, server_of):
        ranks = np.asarray(s.groups[int(row.group)], dtype=np.int64)
        op_of[ranks] = np.asarray(row.ops, dtype=np.int64)
        a, b, dep = (np.asarray(x, dtype=np.int64) for x in (st.src, st.dst, st.dep))
        for k, v in (("src", a), ("dst", b), ("nbytes", np.asarray(st.nbytes, dtype=np.int64)),
                     ("after", np.where(dep >= 0, n + dep, -1)), ("send_op", op_of[a]), ("recv_op", op_of[b]),
                     ("tclass", np.full(len(a), int(row.tclass), dtype=np.int64))):
            cols[k].append(v)
        dims.append((_kind(s.group_names[int(row.group)]), len(a)))
        n += len(a)
    pp = [set(g) for g, name in zip(s.groups, s.group_names) if _kind(name) == "pp"]
    m = messages(s)
    if len(m):
        a, b = m["src"].to_numpy(np.int64), m["dst"].to_numpy(np.int64)
        for k, v in (("src", a), ("dst", b), ("nbytes", m["nbytes"].to_numpy(np.int64)),
                     ("after", np.full(len(a), -1, dtype=np.int64)), ("send_op", m["send_op"].to_numpy(np.int64)),
                     ("recv_op", m["recv_op"].to_numpy(np.int64)), ("tclass", m["tclass"].to_numpy(np.int64))):
            cols[k].append(v)
        dims += [("pp" if any(x in g and y in g for g in pp) else "p2p", 1) for x, y in zip(a.tolist(), b.tolist())]
    g = {k: np.concatenate(v) if v else np.zeros(0, dtype=np.int64) for k, v in cols.items()}
    # scale.nbytes, a message at a time: int() of the scaled size, at least one byte
    g["nbytes"] = np.maximum(1, (g["nbytes"].astype(np.float64) * scale.byte_scale).astype(np.int64))
    g["tid"] = _tensor_ids(g["src"], g["dst"], np.asarray(s.layer, dtype=np.int64)[g["send_op"]])
    programs = Programs(s, scale, g)
    return SchedulePlan(programs, g["tclass"].astype(np.int8), g["src"], g["dst"], g["nbytes"], s.n_ranks,
                        programs.most_compute(), s, _dims(dims))


def _kind(group_name):
    """`tp[3]` -> `tp` (workloads.schedule.layout's names; an imported group's name whole)."""
    return group_name.split("[", 1)[0]


def _dims(runs):
    """gid_dim from (kind, count) runs in gid order: an array of the kinds' names."""
    names = list(dict.fromkeys(k for k, _ in runs))
    code = np.repeat(np.asarray([names.index(k) for k, _ in runs], dtype=np.int64),
                     np.asarray([c for _, c in runs], dtype=np.int64))
    return np.asarray(names, dtype=object)[code] if len(code) else np.zeros(0, dtype=object)


def _tensor_ids(src, dst, layer):
    """Each message's tensor_id: its layer's code (layer + 1, clipped to 16 bits) << the
    shift | n, n counting the messages before it in gid order with the same src, dst, code."""
    code = np.clip(layer + 1, 0, (1 << 16) - 1)
    if not len(code):
        return code
    key = (src * (int(max(src.max(), dst.max())) + 1) + dst) << 16 | code
    order = np.argsort(key, kind="stable")
    ks = key[order]
    first = np.r_[True, ks[1:] != ks[:-1]]
    start = np.maximum.accumulate(np.where(first, np.arange(len(ks)), 0))
    count = np.empty_like(key)
    count[order] = np.arange(len(ks)) - start
    over = np.flatnonzero(count >= MAX_LAYER_MESSAGES)
    if len(over):
        i = int(over[0])
        raise ValueError(f"more than {MAX_LAYER_MESSAGES} messages of layer {int(layer[i])} from rank {int(src[i])} "
                         f"to rank {int(dst[i])} in one iteration: they cannot be told apart on the wire")
    return code << TENSOR_LAYER_SHIFT | count
