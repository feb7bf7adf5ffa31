"""Host agents: sans-I/O replay of one rank of data-parallel training.

A worker runs iterations: forward layer by layer (layer l waits until the previous
iteration's update of l has arrived: why front layers matter most), then backward, which
releases fused gradient buckets at their trace times; buckets are synchronised one at a time,
in order, by ring all-reduce (also within DS-Sync groups) or through parameter servers
(`parameter_server.ParameterServer`).
Compute is a timed wait (`next_timer`/`on_timer`); communication is whole messages
(`take_sends`/`on_message`) that a transport turns into packets. Nothing here reads a clock.

A message is named by (iteration, tensor_id) with tensor_id = bucket << 16 | phase << 15 |
step: phase 0 is reduce-scatter (or a PS push), 1 all-gather (or a PS pull).

With compression (`compression.CompressionSpec`) every message a rank sends is the top-k of
what it holds for that range, at the kept ratio of the bucket's collective: fixed, or set by
a DC2 controller from the delays of the rank's earlier buckets. A parameter server answers a
bucket at the ratio its workers pushed.

With a `training.Training` replica the payloads are the model's real gradients, computed at
the start of backward, and each bucket's result is applied to the replica as it arrives.
"""
import functools
from dataclasses import dataclass, field

import numpy as np

from workloads import PATTERNS

from dlcp_emu.wire.layout import TCLASS_GRADIENT, tensor_id

from dlcp_emu.host.compression import (
    CompressionSpec,
    Dc2Controller,
    pack,
    unpack_into,
    wire_ns_per_byte,
)
from dlcp_emu.host.plan import chunk_magnitudes, gradient
from dlcp_emu.host.training import Training


@dataclass
class Outgoing:
    dst: int
    iteration: int
    tensor_id: int
    data: np.ndarray | None   # float32, this message's values (dense or sparse); None: payload-free
    priority: int
    exact: bool = False       # must arrive whole: no byte may be given up (sparse messages)
    nbytes: int = 0           # payload-free: its size
    magnitudes: object = None  # payload-free: chunk_bytes -> one |gradient| per chunk
    tclass: int = TCLASS_GRADIENT  # what it carries, on the wire (switch_models.traffic codes)


@dataclass
class TensorRecord:
    iteration: int
    bucket: int
    nbytes: int
    ready_ns: int
    done_ns: int = -1
    lost_bytes: int = 0
    ratio: float = 1.0        # kept fraction of values (1.0: not compressed)
    sent_bytes: int = 0       # what this rank sent for the bucket
    dense_bytes: int = 0      # what it would have sent uncompressed
    energy_kept: float = 1.0  # share of the sent ranges' sum of squares the messages carried
    delay_ns: int = -1        # synchronisation time beyond serialising sent_bytes at the link rate


@dataclass
class IterationRecord:
    iteration: int
    start_ns: int
    compute_ns: int
    backward_end_ns: int = -1
    comm_end_ns: int = -1


@dataclass
class _Collective:
    """One bucket's synchronisation in progress at this rank."""
    iteration: int
    bucket: object
    buf: np.ndarray | None    # None: payload-free
    steps: list = field(default_factory=list)   # [(phase, step id, send Transfer|None, recv Transfer|None)]
    k: int = 0
    sent: bool = False
    lost: list = field(default_factory=list)    # byte ranges of buf zero-filled by the transport
    ratio: float = 1.0
    started_ns: int = 0
    sent_bytes: int = 0
    dense_bytes: int = 0
    energy: list = field(default_factory=lambda: [0.0, 0.0])   # kept, total sum of squares
    gathered: set = field(default_factory=set)   # ranges received in all-gather (forwarded on)
    rng: object = None        # payload-free: the chunk magnitudes' generator


class Worker:
    def __init__(self, rank, n_workers, plan, trace, pattern="ring", iterations=3, seed=1,
                 ps_ranks=(), group_size=None, keep_results=False, compression=None,
                 wire_ns_per_byte=0.0, training=None, payload="values"):
        """payload: "values" (float32 gradients, summed as they arrive) or "sizes"
        (payload-free: messages carry sizes and chunk magnitudes, nothing is summed)."""
        self.rank, self.n, self.plan, self.trace = rank, n_workers, plan, trace
        self.sizes = payload == "sizes"
        self.pattern, self.iterations, self.seed = PATTERNS[pattern], iterations, seed
        self.ps_ranks = tuple(ps_ranks)
        self.group_size = group_size
        self.keep_results = keep_results
        self.results = {}            # (iteration, bucket) -> (array, lost ranges), if kept
        self.tensors, self.iteration_records = [], []
        self.outbox, self.inbox = [], {}
        self.updated_through = [-1] * plan.n_layers   # last iteration whose update arrived
        self.timer = None
        self.done = False
        self.queue, self.active = [], None
        self.iteration = -1
        self.training = training     # host.training.Training: real gradients, or None
        self.compression = compression or CompressionSpec()
        self.residuals = {}          # (bucket, phase) -> float32 values compression left out
        # Measures every bucket's delay; sets a kept ratio below 1 only if compressing.
        self.controller = Dc2Controller(compression or CompressionSpec(), wire_ns_per_byte)
        self.ready_gradients = {}    # (iteration, bucket) -> the values `pregenerate` drew
        self.prefetch = None         # host.prefetch.Prefetch (`draw_ahead_on`)
        self.collectives = None      # what runs the collectives' steps if not this (sim/core_ring.py)

    def pregenerate(self, max_bytes):
        """Draw every iteration's synthetic gradients now, if they fit in max_bytes: in an
        emulation, before the common start, so that drawing them (~50 ms a bucket at byte
        scale 0.1) does not hold the host's packets and timers during the run. The values
        are those `gradient` draws when a collective begins. Returns the bytes drawn."""
        if self.sizes or self.training is not None:
            return 0
        total = self.iterations * sum(b.nbytes for b in self.plan.buckets)
        if total > max_bytes:
            return 0
        for it in range(self.iterations):
            for b in self.plan.buckets:
                self.ready_gradients[(it, b.index)] = gradient(self.trace, self.plan, b, self.rank, it, self.seed)
        return total

    def draw_ahead_on(self, prefetch):
        """Draw each bucket's synthetic gradients on `prefetch` (host.prefetch.Prefetch) while
        the one before is synchronised, the first from now on (in a simulation, while the rest
        of the run is built)."""
        self.prefetch = prefetch
        self._draw_ahead(0, None)

    # -- the sans-I/O surface -----------------------------------------------------------
    def start(self, now):
        self._start_iteration(0, now)

    def next_timer(self):
        return None if self.timer is None else self.timer[0]

    def on_timer(self, now):
        _, action = self.timer
        self.timer = None
        action(now)

    def take_sends(self):
        out, self.outbox = self.outbox, []
        return out

    def on_message(self, src, iteration, tid, data, lost, now):
        """A whole message arrived; `lost` lists (start, stop) byte ranges of it that the
        transport zero-filled."""
        self.inbox[(iteration, tid, src)] = (data, lost)
        self._progress(now)

    def steps_ended(self, lost, now):
        """The active collective's steps, which `collectives` ran, are done; `lost`: byte ranges zero-filled."""
        self.active.lost.extend(lost)
        self.active.k = len(self.active.steps)
        self._progress(now)

    # -- compute ---------------------------------------------------------------------------
    def _start_iteration(self, i, now):
        self.iteration = i
        self.layer = 0
        self.iteration_records.append(IterationRecord(i, now, self.plan.compute_ns))
        self._forward(now)

    def _forward(self, now):
        """Run forward through every layer whose update is in, as one timed wait."""
        fwd, need = self.plan.forward_ns, self.iteration - 1
        l, t = self.layer, 0
        while l < self.plan.n_layers and self.updated_through[l] >= need:
            t += fwd[l]
            l += 1
        if l == self.layer:
            return   # waiting for an update; _finish_collective resumes us
        self.layer = l
        self.timer = (now + t, self._forward_done)

    def _forward_done(self, now):
        if self.layer < self.plan.n_layers:
            self._forward(now)
        else:
            self._backward(now)

    def _backward(self, now):
        self.backward_start = now
        if self.training is not None:
            # Every update of the last iteration is in (forward waited for each layer's).
            self.training.compute(self.iteration)
        self.next_bucket = 0
        self._release(now)

    def _release(self, now):
        """Hand every bucket whose backward time has come to synchronisation."""
        buckets = self.plan.buckets
        while self.next_bucket < len(buckets) and \
                self.backward_start + buckets[self.next_bucket].ready_ns <= now:
            b = buckets[self.next_bucket]
            self.tensors.append(TensorRecord(self.iteration, b.index, b.nbytes, now))
            self.queue.append((self.iteration, b))
            self.next_bucket += 1
        end = self.backward_start + self.plan.backward_ns
        if self.next_bucket < len(buckets):
            self.timer = (self.backward_start + buckets[self.next_bucket].ready_ns, self._release)
        elif now < end:
            self.timer = (end, self._backward_done)
        else:
            self._backward_done(now)
        self._progress(now)

    def _backward_done(self, now):
        self.iteration_records[-1].backward_end_ns = now
        if self.iteration + 1 < self.iterations:
            self._start_iteration(self.iteration + 1, now)

    # -- communication ---------------------------------------------------------------------
    def _progress(self, now):
        while True:
            if self.active is None:
                if not self.queue:
                    return
                self.active = self._begin(*self.queue.pop(0), now)
            c = self.active
            if c.k == len(c.steps):
                self._finish_collective(now)
                continue
            if self.collectives is not None and not self.collectives.run(c, now):
                return   # its steps run in the core (sim/core_ring.py), which says when they end
            phase, step, send, recv = c.steps[c.k]
            if send is not None and not c.sent:
                self._send(c, phase, step, send)
                c.sent = True
            if recv is not None:
                key = (c.iteration, tensor_id(c.bucket.index, phase, step), recv.src)
                if key not in self.inbox:
                    return
                data, lost = self.inbox.pop(key)
                if not self.sizes:
                    region = c.buf.view(np.uint8)[recv.start:recv.stop].view(np.float32)
                    if lost and data.size != region.size:
                        raise RuntimeError(f"rank {self.rank}: a sparse message lost bytes {lost}; "
                                           "sparse messages are sent exact")
                    unpack_into(region, data, add=phase == 0)   # reduce: add; distribute: replace
                c.lost.extend((recv.start + a, recv.start + b) for a, b in lost)
                if phase == 1:
                    c.gathered.add((recv.start, recv.stop))
            c.k += 1
            c.sent = False

    def _send(self, c, phase, step, t):
        if self.sizes:
            self._send_size(c, phase, step, t)
            return
        data = c.buf.view(np.uint8)[t.start:t.stop].view(np.float32)
        packed = None
        spec = self.compression
        if spec.compresses(c.ratio):
            values, residual = data, None
            # What was left out of this range last time goes now; not for a range this rank
            # only forwards in all-gather (its owner keeps that memory).
            if spec.error_feedback and (phase == 0 or (t.start, t.stop) not in c.gathered):
                residual = self._residual(c, phase)[t.start // 4:t.stop // 4]
                values = data + residual
            rng = np.random.default_rng([self.seed, self.rank, c.iteration, c.bucket.index, phase, step])
            packed, kept, total = pack(spec.method, values, c.ratio, rng)
            c.energy[0] += kept
            c.energy[1] += total
            if residual is not None:
                sent = values.copy()
                if packed is not None:
                    unpack_into(sent, packed, add=False)
                residual[:] = values - sent
        if packed is not None and phase == 1:
            unpack_into(data, packed, add=False)   # the owner keeps what the others get
        data = data.copy() if packed is None else packed
        c.sent_bytes += data.nbytes
        c.dense_bytes += t.stop - t.start
        self.outbox.append(Outgoing(t.dst, c.iteration, tensor_id(c.bucket.index, phase, step),
                                    data, c.bucket.priority, exact=packed is not None))

    def _send_size(self, c, phase, step, t):
        """Payload-free: the size, and the magnitudes of the chunks it would carry."""
        n = t.stop - t.start
        c.sent_bytes += n
        c.dense_bytes += n
        mags = functools.partial(chunk_magnitudes, self.trace, self.plan, c.bucket, t.start, n, rng=c.rng)
        self.outbox.append(Outgoing(t.dst, c.iteration, tensor_id(c.bucket.index, phase, step), None,
                                    c.bucket.priority, nbytes=n, magnitudes=mags))

    def _residual(self, c, phase):
        """Error feedback's memory of a bucket's sends of one phase, by byte range."""
        key = (c.bucket.index, phase)
        if key not in self.residuals:
            self.residuals[key] = np.zeros(c.bucket.nbytes // 4, dtype=np.float32)
        return self.residuals[key]

    def _begin(self, iteration, bucket, now):
        if self.sizes:
            buf = None
        elif self.training is not None:
            buf = self.training.values(bucket.layer_ids)
        else:
            buf = self.ready_gradients.pop((iteration, bucket.index), None)
            if buf is None:
                buf = self._draw(iteration, bucket)
            self._draw_ahead(iteration, bucket)
        c = _Collective(iteration, bucket, buf, started_ns=now, ratio=self.controller.ratio)
        if self.sizes:
            c.rng = np.random.default_rng([self.seed, self.rank, iteration, bucket.index])
        c.steps = self.pattern.steps(self.rank, bucket.nbytes, workers=self.n, ps_ranks=self.ps_ranks,
                                     iteration=iteration, group_size=self.group_size, seed=self.seed)
        return c

    def _draw(self, iteration, bucket):
        """The bucket's synthetic gradients: drawn ahead on the prefetch, or here."""
        args = (self.trace, self.plan, bucket, self.rank, iteration, self.seed)
        return gradient(*args) if self.prefetch is None else \
            self.prefetch.take((self.rank, iteration, bucket.index), gradient, *args)

    def _draw_ahead(self, iteration, bucket):
        """Ask the prefetch for the bucket begun after `bucket` of `iteration` (None: the first):
        one at a time, in the plan's order (an index is a place), iteration after iteration."""
        if self.prefetch is None or self.sizes or self.training is not None:
            return
        nxt = 0 if bucket is None else bucket.index + 1
        if nxt == len(self.plan.buckets):
            iteration, nxt = iteration + 1, 0
        if iteration < self.iterations and (iteration, nxt) not in self.ready_gradients:
            self.prefetch.ask((self.rank, iteration, nxt), gradient, self.trace, self.plan,
                              self.plan.buckets[nxt], self.rank, iteration, self.seed)

    def _finish_collective(self, now):
        c = self.active
        self.active = None
        rec = next(r for r in reversed(self.tensors)
                   if r.iteration == c.iteration and r.bucket == c.bucket.index)
        rec.done_ns = now
        rec.lost_bytes = _covered(c.lost)
        rec.sent_bytes, rec.dense_bytes, rec.ratio = c.sent_bytes, c.dense_bytes, c.ratio
        rec.delay_ns = int(self.controller.on_sample(now - c.started_ns, c.sent_bytes))
        if c.energy[1] > 0:
            rec.energy_kept = c.energy[0] / c.energy[1]
        if self.keep_results:
            self.results[(c.iteration, c.bucket.index)] = (c.buf, sorted(c.lost))
        last_bucket = c.bucket.index == len(self.plan.buckets) - 1
        if self.training is not None:
            self.training.apply(c.bucket.layer_ids, c.buf)   # what arrived, zero-fills and all
            if last_bucket and self.training.due(c.iteration):
                self.training.evaluate(c.iteration, now)
        for lid in c.bucket.layer_ids:
            self.updated_through[lid] = c.iteration
        if last_bucket:
            # Found by number, not position: a long run's host takes closed records out.
            next(r for r in reversed(self.iteration_records)
                 if r.iteration == c.iteration).comm_end_ns = now
            if c.iteration == self.iterations - 1:
                self.done = True
        if self.timer is None and self.iteration == c.iteration + 1 and self.layer < self.plan.n_layers:
            self._forward(now)   # forward was waiting for this update


def make_worker(rank, workers, plan, trace, spec_workload, seed, ps_ranks, compression,
                link_rate_bps, mtu, keep_results=False, training=None, payload="values"):
    """A worker as both backends build it: `spec_workload` the spec's [workload] fields,
    compression a CompressionSpec, the link rate the host's (scaled), training a
    TrainingSpec (real gradients of a real model) or None (the trace's synthetic ones)."""
    w = spec_workload
    replica = None if training is None else Training(training, rank, workers, seed, w["iterations"])
    return Worker(rank, workers, plan, trace, w["pattern"], w["iterations"], seed=seed,
                  ps_ranks=ps_ranks, group_size=w.get("group_size"), keep_results=keep_results,
                  compression=compression, wire_ns_per_byte=wire_ns_per_byte(link_rate_bps, mtu),
                  training=replica, payload=payload)


def _covered(ranges):
    """Bytes covered by a list of possibly overlapping ranges."""
    total, end = 0, -1
    for a, b in sorted(ranges):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total
