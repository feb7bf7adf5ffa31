"""A spec of several jobs ([[jobs]], experiment/jobs_spec.py): each job checked as its
one-job spec would be, placed before anything runs (explicit hosts, packed, spread, random),
and bad input refused with one clear error naming the field."""
import copy

import pytest

from dlcp_emu.experiment.jobs_spec import wire_id
from dlcp_emu.experiment.spec import SpecError, parse_spec
from dlcp_emu.host.background import JOB as BACKGROUND_JOB

TOPOLOGY = {"kind": "leaf-spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 3, "host_rate_bps": 10e9,
            "oversubscription": 2.0}


def ring(workers, **more):
    return {"model": "resnet50", "pattern": "ring", "workers": workers, "iterations": 2, **more}


def spec(*jobs, **top):
    return {"name": "jobs", "topology": TOPOLOGY, "switch": {"preset": "fifo"},
            "jobs": [dict(j) for j in jobs], **top}


def problems(raw):
    with pytest.raises(SpecError) as e:
        parse_spec(raw)
    return e.value.problems


def test_policies_place_jobs_on_the_hosts_left():
    s = parse_spec(spec({"name": "a", "placement": "spread", "workload": ring(2)},
                        {"name": "b", "placement": "packed", "workload": ring(3)},
                        {"name": "c", "placement": ["h3"], "workload": ring(1)}))
    hosts = {j.name: j.hosts for j in s.jobs}
    # explicit first (h3), then in file order: spread deals over the leaves (h1 h2 h3 | h4 h5 h6)
    assert hosts == {"a": ("h1", "h4"), "b": ("h2", "h5", "h6"), "c": ("h3",)}
    assert [j.wire_id for j in s.jobs] == [0, 2, 3]
    assert s.workload["workers"] == 2 and s.jobs[1].spec.workload["workers"] == 3


def test_random_placement_is_the_seeds_draw():
    def hosts(seed):
        return parse_spec(spec({"name": "a", "placement": "random", "seed": seed, "workload": ring(3)})).jobs[0].hosts
    assert hosts(5) == hosts(5)
    assert len(set(hosts(5))) == 3
    assert len({hosts(s) for s in range(8)}) > 1


def test_wire_ids_skip_the_background_job():
    ids = [wire_id(i) for i in range(5)]
    assert BACKGROUND_JOB not in ids and ids[0] == 0 and len(set(ids)) == 5


def test_a_jobs_transport_is_laid_over_the_specs():
    s = parse_spec(spec({"name": "a", "workload": ring(2), "transport": {"loss_bound": 0.05}},
                        {"name": "b", "workload": ring(2)},
                        transport={"kind": "dlcp", "loss_bound": 0.02}))
    assert [(j.spec.transport["kind"], j.spec.transport["loss_bound"]) for j in s.jobs] == \
        [("dlcp", 0.05), ("dlcp", 0.02)]


def test_overlapping_explicit_placements_are_one_error():
    p = problems(spec({"name": "a", "placement": ["h1", "h2"], "workload": ring(2)},
                      {"name": "b", "placement": ["h2", "h3"], "workload": ring(2)}))
    assert p == ["jobs[1].placement: host h2 is also placed for jobs[0]; explicit placements must not overlap "
                 "(a host runs one job)"]


def test_more_ranks_than_hosts_is_one_error():
    p = problems(spec({"name": "a", "workload": ring(4)}, {"name": "b", "workload": ring(3)}))
    assert p == ["jobs[1].workload.workers: job 'b' has 3 rank(s) but only 2 host(s) are left of 6; "
                 "fewer ranks, or a larger topology"]


def test_an_unknown_job_in_a_classifier_rule_is_one_error():
    raw = spec({"name": "a", "workload": ring(2)}, {"name": "b", "workload": ring(2)})
    raw["switch"] = {"preset": "fifo", "scheduler": "strict",
                     "classifier": {"name": "job", "n_classes": 2, "jobs": {"a": 0, "llm": 1}}}
    assert problems(raw) == ["switch.classifier.jobs: no job 'llm' in this spec; jobs: a, b"]


def test_job_rules_become_classes_by_wire_id():
    raw = spec({"name": "a", "workload": ring(2)}, {"name": "b", "workload": ring(2)})
    raw["switch"] = {"preset": "fifo", "scheduler": "strict",
                     "classifier": {"name": "job", "n_classes": 3, "jobs": {"b": 0, "a": 1}}}
    s = parse_spec(raw)
    # a is id 0, b id 2; id 1 (the background) takes other_class, the last class
    assert s.switch["classifier"] == {"name": "job", "n_classes": 3, "classes": [1, 2, 0]}


@pytest.mark.parametrize("change, expected", [
    (lambda r: r.update(workload=ring(2)), "workload: a spec of [[jobs]] has no [workload]"),
    (lambda r: r["jobs"][0].update(colour="red"), "jobs[0].colour: unknown field"),
    (lambda r: r["jobs"][1].update(name="a"), "jobs: the name 'a' is given to more than one job"),
    (lambda r: r["jobs"][0].update(placement="round-robin"), "jobs[0].placement: 'round-robin' is not allowed"),
    (lambda r: r["jobs"][0].update(placement=["h9", "h1"]), "jobs[0].placement: no host 'h9'"),
    (lambda r: r["jobs"][0].update(placement=["h1"]), "jobs[0].placement: 1 host(s) for 2 rank(s)"),
    (lambda r: r["jobs"][0]["workload"].update(placement="spread"),
     "jobs[0].workload.placement: a job is placed by jobs[0].placement"),
    (lambda r: r["jobs"][0]["workload"].update(workers=0), "jobs[0].workload.workers: 0 is not allowed"),
    (lambda r: r["jobs"][1].update(transport={"loss_bound": 2}), "jobs[1].transport.loss_bound: 2 is not allowed"),
    (lambda r: r.update(jobs=[]), "jobs: must be 1..16 tables"),
])
def test_bad_jobs_name_their_field(change, expected):
    raw = copy.deepcopy(spec({"name": "a", "workload": ring(2)}, {"name": "b", "workload": ring(2)}))
    change(raw)
    p = problems(raw)
    assert len(p) == 1 and p[0].startswith(expected), p


def test_a_job_classifier_in_a_one_job_spec_is_an_error():
    raw = {"name": "one", "topology": TOPOLOGY, "workload": ring(2),
           "switch": {"preset": "fifo", "classifier": {"name": "job", "jobs": {"a": 0}}}}
    assert "switch.classifier: the job classifier names jobs of [[jobs]]; this spec has one [workload]" \
        in problems(raw)
