"""Schedule agents in the compiled core: `CoreHosts` whose training stacks each run the twin of
`host.schedule_agent.ScheduleAgent` (dlcp_native/src/host/schedule_agent.hpp) beside their
endpoints. The core then makes, sends and takes in every message of the schedule itself and
calls Python once per rank, when its agent is done (to stop the run once every agent is);
the records come out as columns at the end.

Event for event this is what `CoreHosts` does with the Python agent (the core's agent turn is
stack.py's pump and agent_turn, under the major the driver would have used), so summaries are
identical (tests/test_core_schedule.py, tests/test_schedule_run.py).
"""
import inspect

from dlcp_emu.host.schedule_arrays import rank_arrays
from dlcp_emu.sim.core_hosts import CoreHosts
from dlcp_emu.sim.hosts import TRAINING
from dlcp_emu.transport.native import cc_settings, rtt_settings


class CoreScheduleAgent:
    """What the run reads of a rank's agent in the core: `done` and the iterations ended as it
    runs, and at the end its records (`records`, the keys `sim.run` records of a ScheduleAgent)."""

    def __init__(self, rank, program, iterations=1, payload="values", seed=0):
        self.rank, self.iterations = rank, iterations
        self.arrays = rank_arrays(program)
        self.sizes = payload == "sizes"
        self.seed = seed
        self._core = self._sid = None

    def attach(self, core, sid, stack):
        """Adopted by stack `sid` of the core (a `NativeNetwork`), with the senders `stack`
        (its HostStack) would make."""
        policy = stack.policy
        if policy.drop_order != "magnitude" or policy.class_edges is not None:
            raise ValueError("a schedule agent in the core plans chunks by magnitude with the message's own "
                             f"classes; drop_order {policy.drop_order!r} needs the Python agent")
        reorder = inspect.signature(stack.sender_cls).parameters["reorder_fraction"].default
        spec = (stack.sender_cls.bounded_loss, stack.mtu, cc_settings(stack.settings.cc()),
                rtt_settings(stack.settings.rtt(stack.link_rate_bps, stack.mtu)), float(reorder),
                float(policy.droppable_fraction), float(policy.loss_bound))
        a = self.arrays
        core.attach_schedule_agent(sid, self.rank, a.columns(), a.compute_ns, self.iterations, self.sizes,
                                   self.seed, spec)
        self._core, self._sid = core, sid

    @property
    def done(self):
        return self._core.agent_state(self._sid)[0]

    def iterations_ended(self):
        return self._core.agent_state(self._sid)[2]

    def records(self):
        """{iterations, busy_ns, messages_sent, messages_received, deliveries} as sim.run's
        _records gives them of a ScheduleAgent and its HostStack, the messages and deliveries
        as the core's columns (`experiment.record_columns` reads either form). Once, at the
        run's end: the core hands its message and delivery rows over and keeps none."""
        r = self._core.take_agent_records(self._sid)
        it = r["iterations"]
        names = list(it)
        return {"iterations": [dict(zip(names, row)) for row in zip(*(it[k].tolist() for k in names))],
                "busy_ns": r["busy_ns"].tolist(),
                "messages_sent": r["sent"], "messages_received": r["received"], "deliveries": r["deliveries"]}


class CoreScheduleHosts(CoreHosts):
    def __init__(self, net, stacks, host_of_rank, packet_records=False):
        """stacks: {rank: HostStack with native endpoints whose agent is a CoreScheduleAgent}."""
        super().__init__(net, stacks, host_of_rank, packet_records=packet_records)
        for rank, stack in stacks.items():
            sid = self.stack_id[(TRAINING, rank)]
            stack.agent.attach(self.core, sid, stack)
            self.net.on_agent(sid, lambda now, rank=rank: self._check_done((TRAINING, rank)))

    def start(self):
        now = self.loop.now
        for key, ep in self.endpoints.items():
            job, rank = key
            if job != TRAINING:
                if hasattr(ep, "start"):
                    ep.start(now)
                self._flush(key, now)
            elif self.core.start_agent(self.stack_id[key], now, self.loop.major):
                self._check_done(key)

    def collect(self):
        for key, sid in self.stack_id.items():
            if key[0] != TRAINING:
                self._collect(key, sid)
