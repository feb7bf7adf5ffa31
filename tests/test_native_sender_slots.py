"""The native sender keeps its messages in reused slots, found by key in an open-addressing
table and named by (slot, generation) in its lanes, ready heap and probe queue. These runs
exercise what that could get wrong, against the Python sender at every call (Twin): many
messages under way at once (the table grows, and finishing out of order erases from the
middle of its probe chains), then one message after another, each reusing a finished one's
slot while stale references to the finished one still sit in the lanes, over a channel that
loses, duplicates and reorders, so late answers arrive for finished messages.
"""
import pytest

from dlcp_emu.transport import MagnitudePolicy
from test_native_transport import check_outcome, run_twins


def _scenario(transport):
    burst = [dict(values=356 * 5, seed=i, priority=i % 8, at=0, iteration=i % 3, tensor_id=i, explicit=None)
             for i in range(40)]
    # One at a time, each sent about when the one before completes.
    serial = [dict(values=356 * (1 + i % 7), seed=100 + i, priority=(3 * i) % 8, at=400_000 + i * 60_000,
                   iteration=5, tensor_id=1000 + i, explicit=None) for i in range(40)]
    return dict(transport=transport, mtu=1500, policy=MagnitudePolicy(loss_bound=0.05),
                messages=burst + serial, cc=dict(ecn="dctcp", pacing=False, initial_window=10), rtt="tight",
                reorder_fraction=0.25, remember=4096,
                fwd=dict(seed=7, loss=0.05, trim=0.05, duplicate=0.05, reorder=0.1, jitter_ns=3_000),
                back=dict(seed=8, loss=0.05, duplicate=0.1, reorder=0.1))


@pytest.mark.parametrize("transport", ["reliable", "dlcp"])
def test_reused_message_slots_answer_as_the_python_sender(transport):
    sc = _scenario(transport)
    s, r = run_twins(sc)
    check_outcome(sc, s, r)
    assert s.py.losses > 0 and s.py.timeouts > 0  # stale lane entries were met
    assert s.nat.pending == s.py.pending == 0
