"""The schedule agent driven directly (sans-I/O): every message arrives a fixed latency plus
its serialisation after it is sent, which is the ideal evaluator's FixedBandwidth network, so
the agents must end the iteration when the evaluator does: a step that left before the step it
waits for arrived (ignoring a dependency) or an op started early would end it sooner."""
import dataclasses
import heapq

import pytest

from workloads.llm import Parallelism, llm_schedule
from workloads.schedule import FixedBandwidth, TrafficClass, ideal_iteration, validate, wire_bytes
from workloads.llm.models import TransformerConfig

from dlcp_emu.host.schedule_agent import ScheduleAgent
from dlcp_emu.host.schedule_plan import make_schedule_plan
from dlcp_emu.scale import Scale

SMALL = TransformerConfig("small", hidden=256, layers=4, heads=8, ffn=688, vocab=1000)


def drive(plan, latency_ns, ns_per_byte, iterations=1):
    """Runs every rank's agent; a message arrives latency + size x ns_per_byte after it is sent."""
    agents = [ScheduleAgent(r, p, iterations) for r, p in enumerate(plan.programs)]
    events, seq = [], 0
    for a in agents:
        a.outgoing = []     # every Outgoing, in send order (as a.sent records them)

    def flush(a, now):
        nonlocal seq
        for m in a.take_sends():
            a.outgoing.append(m)
            seq += 1
            n = m.data.nbytes
            heapq.heappush(events, (now + latency_ns + n * ns_per_byte, seq, "msg", (a.rank, m)))
        t = a.next_timer()
        if t is not None:
            seq += 1
            heapq.heappush(events, (t, seq, "timer", a.rank))

    for a in agents:
        a.start(0)
        flush(a, 0)
    while events:
        now, _, what, x = heapq.heappop(events)
        if what == "timer":
            a = agents[x]
            if a.next_timer() is not None and a.next_timer() <= now:
                a.on_timer(now)
        else:
            src, m = x
            a = agents[m.dst]
            a.on_message(src, m.iteration, m.tensor_id, m.data, [], now)
        flush(a, now)
    return agents


@pytest.mark.parametrize("par", [
    Parallelism(dp=2, tp=2, pp=2, micro_batches=3, seq_len=64, gpus_per_server=2),
    Parallelism(dp=4, tp=1, pp=1, zero=1, seq_len=64, gpus_per_server=2),
    Parallelism(dp=4, tp=2, pp=1, zero=3, seq_len=64, gpus_per_server=2),
])
def test_agents_end_when_the_ideal_network_does(par):
    s = validate(llm_schedule(SMALL, par))
    plan = make_schedule_plan(s, Scale())
    agents = drive(plan, latency_ns=5_000, ns_per_byte=0)
    ideal = ideal_iteration(s, FixedBandwidth(1e30, 5e-6))
    assert all(a.done for a in agents)
    # compute times are whole ns (Scale.time_ns rounds down): at most 1 ns an op
    ns = max(len(p.deps) for p in plan.programs)
    ends = [a.iteration_records[0].comm_end_ns for a in agents]
    assert max(ends) == pytest.approx(ideal.iteration_us * 1e3, abs=ns)
    # A step leaves once its source has started the collective and holds what it forwards,
    # not when the last member arrives (the evaluator's rendezvous): a rank that arrived early
    # may end sooner, never later.
    assert all(e <= r * 1e3 + ns for e, r in zip(ends, ideal.rank_end_us))


def test_agents_send_the_closed_form_bytes_every_iteration():
    par = Parallelism(dp=2, tp=2, pp=2, micro_batches=2, seq_len=64, gpus_per_server=2)
    s = validate(llm_schedule(SMALL, par))
    agents = drive(make_schedule_plan(s, Scale()), 1000, 0, iterations=3)
    want = wire_bytes(s)
    for it in range(3):
        got = [sum(m.nbytes for m in a.sent if m.iteration == it) for a in agents]
        assert got == pytest.approx(want, abs=0.5)


def test_only_gradients_are_sent_droppable():
    par = Parallelism(dp=2, tp=2, pp=2, ep=2, zero=3, micro_batches=2, seq_len=64, gpus_per_server=2)
    s = validate(llm_schedule(dataclasses.replace(SMALL, name="moe", experts=4, top_k=2), par))
    agents = drive(make_schedule_plan(s, Scale()), 1000, 0)
    seen = {}
    for a in agents:
        assert len(a.sent) == len(a.outgoing)
        for rec, m in zip(a.sent, a.outgoing):
            seen.setdefault(TrafficClass(rec.tclass), set()).add(m.exact)
            # what blocks compute is sent first; gradients after it
            assert (m.priority == 0) == (rec.tclass != TrafficClass.GRADIENT)
    assert seen.pop(TrafficClass.GRADIENT) == {False}
    assert set(seen) == {TrafficClass.ACTIVATION, TrafficClass.ACTIVATION_GRADIENT, TrafficClass.PARAMETERS,
                         TrafficClass.ALL_TO_ALL}
    assert all(v == {True} for v in seen.values())
