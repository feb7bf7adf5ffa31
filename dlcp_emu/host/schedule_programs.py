"""The ranks' programs of a schedule plan, cut from the messages' columns when asked for:
`programs[r]` is rank r's `RankProgram` (Python lists and Send records, what the Python
agent and the emulated hosts run), `programs.arrays(r)` the same program as the flat arrays
the core's agent takes (`schedule_arrays.RankArrays`), made without a Python object a
message. A 1024-GPU LLaMA plan has ten million messages: held as columns it takes a few
hundred MB, as Python records it took 6 GB and two minutes to build."""
import numpy as np

from workloads.schedule import OpKind, TrafficClass

from dlcp_emu.host.schedule_arrays import RankArrays


class Programs:
    """RankProgram by rank, over the columns g of make_schedule_plan (numpy, in gid order:
    src, dst, nbytes, after, send_op, recv_op, tid) and the schedule s."""

    def __init__(self, s, scale, g):
        self.s, self.g = s, g
        kind = np.asarray(s.kind)
        us = np.asarray(s.duration_us, dtype=np.float64)
        # scale.time_ns an op at a time: int() of us * 1e3 * dilation, compute ops only
        self.is_compute = kind == OpKind.COMPUTE
        self.duration_ns = np.where(self.is_compute, (us * 1e3 * scale.dilation), 0.0).astype(np.int64)
        layer = np.asarray(s.layer, dtype=np.int64)
        n_layers = max(1, int(layer.max(initial=0)) + 1)
        tc = np.asarray(s.tclass)
        # What blocks compute (activations, their gradients, parameters, all-to-all) goes first;
        # gradients, which overlap backward, after: front layers first, a bucket of no one layer last.
        self.priority = np.where(tc != TrafficClass.GRADIENT, 0,
                                 np.where(layer < 0, 7, 1 + np.minimum(6, layer * 7 // n_layers))).astype(np.uint8)
        self.rank_ptr = np.asarray(s.rank_ptr, dtype=np.int64)
        self.send_order, self.send_ptr = _by_op(g["send_op"], s.n_ops)
        self.recv_order, self.recv_ptr = _by_op(g["recv_op"], s.n_ops)
        total = np.r_[0, np.cumsum(self.duration_ns)]
        self.compute_ns = total[self.rank_ptr[1:]] - total[self.rank_ptr[:-1]]

    def __len__(self):
        return self.s.n_ranks

    def __iter__(self):
        return (self[r] for r in range(len(self)))

    def most_compute(self):
        return int(self.compute_ns.max(initial=0))

    def most_receives(self):
        return int(np.diff(self.recv_ptr[self.rank_ptr]).max(initial=0))

    def _cut(self, r):
        lo, hi = int(self.rank_ptr[r]), int(self.rank_ptr[r + 1])
        s = self.s
        d0, d1 = int(s.dep_ptr[lo]), int(s.dep_ptr[hi])
        sends = self.send_order[self.send_ptr[lo]:self.send_ptr[hi]]
        recvs = self.recv_order[self.recv_ptr[lo]:self.recv_ptr[hi]]
        return lo, hi, (np.asarray(s.dep_ptr[lo:hi + 1], dtype=np.int64) - d0,
                        np.asarray(s.dep_idx[d0:d1], dtype=np.int64)), sends, recvs

    def arrays(self, r):
        """Rank r's program as RankArrays."""
        lo, hi, (dep_ptr, dep_idx), sends, recvs = self._cut(r)
        g = self.g
        return RankArrays(
            rank=r, duration_ns=self.duration_ns[lo:hi].copy(), is_compute=self.is_compute[lo:hi].astype(np.uint8),
            tclass=np.asarray(self.s.tclass[lo:hi]).astype(np.uint8), priority=self.priority[lo:hi].copy(),
            dep_ptr=dep_ptr, dep_idx=dep_idx,
            send_ptr=self.send_ptr[lo:hi + 1] - self.send_ptr[lo], send_gid=sends.copy(), send_dst=g["dst"][sends],
            send_nbytes=g["nbytes"][sends], send_after=g["after"][sends], send_tid=g["tid"][sends],
            recv_ptr=self.recv_ptr[lo:hi + 1] - self.recv_ptr[lo], recv_gid=recvs.copy(),
            key_src=g["src"][recvs], key_tid=g["tid"][recvs], key_gid=recvs.copy(),
            compute_ns=int(self.compute_ns[r]))

    def __getitem__(self, r):
        from dlcp_emu.host.schedule_plan import RankProgram, Send

        if not isinstance(r, (int, np.integer)) or not 0 <= r < len(self):
            raise IndexError(f"rank {r!r} out of 0..{len(self) - 1}")
        r = int(r)
        lo, hi, (dep_ptr, dep_idx), sends, recvs = self._cut(r)
        g = self.g
        deps = dep_idx.tolist()
        dp = dep_ptr.tolist()
        sp = (self.send_ptr[lo:hi + 1] - self.send_ptr[lo]).tolist()
        rp = (self.recv_ptr[lo:hi + 1] - self.recv_ptr[lo]).tolist()
        flat = [Send(*row) for row in zip(sends.tolist(), g["dst"][sends].tolist(), g["nbytes"][sends].tolist(),
                                          g["after"][sends].tolist(), g["tid"][sends].tolist())]
        gids = recvs.tolist()
        dur = self.duration_ns[lo:hi].tolist()
        return RankProgram(
            r, dur, self.is_compute[lo:hi].tolist(), [tuple(deps[dp[i]:dp[i + 1]]) for i in range(hi - lo)],
            [flat[sp[i]:sp[i + 1]] for i in range(hi - lo)], [gids[rp[i]:rp[i + 1]] for i in range(hi - lo)],
            np.asarray(self.s.tclass[lo:hi]).tolist(), self.priority[lo:hi].tolist(),
            dict(zip(zip(g["src"][recvs].tolist(), g["tid"][recvs].tolist()), gids)), compute_ns=sum(dur))


def _by_op(op, n_ops):
    """(gids sorted by op, stable: gid order within an op; CSR pointer over the ops)."""
    order = np.argsort(op, kind="stable").astype(np.int64)
    ptr = np.zeros(n_ops + 1, dtype=np.int64)
    ptr[1:] = np.cumsum(np.bincount(op, minlength=n_ops))
    return order, ptr
