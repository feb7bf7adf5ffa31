"""A rank's program (`schedule_plan.RankProgram`) as flat numpy arrays, the form the core's
schedule agent takes (dlcp_native/src/host/schedule_agent.hpp): per op its compute time,
whether it computes, its traffic class and priority; its dependencies, sends and receives as
CSR (op i's are [ptr[i], ptr[i + 1]) of the flat arrays); and the (src, tensor_id) -> gid
map of the messages it receives."""
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class RankArrays:
    rank: int
    duration_ns: np.ndarray     # int64, by op
    is_compute: np.ndarray      # uint8
    tclass: np.ndarray          # uint8 (workloads.schedule.TrafficClass)
    priority: np.ndarray        # uint8, 0..7
    dep_ptr: np.ndarray         # int64, n_ops + 1
    dep_idx: np.ndarray         # int64: local op indices
    send_ptr: np.ndarray        # int64, n_ops + 1; then one entry a send:
    send_gid: np.ndarray
    send_dst: np.ndarray
    send_nbytes: np.ndarray
    send_after: np.ndarray      # the gid it waits to have received (-1: none)
    send_tid: np.ndarray        # tensor_id on the wire
    recv_ptr: np.ndarray        # int64, n_ops + 1; then one gid a receive:
    recv_gid: np.ndarray
    key_src: np.ndarray         # the (src, tensor_id) -> gid map, entry by entry
    key_tid: np.ndarray
    key_gid: np.ndarray
    compute_ns: int

    def columns(self):
        """The arrays in the order the core's `attach_schedule_agent` takes them."""
        return (self.duration_ns, self.is_compute, self.tclass, self.priority, self.dep_ptr, self.dep_idx,
                self.send_ptr, self.send_gid, self.send_dst, self.send_nbytes, self.send_after, self.send_tid,
                self.recv_ptr, self.recv_gid, self.key_src, self.key_tid, self.key_gid)


def _i64(values):
    return np.asarray(values, dtype=np.int64).reshape(-1)


def _csr(lists):
    ptr = np.zeros(len(lists) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(x) for x in lists])
    return ptr


def rank_arrays(p):
    """The RankProgram p flattened (RankArrays as they are: `schedule_programs.Programs.arrays`)."""
    if isinstance(p, RankArrays):
        return p
    sends = [s for ss in p.sends for s in ss]
    keys = list(p.recv_gid.items())
    return RankArrays(
        rank=p.rank, duration_ns=_i64(p.duration_ns), is_compute=np.asarray(p.is_compute, dtype=np.uint8),
        tclass=np.asarray([int(c) for c in p.tclass], dtype=np.uint8), priority=np.asarray(p.priority, dtype=np.uint8),
        dep_ptr=_csr(p.deps), dep_idx=_i64([d for ds in p.deps for d in ds]),
        send_ptr=_csr(p.sends), send_gid=_i64([s.gid for s in sends]), send_dst=_i64([s.dst for s in sends]),
        send_nbytes=_i64([s.nbytes for s in sends]), send_after=_i64([s.after for s in sends]),
        send_tid=_i64([s.tid for s in sends]),
        recv_ptr=_csr(p.recvs), recv_gid=_i64([g for gs in p.recvs for g in gs]),
        key_src=_i64([k[0] for k, _ in keys]), key_tid=_i64([k[1] for k, _ in keys]),
        key_gid=_i64([g for _, g in keys]), compute_ns=int(p.compute_ns))
