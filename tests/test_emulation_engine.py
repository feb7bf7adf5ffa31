"""A transport written in Python alone, emulated on Mininet: under `auto` every host process
runs its endpoints on the Python data plane and says why, the switches staying native; under
`native` the run is refused by name before anything starts."""
import os
from pathlib import Path

import pytest

from dlcp_emu.emu.run import EmuBackend
from dlcp_emu.experiment.run import run
from dlcp_emu.experiment.spec import parse_spec

pytestmark = [pytest.mark.root]

TESTS = Path(__file__).parent


def test_a_python_only_transport_runs_on_the_python_data_plane(python_only_transport, tmp_path, monkeypatch):
    # The host processes load the transport from their config: its module must import there.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")])))
    spec = parse_spec({
        "name": "py-transport", "seed": 2, "time_dilation": 4.0, "byte_scale": 0.002, "time_limit_s": 30,
        "topology": {"kind": "star", "hosts": 2, "host_rate_bps": 10e9},
        "workload": {"model": "resnet50", "pattern": "ring", "workers": 2, "iterations": 2},
        "transport": {"kind": python_only_transport}})
    summary, tables = run(spec, EmuBackend(), "fifo", tmp_path / "auto", log=lambda m: None)
    assert summary["completed"], (summary.get("stopped_because"), summary.get("host_exits"))
    assert summary["transport"] == "py-reliable" and len(tables["iterations"]) == 2 * 2
    why = "transport 'py-reliable' has no native twin"
    assert summary["data_planes"]["hosts"] == {0: ["python", why], 1: ["python", why]}
    assert summary["data_planes"]["switches"] == {"s1": ["native", "native"]}
    with pytest.raises(ValueError, match="engine: 'native' cannot run transport 'py-reliable' .*; use 'auto' "
                                         "or 'python'"):
        run(spec.with_field("engine", "native"), EmuBackend(), "fifo", tmp_path / "native", log=lambda m: None)
    assert not (tmp_path / "native").exists()
