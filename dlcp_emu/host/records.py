"""A host's records taken out of it as they close, for a driver that streams them to disk
(the emulator's host process, `emu/hostd.py`), so that the agent keeps in memory only what
is still open however long the run. The simulator never takes them: its agents keep every
record to the end, as they always did, and its tables are built from those lists.

Kinds (the data is what the records held before: the tables read the same fields):
`iteration` (its communication ended), `tensor` (synchronised), `delivery` (a message
received whole), `send` (a message the sender learnt complete), `accuracy` (an evaluation of
a training worker), `lost` (a range a parameter server zero-filled); a schedule's rank
(`ScheduleAgent`): `iteration` with the ns it computed in it (`busy_ns`), `message_sent`
and `message_received` (its MessageRecords as tuples, the simulator's `messages_sent` and
`messages_received`).
"""
from dlcp_emu.host.agent import Worker
from dlcp_emu.host.schedule_agent import ScheduleAgent


def take_closed(agent, host, final=False):
    """[(kind, data)] of the records closed since the last call, removed from the agent and
    its host (a `HostStack`, or anything with its `deliveries` and `completions` lists).
    final: every record, open ones too (the process is ending)."""
    out = []
    if isinstance(agent, ScheduleAgent):
        out += [(kind, {**data, "busy_ns": agent.busy[data["iteration"]]})
                for kind, data in _take(agent.iteration_records, "iteration", final, lambda r: r.comm_end_ns >= 0)]
        out += [("message_sent", tuple(m.__dict__.values())) for m in _pop_all(agent.sent)]
        out += [("message_received", tuple(m.__dict__.values())) for m in _pop_all(agent.received)]
    elif isinstance(agent, Worker):
        # An iteration is closed once its backward pass and its communication have ended:
        # the agent still writes the open ones (the current, and the one still syncing).
        out += _take(agent.iteration_records, "iteration", final,
                     lambda r: r.comm_end_ns >= 0 and r.backward_end_ns >= 0)
        out += _take(agent.tensors, "tensor", final, lambda r: r.done_ns >= 0)
        if agent.training is not None:
            out += [("accuracy", e) for e in _pop_all(agent.training.evaluations)]
    else:
        out += [("lost", x) for x in _pop_all(agent.lost)]
    out += [("delivery", d) for d in _pop_all(host.deliveries)]
    out += [("send", r.__dict__) for r in _pop_all(host.completions)]
    return out


def _take(records, kind, final, closed):
    """Take the closed records out of a list (in place: the agent holds it), in order."""
    taken, kept = [], []
    for r in records:
        (taken if final or closed(r) else kept).append(r)
    records[:] = kept
    return [(kind, r.__dict__) for r in taken]


def _pop_all(items):
    out = items[:]
    del items[:]
    return out
