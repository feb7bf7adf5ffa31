"""The machine's busy share over an emulated run (emu/cpu.py): /proc/stat's ticks over a
window that is not exactly the run's, so a saturated machine may read past its capacity."""
import os

from dlcp_emu.emu.cpu import cpu_use


def test_a_share_is_busy_seconds_over_the_machines_capacity():
    cores = os.cpu_count() or 1
    use = cpu_use([], {}, [], busy_s=0.5 * cores * 2.0, steal_s=0.1 * cores * 2.0, duration=2.0)
    assert use["cpu_busy_share"] == 0.5
    assert abs(use["cpu_steal_share"] - 0.1) < 1e-12


def test_a_tick_past_capacity_reads_as_a_saturated_machine_not_more():
    cores = os.cpu_count() or 1
    use = cpu_use([], {}, [], busy_s=cores * 2.0 + 0.02, steal_s=None, duration=2.0)
    assert use["cpu_busy_share"] == 1.0
    assert use["cpu_steal_share"] is None
