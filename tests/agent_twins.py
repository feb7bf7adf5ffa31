"""An agent's run in the core against its Python oracle over the same core endpoints
(`SimBackend(agents=...)`): the helper of test_core_ring and test_core_schedule."""
import pandas as pd

from dlcp_emu.experiment import run as experiment_run
from dlcp_emu.sim.engines import WALL_CLOCK_KEYS
from dlcp_emu.sim.run import SimBackend


def simulate(spec, preset, tmp_path, agents):
    return experiment_run.run(spec, SimBackend(agents=agents), preset, tmp_path / agents, log=lambda *_: None)


def assert_core_runs_as_python(spec, preset, tmp_path, what, tables):
    """The run with `what` ("ring collectives", "schedule agents") in the core and in Python:
    the same summary but for wall-clock keys, and every table in `tables` row for row."""
    py, py_frames = simulate(spec, preset, tmp_path, "python")
    core, core_frames = simulate(spec, preset, tmp_path, "core")
    assert core["engine_note"].endswith(f"{what} in the core"), core["engine_note"]
    assert py["engine_note"].endswith(f"{what} in Python (asked for)")
    assert core["completed"] and core["events"] > 0
    assert {k: v for k, v in core.items() if k not in WALL_CLOCK_KEYS} == \
        {k: v for k, v in py.items() if k not in WALL_CLOCK_KEYS}
    for name in tables:
        pd.testing.assert_frame_equal(core_frames[name].reset_index(drop=True),
                                      py_frames[name].reset_index(drop=True), obj=name)
