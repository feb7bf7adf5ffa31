"""The parameter server's agent: sums the shard of every bucket each worker pushes and sends
the sum back to every worker (the `ps` pattern; the workers are `agent.Worker`)."""
import numpy as np

from dlcp_emu.host.agent import Outgoing
from dlcp_emu.wire.layout import split_tensor_id, tensor_id
from dlcp_emu.host.compression import CompressionSpec, pack, sparse_ratio, unpack_into
from workloads import split_ranges


class ParameterServer:
    """Sums the shard every worker pushes and sends the sum back to each worker."""

    def __init__(self, rank, workers, ps_ranks, plan, iterations=3, compression=None, seed=1):
        self.rank, self.workers, self.plan = rank, tuple(workers), plan
        self.method = (compression or CompressionSpec()).method
        self.seed = seed
        self.k = list(ps_ranks).index(rank)
        self.shards = [split_ranges(b.nbytes, len(ps_ranks))[self.k] for b in plan.buckets]
        self.pending = {}        # (iteration, bucket) -> [sum, pushes seen]
        self.lost = []           # (iteration, bucket, start, stop) zero-filled, bucket bytes
        self.outbox = []
        self.served = 0
        self.expected = iterations * sum(1 for a, b in self.shards if b > a)
        self.done = self.expected == 0

    def start(self, now):
        pass

    def next_timer(self):
        return None

    def take_sends(self):
        out, self.outbox = self.outbox, []
        return out

    def on_message(self, src, iteration, tid, data, lost, now):
        bucket, _, _ = split_tensor_id(tid)
        key = (iteration, bucket)
        start, stop = self.shards[bucket]
        n = (stop - start) // 4
        # [sum, pushes seen, smallest kept ratio pushed (None: quantised)]
        entry = self.pending.setdefault(key, [np.zeros(n, dtype=np.float32), 0, 1.0])
        unpack_into(entry[0], data, add=True)
        entry[1] += 1
        if data.size != n:
            r = sparse_ratio(data, n)
            entry[2] = None if r is None or entry[2] is None else min(entry[2], r)
        self.lost.extend((iteration, bucket, start + a, start + b) for a, b in lost)
        if entry[1] == len(self.workers):
            del self.pending[key]
            priority = self.plan.buckets[bucket].priority
            out, exact = entry[0], False
            if entry[2] is None or entry[2] < 1.0:   # answer as the workers pushed
                rng = np.random.default_rng([self.seed, self.rank, iteration, bucket])
                packed, _, _ = pack(self.method, out, entry[2], rng)
                if packed is not None:
                    out, exact = packed, True
            for w in self.workers:
                self.outbox.append(Outgoing(w, iteration, tensor_id(bucket, 1, self.k), out,
                                            priority, exact=exact))
            self.served += 1
            self.done = self.served == self.expected
