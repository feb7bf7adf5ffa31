"""A data-parallel worker's collectives in the compiled core: `CoreHosts` whose workers
(`host.agent.Worker`, payload-free) hand each collective's steps to the core as they begin it
(dlcp_native/src/host/worker_collectives.hpp, the twin of `Worker.on_message`, `_progress`
and `_send_size`) and hear back once, when its last step is done. The worker keeps the rest:
compute, the bucket queue, every record. Python is then called once a collective and for
the compute timers, not once a message.

The core sends the messages `_send_size` would make: the same sizes, keys and priorities, and
the chunk magnitudes drawn from the collective's generator in the order the Python worker
draws them (all of a collective's at once: `plan.collective_magnitudes`). Event for event it
does what the Python worker did over the same endpoints (its turn is stack.py's pump, under
the major the driver would have used), so summaries are identical (tests/test_core_ring.py);
`experiment.engine.choose_ring_collectives` says which runs take this path.
"""
import numpy as np

from dlcp_emu.host.plan import collective_magnitudes
from dlcp_emu.sim.core_hosts import CoreHosts
from dlcp_emu.sim.hosts import TRAINING
from dlcp_emu.wire.layout import TCLASS_GRADIENT, tensor_id


class CoreCollectives:
    """What a Worker calls to run a collective's steps in the core (`Worker.collectives`)."""

    def __init__(self, core, sid, stack):
        self.core, self.sid, self.stack = core, sid, stack
        self.handed = None   # the collective the core is running

    def run(self, c, now):
        """Hand collective `c` over (once); True if its steps are done (c.lost has what they lost)."""
        if self.handed is c:
            return False
        w, stack, t = self.stack.agent, self.stack, c.steps   # a StepTable (workloads.patterns)
        sends = t.send[:, 0] >= 0
        dst, start, stop = (t.send[sends, i] for i in (0, 2, 3))
        nbytes = stop - start
        c.sent_bytes += int(nbytes.sum())
        c.dense_bytes += int(nbytes.sum())
        # Each destination's sender made where the first message to it would make it.
        size_of = {d: stack.sender(d).payload_size for d in dict.fromkeys(dst.tolist())}
        cs = np.array([size_of[d] for d in dst.tolist()], dtype=np.int64)
        counts = np.zeros(len(t), dtype=np.int64)
        counts[sends] = -(-nbytes // cs)
        mags = collective_magnitudes(w.trace, w.plan, c.bucket, start, nbytes, cs, c.rng)
        ptr = np.zeros(len(counts) + 1, dtype=np.int64)
        np.cumsum(counts, out=ptr[1:])
        steps = np.column_stack((t.phase, tensor_id(c.bucket.index, t.phase, t.step), t.send[:, [0, 2, 3]],
                                 t.recv[:, [0, 2, 3]]))
        lost = self.core.begin_collective(self.sid, c.iteration, c.bucket.priority, TCLASS_GRADIENT, steps, ptr,
                                          mags, now)
        if lost is None:
            self.handed = c
            return False
        c.lost.extend(lost)
        c.k = len(c.steps)
        return True

    def turn(self, now):
        """The driver calls the worker: first the collective that ended in the core, if one did."""
        lost = self.core.take_ended_collective(self.sid)
        if lost is not None:
            self.handed = None
            self.stack.agent.steps_ended(lost, now)


class CoreRingHosts(CoreHosts):
    def __init__(self, net, stacks, host_of_rank, packet_records=False):
        """stacks: {rank: HostStack with native endpoints over a payload-free Worker}."""
        super().__init__(net, stacks, host_of_rank, packet_records=packet_records)
        self.collectives = {}
        for rank, stack in stacks.items():
            sid = self.stack_id[(TRAINING, rank)]
            policy = stack.policy
            if policy.drop_order != "magnitude" or policy.class_edges is not None:
                raise ValueError("collectives in the core plan chunks by magnitude with the message's own classes; "
                                 f"drop_order {policy.drop_order!r} needs the Python worker")
            self.core.attach_collectives(sid, rank, (stack.sender_cls.bounded_loss, float(policy.droppable_fraction),
                                                     float(policy.loss_bound)))
            stack.agent.collectives = self.collectives[rank] = CoreCollectives(self.core, sid, stack)

    def _agent(self, job, rank, now):
        if job == TRAINING:
            self.collectives[rank].turn(now)
        super()._agent(job, rank, now)

    def collect(self):
        """As CoreHosts', and the deliveries the core took for the workers, into their stacks."""
        super().collect()
        for rank, stack in self.jobs[TRAINING].items():
            # As the core's columns, which the tables read as they read rows (record_columns):
            # a row a delivery cost seconds at 1024 ranks.
            stack.deliveries = self.core.collectives_deliveries(self.stack_id[(TRAINING, rank)])
