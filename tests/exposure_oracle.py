"""The exposure replay as it was first written, a message at a time through each rank's own
`ScheduleAgent`: the oracle that `experiment.schedule_exposure` (an op at a time) must agree
with row for row (tests/test_schedule_exposure.py)."""
import pandas as pd

from dlcp_emu.experiment.schedule_exposure import COLUMNS
from dlcp_emu.host.schedule_agent import ScheduleAgent


def exposure_table(plan, records, scale):
    rows = []
    for rec in records:
        if "messages_received" not in rec or not rec.get("iterations"):
            continue
        waits = _replay(plan, rec)
        rows += [(rec["rank"], it, dim, ns * scale.s_per_ns) for (it, dim), ns in sorted(waits.items())]
    return pd.DataFrame(rows, columns=COLUMNS)


def _replay(plan, rec):
    rank = rec["rank"]
    program = plan.programs[rank]
    origin = {gid: key for key, gid in program.recv_gid.items()}   # gid -> (src, tensor_id)
    its = sorted(rec["iterations"], key=lambda r: r["iteration"])
    agent = ScheduleAgent(rank, program, iterations=len(its), payload="sizes")
    got = rec["messages_received"]
    if isinstance(got, dict):     # the core's columns
        got = list(zip(*(got[k].tolist() for k in ("iteration", "gid", "src", "dst", "tclass", "nbytes",
                                                     "sent_ns", "done_ns", "lost_bytes"))))
    arrivals = sorted((m[7], m[0], m[1]) for m in got)   # (done_ns, iteration, gid)
    waits, i, now = {}, 0, its[0]["start_ns"]
    agent.start(now)
    idle = None if agent.timers else now
    while not agent.done:
        timer = agent.next_timer()
        arrival = arrivals[i][0] if i < len(arrivals) else None
        if timer is None and arrival is None:
            break                                   # the run stopped before the rank finished
        iteration = agent.iteration
        if timer is not None and (arrival is None or timer <= arrival):
            now, blame = timer, "compute"           # a compute op ended (a timer of no wait)
            agent.on_timer(now)
        else:
            now, it, gid = arrivals[i]
            i += 1
            blame = plan.gid_dim[gid]
            agent.on_message(*origin[gid][:1], it, origin[gid][1], None, (), now)
        agent.take_sends()
        if idle is not None and (agent.timers or agent.iteration != iteration or agent.done):
            key = (iteration, blame)
            waits[key] = waits.get(key, 0) + now - idle
            idle = None if agent.timers or agent.done else now
        elif idle is None and not agent.timers:
            idle = now
    return waits
