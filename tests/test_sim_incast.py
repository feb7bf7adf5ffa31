"""The 8-to-1 incast of docs/baselines.md in the simulator (`tools/incast.py`): with gradient
values every flow is 8 lanes, and a lane's lost tail has no later packet to evidence it. The
tail-loss probe repairs those tails: no flow waits the RTO, and the last ends within 1% of the
ideal. The Python endpoints (the oracle) and the core's give the same run."""
import pytest

from dlcp_emu.tools.incast import run


@pytest.mark.parametrize("endpoints", ["native", "python"])
def test_an_incast_into_32_frames_ends_without_a_timeout(endpoints):
    r = run(32, values="gradients", endpoints=endpoints)
    assert len(r["fct_ms"]) == 8 and r["drops"] > 100
    assert r["timeouts"] == 0 and r["probes"] > 0
    assert max(r["fct_ms"]) < 1.01 * r["ideal_ms"]


def test_dctcp_keeps_a_deep_buffer_from_dropping():
    """DCTCP's marks (above 15 frames) hold the queue where NewReno's slow start overflows
    1000 frames."""
    assert run(1000, congestion="dctcp")["drops"] == 0
    assert run(1000, congestion="newreno")["drops"] > 1000
