"""Background flows payload-free (`BackgroundEndpoint(payload="sizes")`, what the simulator's
core runs): the same packets as with their zeros, header for header, without the bytes."""
import pytest

from dlcp_emu.experiment.spec import load_spec
from dlcp_emu.host.background import BackgroundEndpoint
from dlcp_emu.experiment.run import run
from dlcp_emu.sim.run import SimBackend

FLOWS = [(0, 1, 10_001, 7), (0, 2, 3, 8), (0, 1, 1_447, 9)]   # odd sizes: a partial last value


def sent(payload):
    ep = BackgroundEndpoint(0, FLOWS, mtu=1500, endpoints="native", payload=payload)
    ep.agent_turn(0)
    return ep.poll(0)


def test_payload_free_flows_send_the_packets_their_zeros_would():
    with_values, sized = sent("values"), sent("sizes")
    assert {h.tensor_id for h, _ in with_values} >= {7, 8}   # as far as the window lets them
    assert [h for h, _ in sized] == [h for h, _ in with_values]          # sizes, classes, offsets
    assert all(len(p) == h.payload_len for h, p in with_values)
    assert all(not p for _, p in sized)                                   # no bytes carried


def test_a_payload_free_receiver_keeps_no_bytes():
    rx = BackgroundEndpoint(1, [], endpoints="native", payload="sizes").receiver
    for h, p in sent("sizes"):
        if h.dst_rank == 1:
            rx.receive(h, p, 1)
    done = rx.take_delivered()
    assert sorted(d.tensor_id for d in done) == [7, 9] and all(d.data is None for d in done)


def test_payload_free_flows_are_for_native_endpoints_only():
    with pytest.raises(ValueError, match="payload must be values, or sizes with native endpoints"):
        BackgroundEndpoint(0, FLOWS, endpoints="python", payload="sizes")
    with pytest.raises(ValueError, match="payload must be values"):
        BackgroundEndpoint(0, FLOWS, endpoints="native", payload="zeros")


def test_the_simulator_runs_background_flows_payload_free_in_the_core(tmp_path):
    spec = load_spec("examples/default.toml").with_field("byte_scale", 0.002) \
        .with_field("workload.iterations", 1).with_field("engine", "native")
    assert spec.background
    runs = {hosts: run(spec, SimBackend(hosts=hosts), "fifo", tmp_path / hosts, log=lambda *_: None)
            for hosts in ("core", "python")}
    for hosts, sized in (("core", True), ("python", False)):
        endpoints = runs[hosts][1]["hosts"].background.values()
        assert {ep.sized for ep in endpoints} == {sized}
        assert sum(len(ep.finished) for ep in endpoints) > 0
    assert len(runs["core"][1]["background"]) == len(runs["python"][1]["background"])

