"""What the core's stacks compute that Python computes elsewhere: the flow hash of a packet
(`hash` of its 5-tuple, which ECMP and PIAS key on), and what they refuse."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dlcp_native.host as compiled

from dlcp_emu.experiment.spec import load_spec
from dlcp_emu.sim.run import build
from tiers import examples

MAX = (1 << 61) - 2      # CPython hashes an int n in 0 .. 2**61 - 2 to n itself


@settings(max_examples=examples(500), deadline=None)
@given(st.lists(st.integers(0, MAX), max_size=6))
def test_the_flow_hash_is_pythons_hash_of_the_tuple(items):
    assert compiled.python_tuple_hash(items) == hash(tuple(items))


def test_five_tuples_as_the_hosts_hash_them():
    for t in [(167772161, 167772162, 17, 9796, 9796), (167772161, 167772164, 6, 0xFFFF, 5001), ()]:
        assert compiled.python_tuple_hash(list(t)) == hash(t)


def test_an_item_the_hash_does_not_cover_is_refused():
    with pytest.raises(ValueError, match="out of 0 .. 2\\*\\*61 - 2"):
        compiled.python_tuple_hash([-1])


def test_the_core_takes_only_compiled_endpoints():
    from dlcp_emu.sim.core_hosts import CoreHosts
    spec = load_spec("examples/default.toml").with_field("workload.iterations", 1)
    _, _, net, hosts = build(spec, "dlcp", hosts="python")
    with pytest.raises(ValueError, match="rank 0: the core runs native endpoints only, got 'python'"):
        CoreHosts(net, hosts.stacks, {r: hosts.host_of[0][r] for r in hosts.stacks})


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(st.floats(0, 1e6, allow_nan=False, allow_subnormal=True), min_size=1, max_size=300))
def test_octiles_are_numpys_quantiles_to_the_bit(values):
    """The chunk classes of a message are its octiles: the fast path must be np.quantile."""
    import numpy as np

    from dlcp_emu.transport.message import octiles
    m = np.asarray(values, dtype=np.float64)
    assert octiles(m).tobytes() == np.quantile(m, np.arange(1, 8) / 8).tobytes()
