"""The job classifier (several jobs on one fabric) and the per-job port counters, on both
switch engines: a job given the top class goes first under strict priority, DRR's weights
share a link between jobs by weight, and every port counts each job's packets and drops so
that the jobs add up to the port."""
import pytest

from dlcp_native import NativeSwitch
from switch_models import Packet, PortConfig, SpecError, Switch
from switch_models.packet import NO_JOB

GBPS = 1e9
ENGINES = [Switch, NativeSwitch]


def one_port(engine, classifier, scheduler, buffer_bytes=1_000_000):
    pipeline = {"load_balancer": "single", "classifier": classifier, "queue_manager": "droptail",
                "scheduler": scheduler}
    return engine("s", {1: PortConfig(10 * GBPS), 2: PortConfig(GBPS, buffer_bytes=buffer_bytes)},
                  {"h2": (2,)}, pipeline)


def drain(sw):
    out, t = [], sw.next_event_time()
    while t is not None:
        out.extend(p for _, p in sw.poll(t))
        t = sw.next_event_time()
    return out


@pytest.mark.parametrize("engine", ENGINES)
def test_a_job_in_the_top_class_goes_first(engine):
    sw = one_port(engine, {"name": "job", "classes": [1, 1, 0], "n_classes": 2}, "strict")
    for uid in range(20):   # job 0 and job 2 interleaved, all at once, job 0's first
        sw.receive(Packet(1500, "h2", uid=uid, dlcp=True, job=2 if uid % 2 else 0), 1, 0)
    order = [p.job for p in drain(sw)]
    assert order[1:11] == [2] * 10   # the first had started alone; then job 2's, then job 0's
    assert order[11:] == [0] * 9


@pytest.mark.parametrize("engine", ENGINES)
def test_drr_weights_share_a_link_between_jobs(engine):
    sw = one_port(engine, {"name": "job", "classes": [0, 1, 1], "n_classes": 2},
                  {"name": "drr", "quantum": 1500, "weights": [3, 1]})
    for uid in range(400):
        sw.receive(Packet(1500, "h2", uid=uid, dlcp=True, job=0 if uid % 2 else 2), 1, 0)
    first = [p.job for p in drain(sw)][:200]   # while both are backlogged
    assert first.count(0) / first.count(2) == pytest.approx(3, rel=0.05)


@pytest.mark.parametrize("engine", ENGINES)
def test_jobs_past_the_rules_and_without_a_job_go_to_other_class(engine):
    sw = one_port(engine, {"name": "job", "classes": [0], "n_classes": 3, "other_class": 1}, "strict")
    for uid, job in enumerate([5, NO_JOB, 0]):
        sw.receive(Packet(1500, "h2", uid=uid, dlcp=True, job=job), 1, 0)
    assert [(p.job, p.cls) for p in drain(sw)] == [(5, 1), (0, 0), (NO_JOB, 1)]


@pytest.mark.parametrize("engine", ENGINES)
def test_per_job_counters_add_up_to_the_port(engine):
    sw = one_port(engine, "single", "fifo", buffer_bytes=15_000)
    jobs = [0, 2, NO_JOB, 2, 0, 3]
    for uid in range(60):   # a burst ten times the buffer: most are dropped
        sw.receive(Packet(500 + uid * 10, "h2", uid=uid, dlcp=True, job=jobs[uid % len(jobs)]), 1, 0)
    drain(sw)
    port = sw.counters()["ports"][2]
    per = port["jobs"]
    assert sorted(per) == [0, 2, 3, NO_JOB]
    assert sum(r[0] for r in per.values()) == port["tx_packets"]
    assert sum(r[1] for r in per.values()) == port["tx_bytes"]
    assert sum(r[2] for r in per.values()) == sum(port["drops"].values()) > 0
    assert sum(r[3] for r in per.values()) == port["drop_bytes"]
    for job in set(jobs):   # every packet of a job is counted once: sent or dropped
        assert per[job][0] + per[job][2] == sum(1 for u in range(60) if jobs[u % len(jobs)] == job)


def test_bad_job_classes_name_the_parameter():
    with pytest.raises(SpecError, match="classes"):
        one_port(Switch, {"name": "job", "classes": [0, 2], "n_classes": 2}, "strict")
