"""The exposure table (`experiment.schedule_exposure`: each rank's program played again an op
at a time on the arrival times it recorded) against its oracle, the rank's own ScheduleAgent
fed the same arrivals a message at a time (tests/exposure_oracle.py): row for row on schedules
of every shape, over iterations, on records of the core's agents (columns) and of the Python
agents (rows), and on the records of a run stopped before its ranks finished."""
import pandas as pd
import pytest

from dlcp_emu.experiment import run as experiment_run
from dlcp_emu.experiment.schedule_exposure import exposure_table
from dlcp_emu.sim.run import SimBackend

import exposure_oracle
from test_core_schedule import CASES, spec_of


def records_of(spec, preset, tmp_path, agents="core"):
    """(plan, records, scale) of a simulated run of spec."""
    backend = SimBackend(agents=agents)
    setup = experiment_run.prepare(spec, backend, preset, tmp_path)
    setup.run_dir.mkdir(parents=True, exist_ok=True)
    out = backend.execute(setup, lambda *_: None)
    return setup.plan, out.records, spec.scale


def assert_as_oracle(plan, records, scale):
    want = exposure_oracle.exposure_table(plan, records, scale)
    got = exposure_table(plan, records, scale)
    assert len(want) > 0
    pd.testing.assert_frame_equal(got, want)
    return got


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_exposure_is_the_agents_replay(case, tmp_path):
    workload, preset, payload = CASES[case]
    assert_as_oracle(*records_of(spec_of(workload, payload), preset, tmp_path))


def test_the_exposure_of_python_agents_records(tmp_path):
    workload, preset, payload = CASES["1f1b-dlcp-sizes"]
    plan, records, scale = records_of(spec_of(workload, payload), preset, tmp_path, agents="python")
    assert isinstance(records[0]["messages_received"], list)     # rows, not the core's columns
    assert_as_oracle(plan, records, scale)


@pytest.mark.parametrize("fraction", [0.3, 0.7])
def test_a_run_stopped_early_leaves_its_open_waits_out(tmp_path, fraction):
    """The records of a run stopped at a virtual time T: what arrived and began by T."""
    workload, preset, payload = CASES["1f1b-dlcp-sizes"]
    plan, records, scale = records_of(spec_of(workload, payload), preset, tmp_path)
    t = int(fraction * max(r["messages_received"]["done_ns"].max() for r in records))
    cut = []
    for r in records:
        got = r["messages_received"]
        keep = got["done_ns"] <= t
        cut.append({**r, "messages_received": {k: v[keep] for k, v in got.items()},
                    "iterations": [i for i in r["iterations"] if i["start_ns"] <= t]})
    assert any(len(c["messages_received"]["gid"]) < len(r["messages_received"]["gid"])
               for c, r in zip(cut, records))
    assert_as_oracle(plan, cut, scale)
