"""A host agent that runs one rank's program of a training schedule (`schedule_plan`),
sans-I/O, with the surface of `agent.Worker` (start, next_timer/on_timer, take_sends,
on_message, done), so that the same stacks and both network engines run it.

An op starts when the ops it depends on have ended. Compute is a timed wait. A
communication op sends each of its messages once it has started and, for a collective's
step, once the step that step waits for has been received here; it ends once all its
messages are sent (eager, as the ideal evaluator's sends) and all it waits for have arrived.
Messages may arrive before their op starts (a faster peer): they are kept until it does.
Iterations follow one another on a rank: iteration i+1 starts when all of i's ops ended.

Only gradients may lose bytes (bounded loss): every other class is sent exact (never
droppable, the top magnitude class), so the dlcp transport delivers it whole. What a message
carries (values, or one magnitude per chunk) is drawn from a counter-based hash of (seed,
iteration, message) (`schedule_draws`), which the twin in the core draws bit for bit.
"""
import functools
import heapq
from dataclasses import dataclass

import numpy as np

from workloads.schedule import TrafficClass

from dlcp_emu.host.agent import IterationRecord, Outgoing
from dlcp_emu.host.schedule_draws import chunk_magnitudes, message_values


@dataclass
class MessageRecord:
    iteration: int
    gid: int
    src: int
    dst: int
    tclass: int
    nbytes: int
    sent_ns: int
    done_ns: int = -1
    lost_bytes: int = 0


class ScheduleAgent:
    def __init__(self, rank, program, iterations=1, payload="values", seed=0):
        self.rank, self.p, self.iterations = rank, program, iterations
        self.sizes = payload == "sizes"
        self.seed = seed
        n = len(program.deps)
        self.succ = [[] for _ in range(n)]
        for i, ds in enumerate(program.deps):
            for d in ds:
                self.succ[d].append(i)
        self.op_of_recv = {g: i for i, gs in enumerate(program.recvs) for g in gs}
        self.waiting_sends = {}        # gid -> [(op, Send)] started ops' sends waiting for it
        self.iteration_records, self.tensors = [], []
        self.sent, self.received = [], []     # MessageRecords (sender's, receiver's)
        self.busy = []                        # per iteration: ns the rank computed (union of its compute ops)
        self.outbox, self.timers = [], []
        self.arrived = {}                     # iteration -> {gid: lost bytes}
        self.done = False
        self.iteration = -1
        self._seq = 0

    # -- the sans-I/O surface ---------------------------------------------------------------
    def start(self, now):
        self._start_iteration(0, now)

    def next_timer(self):
        return self.timers[0][0] if self.timers else None

    def on_timer(self, now):
        ended = []
        while self.timers and self.timers[0][0] <= now:
            ended.append(heapq.heappop(self.timers)[2])
        self._end(ended, now)

    def take_sends(self):
        out, self.outbox = self.outbox, []
        return out

    def on_message(self, src, iteration, tid, data, lost, now):
        gid = self.p.recv_gid[(src, tid)]
        lost_bytes = sum(b - a for a, b in lost)
        self.received.append(MessageRecord(iteration, gid, src, self.rank, self.p.tclass[self.op_of_recv[gid]],
                                           0, -1, now, lost_bytes))
        self.arrived.setdefault(iteration, {})[gid] = lost_bytes
        if iteration == self.iteration:
            self._arrival(gid, now)

    # -- running the program -----------------------------------------------------------------
    def _start_iteration(self, i, now):
        self.iteration = i
        p = self.p
        self.iteration_records.append(IterationRecord(i, now, p.compute_ns))
        self.busy.append(0)
        self.busy_until = now
        self.pending_deps = [len(d) for d in p.deps]
        self.left = [len(s) + len(r) for s, r in zip(p.sends, p.recvs)]
        self.started = [False] * len(p.deps)
        self.n_left = len(p.deps)
        self.waiting_sends = {}
        if self.n_left == 0:
            self._iteration_done(now)
            return
        ended = [op for op, n in enumerate(self.pending_deps) if n == 0 and self._ready(op, now)]
        # messages of this iteration that came early count when their op starts (_ready)
        self._end(ended, now)

    def _ready(self, op, now):
        """Start op; whether it has already ended (a communication op with nothing left)."""
        p = self.p
        self.started[op] = True
        if p.is_compute[op]:
            self._seq += 1
            end = now + p.duration_ns[op]
            heapq.heappush(self.timers, (end, self._seq, op))
            self.busy[-1] += max(0, end - max(now, self.busy_until))   # the union of compute time
            self.busy_until = max(self.busy_until, end)
            return False
        got = self.arrived.get(self.iteration, {})
        for snd in p.sends[op]:
            if snd.after < 0 or snd.after in got:
                self._send(op, snd, now)
            else:
                self.waiting_sends.setdefault(snd.after, []).append((op, snd))
        self.left[op] -= sum(1 for gid in p.recvs[op] if gid in got)
        return self.left[op] == 0

    def _arrival(self, gid, now):
        op = self.op_of_recv[gid]
        if not self.started[op]:
            return      # counted when the op starts
        ended = []
        for waiter, snd in self.waiting_sends.pop(gid, ()):
            self._send(waiter, snd, now)
            if self.left[waiter] == 0 and waiter != op:
                ended.append(waiter)
        self.left[op] -= 1
        if self.left[op] == 0:
            ended.append(op)
        self._end(ended, now)

    def _send(self, op, snd, now):
        tclass = self.p.tclass[op]
        exact = tclass != TrafficClass.GRADIENT
        self.sent.append(MessageRecord(self.iteration, snd.gid, self.rank, snd.dst, tclass, snd.nbytes, now))
        wire = -(-snd.nbytes // 4) * 4       # whole float32 values
        if self.sizes:
            out = Outgoing(snd.dst, self.iteration, snd.tid, None, self.p.priority[op], exact=exact, nbytes=wire,
                           magnitudes=functools.partial(chunk_magnitudes, self.seed, self.iteration, snd.gid, wire),
                           tclass=int(tclass))
        else:
            data = np.zeros(wire // 4, dtype=np.float32) if exact else \
                message_values(self.seed, self.iteration, snd.gid, wire // 4)
            out = Outgoing(snd.dst, self.iteration, snd.tid, data, self.p.priority[op], exact=exact,
                           tclass=int(tclass))
        self.outbox.append(out)
        self.left[op] -= 1

    def _end(self, ops, now):
        """ops ended; start what waited only for them (a worklist: chains of ops that end at
        once would otherwise recurse as deep as the schedule is long)."""
        if not ops:
            return
        work = list(ops)
        while work:
            i = work.pop()
            self.n_left -= 1
            for j in self.succ[i]:
                self.pending_deps[j] -= 1
                if self.pending_deps[j] == 0 and self._ready(j, now):
                    work.append(j)
        if self.n_left == 0:
            self._iteration_done(now)

    def _iteration_done(self, now):
        rec = self.iteration_records[-1]
        rec.backward_end_ns = rec.comm_end_ns = now
        self.arrived.pop(self.iteration, None)
        if self.iteration + 1 < self.iterations:
            self._start_iteration(self.iteration + 1, now)
        else:
            self.done = True

