"""The hosts' transport timers in the simulator (sim/hosts.py `_arm`, `_timer`; the core's
`Network::stack_timer` is held to the same by tests/test_sim_engines.py, events counted).

A sender's timeout moves later with every ACK. The timer must fire once, at the timeout armed
last, and the loop must not keep an event for every move: that left ~600 stale events a host
on the heap, whose every push and pop then missed the cache."""
import pytest
from topologies import build

from dlcp_emu.sim.engines import make_network
from dlcp_emu.sim.hosts import SimHosts

JOB, RANK = 1, 0
KEY = (JOB, RANK)


class ScriptedTimeout:
    """An endpoint whose next timeout is what the test sets. It sends nothing; a poll at or
    after the timeout is the timer firing (a real sender then arms its next one)."""

    def __init__(self):
        self.timeout = None
        self.fired = []

    def poll(self, now):
        if self.timeout is not None and now >= self.timeout:
            self.fired.append(now)
            self.timeout = None
        return []

    def next_timeout(self):
        return self.timeout


@pytest.fixture(params=["python", "native"])
def hosts(request):
    net = make_network(build("star", hosts=2, host_rate_bps=1e9), "fifo", request.param)
    hosts = SimHosts(net, {}, {})
    hosts.add_job(JOB, {RANK: ScriptedTimeout()}, {RANK: "h1"}, udp_port=9798)
    return hosts


def arm(hosts, timeout, now=0):
    """What an ACK does: the endpoint's timeout moves, then the host flushes it."""
    hosts.endpoints[KEY].timeout = timeout
    hosts._flush(KEY, now)


def test_a_timeout_moved_later_keeps_one_event_and_fires_at_the_last(hosts):
    for t in range(1_000, 50_001, 1_000):
        arm(hosts, t)
    assert hosts.loop.pending() == 1
    hosts.loop.run()
    assert hosts.endpoints[KEY].fired == [50_000]
    assert hosts.loop.events == 2       # the first event, which waits on to the last timeout
    assert hosts.loop.pending() == 0


def test_a_timeout_moved_earlier_fires_then_and_not_again(hosts):
    arm(hosts, 5_000)
    arm(hosts, 1_000)
    hosts.loop.run()
    assert hosts.endpoints[KEY].fired == [1_000]


def test_a_timeout_armed_again_after_firing_fires_again(hosts):
    arm(hosts, 5_000)
    arm(hosts, 1_000)          # the event at 5000 is stale from here
    hosts.loop.run(until=1_000)
    arm(hosts, 5_000, now=1_000)   # armed anew at the stale event's time: fires once there
    arm(hosts, 7_000, now=1_000)
    hosts.loop.run()
    assert hosts.endpoints[KEY].fired == [1_000, 7_000]


def test_a_timeout_moved_later_while_waiting_fires_at_the_new_one(hosts):
    arm(hosts, 1_000)
    hosts.loop.run(until=500)
    arm(hosts, 3_000, now=500)
    hosts.loop.run()
    assert hosts.endpoints[KEY].fired == [3_000]
