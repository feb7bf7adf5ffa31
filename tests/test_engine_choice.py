"""One place chooses the engine (`experiment.engine.choose_engine`), from the stage and
transport registries: a switch pipeline or a transport written in Python alone runs on the
Python path under `auto`, saying why, and is refused by name under `native`; a simulated run
of a Python-only transport goes through whole on the Python hosts. And the transport a
pipeline runs with under `auto` is the one its preset declares, not one read off its name."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from dlcp_emu.experiment.engine import choose_engine
from dlcp_emu.experiment.spec import SpecError, load_spec
from dlcp_emu.host.stack import HostStack
from dlcp_emu.sim.engines import WALL_CLOCK_KEYS as WALL
from dlcp_emu.experiment.run import run
from dlcp_emu.sim.run import SimBackend
from dlcp_emu.transport.registry import TRANSPORTS, Transport, as_config, register
from switch_models import QUEUE_MANAGERS, pipeline as pipelines
from switch_models.queue_managers import DropTail

TESTS = Path(__file__).parent
SMALL = {"time_limit_s": 60, "byte_scale": 0.002, "time_dilation": 4.0, "workload.iterations": 2}


def small(**fields):
    spec = load_spec("examples/default.toml")
    for name, value in {**SMALL, **fields}.items():
        spec = spec.with_field(name, value)
    return spec


def test_a_part_with_a_twin_is_native_under_auto_and_every_part_is_python_when_asked():
    assert choose_engine("auto", pipeline="dlcp") == ("native", "every stage of the pipeline is native")
    assert choose_engine("auto", transport="dlcp") == ("native", "the host's endpoints are all native")
    assert choose_engine("native", transport="reliable") == ("native", "asked for")
    assert choose_engine("python", pipeline="dlcp") == ("python", "asked for")
    assert choose_engine("auto", transport="tcp") == ("kernel", "transport tcp: the kernel's")
    with pytest.raises(ValueError, match="engine must be one of auto, native, python, got 'fast'"):
        choose_engine("fast", pipeline="fifo")


def test_a_python_only_stage_or_transport_goes_to_python_under_auto_and_is_refused_under_native(
        python_only_stage, python_only_transport):
    mine = {"preset": "fifo", "queue_manager": python_only_stage(QUEUE_MANAGERS, DropTail)}
    engine, why = choose_engine("auto", pipeline=mine)
    assert engine == "python" and "queue manager 'mine' is a Python-only stage" in why
    with pytest.raises(ValueError, match="engine: 'native' cannot run this pipeline .*'mine'"):
        choose_engine("native", pipeline=mine)
    engine, why = choose_engine("auto", transport=python_only_transport)
    assert (engine, why) == ("python", "transport 'py-reliable' has no native twin")
    with pytest.raises(ValueError, match=r"engine: 'native' cannot run transport 'py-reliable' \(transport "
                                         r"'py-reliable' has no native twin; transports with one: reliable, "
                                         r"dlcp\); use 'auto' or 'python'"):
        choose_engine("native", transport=python_only_transport)


@pytest.mark.slow   # two whole runs on Python hosts; the choice of engine is the fast tests' above and below
def test_a_python_only_transport_runs_simulated_on_python_hosts_as_the_reliable_one_does(
        python_only_transport, tmp_path):
    mine, _ = run(small(**{"transport.kind": python_only_transport}), SimBackend(), "fifo", tmp_path / "mine",
                  log=lambda *_: None)
    assert mine["completed"] and mine["transport"] == "py-reliable"
    assert (mine["engine"], mine["engine_note"]) == (
        "native", "every stage of the pipeline is native; hosts' endpoints in Python (transport 'py-reliable' "
                  "has no native twin)")
    # The same endpoints under the reliable name, on Python hosts: the same run.
    ref, _ = run(small(**{"transport.kind": "reliable"}), SimBackend(hosts="python"), "fifo", tmp_path / "ref",
                 log=lambda *_: None)
    drop = WALL | {"transport"}
    assert {k: v for k, v in mine.items() if k not in drop} == {k: v for k, v in ref.items() if k not in drop}
    with pytest.raises(ValueError, match="engine: 'native' cannot run transport 'py-reliable'"):
        run(small(**{"transport.kind": python_only_transport, "engine": "native"}), SimBackend(), "fifo",
            tmp_path / "native", log=lambda *_: None)


def test_a_transport_registered_since_the_spec_module_loaded_is_a_transport_kind(python_only_transport):
    assert small(**{"transport.kind": python_only_transport}).transport["kind"] == "py-reliable"
    TRANSPORTS.pop(python_only_transport)
    with pytest.raises(SpecError, match="transport.kind: 'py-reliable' is not allowed; must be one of tcp, "
                                        "reliable, dlcp, auto"):
        small(**{"transport.kind": python_only_transport})


def test_a_registered_transport_is_loaded_again_in_another_process_from_its_config(python_only_transport):
    assert as_config("dlcp") == {}     # built in: every process has it
    cfg = as_config(python_only_transport)
    assert cfg["transport_entry"]["sender"] == "python_transport:PyReliableSender"
    code = ("import json, sys; from dlcp_emu.transport.registry import adopt, transport; "
            "adopt(json.loads(sys.argv[1])); t = transport('py-reliable'); "
            "print(t.sender.__name__, t.receiver.__name__, t.native)")
    out = subprocess.run([sys.executable, "-c", code, json.dumps(cfg)], capture_output=True, text=True,
                         check=True, env={"PYTHONPATH": str(TESTS)}).stdout
    assert out.split() == ["PyReliableSender", "PyReliableReceiver", "False"]


def test_a_stack_of_native_endpoints_refuses_a_transport_without_twins_by_name(python_only_transport):
    with pytest.raises(ValueError, match="endpoints: transport 'py-reliable' has no native twin; use 'python'"):
        HostStack(0, None, python_only_transport, endpoints="native")


def test_a_name_taken_is_refused(python_only_transport):
    with pytest.raises(ValueError, match="transport name 'dlcp' is taken"):
        register(Transport("dlcp", "another dlcp"))
    with pytest.raises(ValueError, match="transport name 'auto' is taken"):
        register(Transport("auto", "auto"))
    with pytest.raises(ValueError, match="transport 'half' needs sender and receiver"):
        register(Transport("half", "a sender alone", sender=TRANSPORTS["reliable"].sender))


@pytest.fixture
def paired(monkeypatch):
    """A preset named like DLCP that declares no pairing, and one named otherwise that does."""
    monkeypatch.setitem(pipelines.PRESETS, "dlcp-like", dict(pipelines.PRESETS["fifo"]))
    monkeypatch.setitem(pipelines.PRESETS, "mlt", dict(pipelines.PRESETS["dlcp"]))
    monkeypatch.setitem(pipelines.PAIRED_TRANSPORTS, "mlt", "dlcp")


def test_auto_runs_the_transport_the_preset_declares_not_one_its_name_suggests(paired):
    spec = small(**{"transport.kind": "auto"})
    assert [spec.transport_for(p) for p in ("dlcp", "dlcp-nospray", "fifo", "ndp", "dlcp-like", "mlt")] == [
        "dlcp", "dlcp", "reliable", "reliable", "reliable", "dlcp"]
    # A preset with stages overridden keeps its pairing; a pipeline of stages alone declares none.
    assert spec.transport_for({"preset": "dlcp", "scheduler": "fifo"}) == "dlcp"
    stages = {k: v for k, v in pipelines.PRESETS["dlcp"].items()}
    assert spec.transport_for(stages) == "reliable"
    assert small(**{"transport.kind": "tcp"}).transport_for("dlcp") == "tcp"
