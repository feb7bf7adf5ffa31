"""What a host's transport endpoints look like to a driver when an agent sits on them: a
receiver, a sender per destination, and the agent's part (`agent_turn` at `agent_timer`,
`completed` for the senders' finished tensors, `completed_rows` for the same as a compiled
core's rows). `HostStack` (training) and
`BackgroundEndpoint` (background flows) share it; the simulator's core runs the same parts
(`sim.core_hosts`)."""
from dlcp_emu.transport import SendResult


class AgentEndpoints:
    """poll and next_timeout of an endpoint surface, for a class with `receiver`, `senders`
    ({dst: sender}) and the agent's part above."""

    def poll(self, now):
        self.agent_turn(now)
        out = self.receiver.poll(now)
        for sender in self.senders.values():
            out.extend(sender.poll(now))
            self.completed(sender.take_completed())
        return out

    def next_timeout(self):
        times = [self.agent_timer(), self.receiver.next_timeout()]
        times += [s.next_timeout() for s in self.senders.values()]
        return min((t for t in times if t is not None), default=None)

    def completed_rows(self, rows):
        """`completed` for a compiled core's rows (SendResult's fields in order); an endpoint
        that reads them only later may keep the rows instead (HostStack)."""
        self.completed([SendResult(*r) for r in rows])
