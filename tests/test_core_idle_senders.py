"""A host's stack in the core polls only the senders that can have work (HostStack::poll,
dlcp_native/src/host/host_stack.cpp): those given a message or an answer since their last
poll and those whose timeout has come; Python's stack polls every one. Here each host sends
to every other in turn, so it has a sender per peer and most of them are idle at any moment,
over a star whose small buffers lose packets at the incasts (retransmission, tail-probe and
reordering timers), paced or not (the senders' release times). The run with the endpoints in
the core must be the Python stacks' run packet for packet: every packet each stack sent and
received, its senders' state, its deliveries and completions, compared after every slice of
virtual time.
"""
import dataclasses

import numpy as np
import pytest

from dlcp_emu.host.agent import Outgoing
from dlcp_emu.host.packet_log import PacketLog
from dlcp_emu.host.stack import HostStack
from dlcp_emu.sim.core_hosts import CoreHosts
from dlcp_emu.sim.engines import make_network
from dlcp_emu.sim.hosts import SimHosts
from dlcp_emu.transport.settings import TransportSettings
from dlcp_emu.wire import DLCP_UDP_PORT
from topologies import Link, build

HOSTS = 10
ROUNDS = 24          # messages a host sends: to each peer in turn, one every GAP_NS
GAP_NS = 60_000
INCAST_EVERY = 6     # every sixth round every host sends to rank 0 at once: drops there
SLICE_NS = 20_000
RATE = 10**9


@dataclasses.dataclass(frozen=True)
class Paced(TransportSettings):
    """The settings with paced senders: packets at least srtt / (cwnd * gain) apart."""

    def cc(self):
        cc = super().cc()
        cc.pacing = True
        return cc


class Rounds:
    """An agent that sends its messages at their times and is done once it has every message
    meant for it."""

    def __init__(self, plan, expected):
        self.plan, self.expected = sorted(plan, key=lambda p: p[0]), expected
        self.sends, self.got = [], []

    def _due(self, now):
        while self.plan and self.plan[0][0] <= now:
            _, dst, tensor_id, data, priority = self.plan.pop(0)
            self.sends.append(Outgoing(dst, 0, tensor_id, data, priority))

    def start(self, now):
        self._due(now)

    def next_timer(self):
        return self.plan[0][0] if self.plan else None

    def on_timer(self, now):
        self._due(now)

    def on_message(self, src, iteration, tensor_id, data, lost_ranges, now):
        self.got.append((src, tensor_id, now))

    def take_sends(self):
        out, self.sends = self.sends, []
        return out

    @property
    def done(self):
        return not self.plan and not self.sends and len(self.got) == self.expected


def plans(seed):
    """{rank: [(at_ns, dst, tensor_id, values, priority)]}: round k to the k-th peer along the
    ring, staggered by rank; every INCAST_EVERY-th round to rank 0 instead."""
    rng = np.random.default_rng(seed)
    out = {r: [] for r in range(HOSTS)}
    for r in range(HOSTS):
        for k in range(ROUNDS):
            incast = k % INCAST_EVERY == INCAST_EVERY - 1 and r != 0
            dst = 0 if incast else (r + 1 + k % (HOSTS - 1)) % HOSTS
            values = int(rng.integers(2_000, 6_000) if incast else rng.integers(100, 4_000))
            data = rng.standard_normal(values).astype(np.float32)
            out[r].append((k * GAP_NS + (0 if incast else r * 3_000), dst, k, data, int(rng.integers(0, 8))))
    return out


def simulate(endpoints, transport, settings, seed):
    """The run in slices: (hosts, stacks, network), then the state after each slice."""
    star = build("star", hosts=HOSTS, host_rate_bps=RATE)
    topo = dataclasses.replace(star, links=tuple(dataclasses.replace(link, delay_ns=2_000, buffer_bytes=12_000)
                                                 for link in star.links))
    net = make_network(topo, "fifo", engine="native", seed=seed, record_drops=True)
    names = topo.hosts()
    plan = plans(seed)
    expected = {r: sum(p[1] == r for msgs in plan.values() for p in msgs) for r in plan}
    stacks = {r: HostStack(r, Rounds(plan[r], expected[r]), transport, endpoints=endpoints, link_rate_bps=RATE,
                           settings=settings, seed=seed) for r in plan}
    host_of_rank = {r: names[r] for r in plan}
    if endpoints == "native":
        hosts = CoreHosts(net, stacks, host_of_rank, packet_records=True)
    else:
        hosts = SimHosts(net, {r: PacketLog(s) for r, s in stacks.items()}, host_of_rank)
    hosts.start()
    seen = {r: {"sent": 0, "received": 0} for r in stacks}
    t = 0
    while not hosts.done() and net.loop.pending():
        t += SLICE_NS
        net.loop.run(until=t)
        hosts.collect()
        yield state(hosts, stacks, seen, t)


def rows(hosts, seen):
    """{rank: {"sent", "received": the packet rows taken since the last call}}."""
    if isinstance(hosts, CoreHosts):
        logs = dict(enumerate(hosts.packet_logs()))
        def new(r, part):
            cols = logs[r][part]
            return list(zip(*(cols[c][seen[r][part]:].tolist() for c in cols)))
    else:
        logs = hosts.stacks
        def new(r, part):
            return [tuple(int(x) for x in row) for row in getattr(logs[r], part)[seen[r][part]:]]
    out = {}
    for r in seen:
        out[r] = {part: new(r, part) for part in ("sent", "received")}
        for part, got in out[r].items():
            seen[r][part] += len(got)
    return out


def state(hosts, stacks, seen, t):
    """What the stacks did in the slice up to t: each one's packets, and its senders,
    deliveries and completions so far."""
    packets = rows(hosts, seen)
    return {"t": t} | {r: packets[r] | {
        "senders": {dst: (s.pending, s.inflight, s.timeouts, s.losses, s.tail_probes, s.spurious, s.next_timeout())
                    for dst, s in st.senders.items()},
        "deliveries": list(st.deliveries),
        "completions": list(st.completions),
    } for r, st in stacks.items()}


CASES = [("reliable", TransportSettings()), ("dlcp", TransportSettings()), ("reliable", Paced()),
         ("dlcp", Paced())]


@pytest.mark.parametrize("transport,settings", CASES, ids=["reliable", "dlcp", "reliable-paced", "dlcp-paced"])
def test_a_stack_polling_only_its_busy_senders_runs_as_the_python_one(transport, settings):
    slices = busy = senders = 0
    for py, core in zip(simulate("python", transport, settings, 3), simulate("native", transport, settings, 3),
                        strict=True):
        assert core == py, f"the stacks part by {py['t']} ns"
        slices += 1
        for r in range(HOSTS):
            senders += len(py[r]["senders"])
            busy += sum(1 for v in py[r]["senders"].values() if v[0])
    totals = np.sum([v[2:6] for r in range(HOSTS) for v in py[r]["senders"].values()], axis=0)
    timeouts, losses, probes, _ = totals
    # What the comparison covers: a sender to each peer at every host, most idle; the timers.
    assert all(len(py[r]["senders"]) == HOSTS - 1 for r in range(HOSTS))
    assert busy < senders / 3, (busy, senders)
    assert slices > 50 and losses > 0 and probes > 0 and timeouts > 0, (slices, losses, probes, timeouts)


def test_a_sender_is_polled_by_one_stack_only():
    """A second stack would never hear of the sender's input (it tells one watch)."""
    net = make_network(build("star", hosts=2, host_rate_bps=RATE), "fifo", engine="native", record_drops=True)
    wire = (True, True, DLCP_UDP_PORT, 1, [0, 1], [1, 2])
    stacks = [HostStack(r, Rounds([], 0), "reliable", endpoints="native") for r in (0, 1)]
    ids = [net.native.attach_stack(r, 0, stacks[r].receiver._core, wire, True) for r in (0, 1)]
    sender = stacks[0].sender(1)
    net.native.add_sender(ids[0], sender._core)
    with pytest.raises(ValueError, match="the sender to rank 1 is polled by another stack already"):
        net.native.add_sender(ids[1], sender._core)
