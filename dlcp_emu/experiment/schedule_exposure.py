"""Which parallelism a schedule rank's exposed communication waited on (TP, PP, DP, ...).

A rank is exposed while none of its compute runs; a wait ends when a message arrives that
lets compute start (or ends the iteration), and is laid to that message's dimension
(`SchedulePlan.gid_dim`). The records say when each message arrived, not which op a rank
waited on, so each rank's own agent is run again (`ScheduleAgent`, the same program) on the
arrival times it recorded, its compute taking the planned times: in the simulator that is
the run itself (the waits add up to the exposed time, `exposed_table`); in the emulator,
whose compute timers fired late, the dimensions' shares of it."""
import numpy as np
import pandas as pd

from dlcp_emu.host.schedule_agent import ScheduleAgent

COLUMNS = ["rank", "iteration", "dim", "exposed_s"]


def exposure_table(plan, records, scale):
    """Per rank, iteration and dimension the seconds (real-world) the rank waited on it."""
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
    arrivals = sorted((m[7], m[0], m[1]) for m in rec["messages_received"])   # (done_ns, iteration, gid)
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


def exposure_by_dim(exposure, measured):
    """{dim: mean seconds a rank waited on it an iteration}, over `measured` (the exposed
    table's rank and iteration rows: the iterations the statistics count)."""
    if not len(exposure) or not len(measured):
        return {}
    keep = exposure.merge(measured[["rank", "iteration"]], on=["rank", "iteration"])
    per = keep.pivot_table(index=["rank", "iteration"], columns="dim", values="exposed_s", aggfunc="sum")
    per = per.reindex(pd.MultiIndex.from_frame(measured[["rank", "iteration"]])).fillna(0.0)
    return {dim: float(np.mean(per[dim])) for dim in per.columns}
