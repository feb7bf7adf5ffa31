"""Which CPUs an emulation's processes run on.

The switches run as real-time tasks and wake thousands of times a second each; sharing
cores with them, the hosts' agents and the background processes were preempted at every
wake-up (~780 times a second a host) and waited on. With the switches on cores of their own
and the hosts' and background processes on the others, the default spec's dlcp preset came
out 534-596 ms (median 542) against 571-603 (median 599) over five runs each, alternated, the
simulator saying 536; fifo moved within its noise (801-809 against 789-819, the simulator
774), and the machine was 5-10 points less busy.
"""
import os


def split_cpus(cpus=None):
    """(switch CPUs, host CPUs), each a sorted list, of the CPUs this process may use: the
    upper half (at least one) for the switches, the rest for the hosts; one CPU is shared."""
    cpus = sorted(os.sched_getaffinity(0) if cpus is None else cpus)
    if len(cpus) < 2:
        return cpus, cpus
    half = len(cpus) // 2
    return cpus[half:], cpus[:half]
