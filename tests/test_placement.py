"""emu/placement.py: the switches get the upper half of the CPUs (at least one), the hosts
the rest; a single CPU is shared."""
import pytest

from dlcp_emu.emu.placement import split_cpus


@pytest.mark.parametrize("cpus, switches, hosts", [
    ([0], [0], [0]),
    ([0, 1], [1], [0]),
    ([0, 1, 2], [1, 2], [0]),
    ([3, 1, 0, 2], [2, 3], [0, 1]),
])
def test_split(cpus, switches, hosts):
    assert split_cpus(cpus) == (switches, hosts)


def test_split_of_this_process_covers_what_it_may_use():
    import os
    s, h = split_cpus()
    assert sorted(set(s) | set(h)) == sorted(os.sched_getaffinity(0))
