"""The native network against the simulator's Python network: same random topologies,
pipelines and traffic, identical deliveries, drops, counters, conservation and events.

`dlcp_emu.sim.SimNetwork` is the oracle; `dlcp_native.NativeNetwork` must agree with it to the
nanosecond and in the order of events. Open-loop traffic goes in as sends at given times
(`loop.at(t, net.send, ...)` in Python, `send_at` columns natively); closed-loop traffic
(hosts that answer deliveries and set timers) drives the native network in batches, as the
simulator's hosts would.
"""
import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from test_native_switch import custom_pipelines

from dlcp_emu.sim import SimNetwork
from dlcp_native import NativeNetwork, NotNativeError
from dlcp_native.network import CALLBACK, DELIVER
from switch_models import Packet, preset_names
from topologies import Link, build

SETTINGS = settings(max_examples=60, deadline=None)
UNKNOWN = "nowhere"   # a destination that is no host: no route at the first switch


# -- what hypothesis draws -----------------------------------------------------------------
@st.composite
def topologies(draw):
    """A star, dumbbell, leaf-spine or k=4 fat tree, every link with a rate, delay and buffer
    of its own."""
    shape = draw(st.sampled_from(["star", "dumbbell", "leaf-spine", "fat-tree"]))
    if shape == "star":
        topo = build("star", hosts=draw(st.integers(2, 6)), host_rate_bps=1e9)
    elif shape == "dumbbell":
        topo = build("dumbbell", hosts_per_side=draw(st.integers(1, 3)), host_rate_bps=1e9,
                     bottleneck_rate_bps=1e9)
    elif shape == "leaf-spine":
        topo = build("leaf-spine", leaves=draw(st.integers(2, 3)), spines=draw(st.integers(1, 3)),
                     hosts_per_leaf=draw(st.integers(1, 3)), host_rate_bps=1e9)
    else:
        topo = build("fat-tree", k=4, host_rate_bps=1e9)
    uniform = draw(st.booleans())   # equal links make equal times: ties in the event order
    links = []
    for link in topo.links:
        if uniform and links:
            rate, delay, buf = links[0].rate_bps, links[0].delay_ns, links[0].buffer_bytes
        else:
            # 10 Tbit/s: a frame takes 0 ns, so packets leave and arrive at equal times.
            rate = draw(st.sampled_from([10**8, 10**9, 10**10, 10**13]) | st.integers(10**7, 10**11))
            delay = draw(st.sampled_from([0, 1000, 5000]) | st.integers(0, 50_000))
            buf = draw(st.sampled_from([1514, 4000, 20_000, 262_144]) | st.integers(1514, 100_000))
        links.append(Link(link.a, link.b, rate, delay, buf))
    return dataclasses.replace(topo, links=tuple(links))


@st.composite
def traffic(draw):
    """Columns of sends from a seed and a shape: how many, over what span, how bursty, which
    sizes, how many to no host."""
    n = draw(st.integers(1, 300))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    span = draw(st.sampled_from([0, 2_000, 50_000, 500_000]))
    # Bursts: several packets at one time (from one host or many), the ties that order matters for.
    times = rng.integers(0, span + 1, n)
    if draw(st.booleans()):
        times = np.repeat(times, 8)[:n]
    sizes = draw(st.sampled_from(["one", "few", "any"]))   # one size: more equal times
    size = (np.full(n, rng.choice([64, 1500])) if sizes == "one" else
            rng.choice([40, 64, 90, 1500, 9000], n) if sizes == "few" else rng.integers(40, 9001, n))
    mag = rng.integers(0, 8, n)
    return {
        "src": rng.integers(0, 1 << 20, n), "dst": rng.integers(0, 1 << 20, n),
        "unknown": rng.random(n) < draw(st.sampled_from([0.0, 0.0, 0.05])),
        "time": times.astype(np.int64), "uid": np.arange(n, dtype=np.int64),
        "size": size.astype(np.int64), "flow": rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64),
        "prio": rng.integers(0, 8, n), "mag": mag, "layer": rng.integers(0, 40, n),
        "droppable": rng.random(n) < draw(st.sampled_from([0.0, 0.5, 1.0])),
        "dlcp": rng.random(n) < draw(st.sampled_from([0.0, 0.9, 1.0])),
        "ect": rng.random(n) < 0.5, "ce": rng.random(n) < 0.05,
    }


pipelines = st.sampled_from(preset_names()) | custom_pipelines()
seeds = st.integers(0, 2**31)


# -- driving both engines ------------------------------------------------------------------
def packets_of(topo, sends):
    """(source index, destination index or -1, Packet, time handed over) per send."""
    n_hosts = len(topo.hosts())
    names = topo.hosts()
    out = []
    for i in range(len(sends["uid"])):
        src = int(sends["src"][i] % n_hosts)
        dst = -1 if sends["unknown"][i] else int(sends["dst"][i] % n_hosts)
        pkt = Packet(int(sends["size"][i]), names[dst] if dst >= 0 else UNKNOWN, flow=int(sends["flow"][i]),
                     prio=int(sends["prio"][i]), mag=int(sends["mag"][i]), layer=int(sends["layer"][i]),
                     droppable=bool(sends["droppable"][i]), dlcp=bool(sends["dlcp"][i]),
                     ect=bool(sends["ect"][i]), ce=bool(sends["ce"][i]), uid=int(sends["uid"][i]))
        out.append((src, dst, pkt, int(sends["time"][i])))
    return out


def python_network(topo, pipeline, seed, packets):
    net = SimNetwork(topo, pipeline, seed=seed, record_drops=True)
    got = []
    for h in topo.hosts():
        net.on_receive(h, lambda p, t, h=h: got.append((h, p.uid, t, p.rewrite, p.size, p.cls)))
    names = topo.hosts()
    for src, _, pkt, t in packets:
        net.loop.at(t, net.send, names[src], pkt)
    return net, got


def native_network(topo, pipeline, seed, packets):
    net = NativeNetwork(topo, pipeline, seed=seed, record_drops=True)
    cols = {f: np.array([getattr(p, f) for _, _, p, _ in packets], dtype=bool if f in BOOLS else np.int64)
            for f in ("uid", "size", "flow", "prio", "mag", "layer", "droppable", "dlcp", "ect", "ce")}
    net.send_at(host=np.array([s for s, _, _, _ in packets], dtype=np.int64),
                dst=np.array([d for _, d, _, _ in packets], dtype=np.int64),
                time=np.array([t for _, _, _, t in packets], dtype=np.int64), **cols)
    return net


BOOLS = ("droppable", "dlcp", "ect", "ce")


def native_deliveries(net, topo):
    d = net.deliveries()
    names = topo.hosts()
    return list(zip([names[h] for h in d["host"].tolist()], d["uid"].tolist(), d["time"].tolist(),
                    d["rewrite"].tolist(), d["size"].tolist(), d["cls"].tolist()))


def python_drops(net):
    return sorted((node, pkt.uid, reason, t, port) for node, t, port, reason, pkt in net.drops())


def native_drops(net):
    return sorted((node, uid, reason, t, port) for node, t, port, reason, uid in net.drops())


def assert_same_state(py, nat):
    assert nat.counters() == py.counters()
    assert nat.conservation() == py.conservation()
    assert all(taken == accounted for taken, accounted in nat.conservation().values())
    assert sorted(nat.in_flight().tolist()) == sorted(p.uid for p in py.in_flight())
    assert native_drops(nat) == python_drops(py)
    assert nat.events == py.loop.events
    assert nat.delivered == py.delivered


def run_open_loop(topo, pipeline, seed, sends, stop_at=None):
    packets = packets_of(topo, sends)
    nat = native_network(topo, pipeline, seed, packets)   # first: the Python run changes the Packets
    py, got = python_network(topo, pipeline, seed, packets)
    if stop_at is not None:   # part way: what is queued and on the wires must agree too
        py.loop.run(until=stop_at)
        assert nat.run(until=stop_at) == []
        assert nat.now == py.loop.now
        assert native_deliveries(nat, topo) == got
        assert_same_state(py, nat)
        del got[:]
    py.loop.run()
    assert nat.run() == []
    assert native_deliveries(nat, topo) == got
    assert_same_state(py, nat)
    assert nat.next_event_time() is None and not list(py.in_flight())
    return py, got


# -- open loop ------------------------------------------------------------------------------
@SETTINGS
@given(topo=topologies(), preset=st.sampled_from(preset_names()), sends=traffic(), seed=seeds)
def test_every_preset_matches_the_python_network(topo, preset, sends, seed):
    run_open_loop(topo, preset, seed, sends)


@pytest.mark.slow   # 60 random networks, seconds: in make test (the fast tier draws every preset's)
@SETTINGS
@given(topo=topologies(), pipeline=custom_pipelines(), sends=traffic(), seed=seeds)
def test_custom_pipelines_match_the_python_network(topo, pipeline, sends, seed):
    run_open_loop(topo, pipeline, seed, sends)


@pytest.mark.slow   # 60 random networks, seconds: in make test (the fast tier draws every preset's)
@SETTINGS
@given(topo=topologies(), pipeline=pipelines, sends=traffic(), seed=seeds,
       stop=st.integers(0, 600_000))
def test_state_part_way_matches_the_python_network(topo, pipeline, sends, seed, stop):
    run_open_loop(topo, pipeline, seed, sends, stop_at=stop)


# -- closed loop: hosts that answer, driven in batches ---------------------------------------
class Responder:
    """Hosts that answer what they receive, the same way on either engine: an even uid of an
    early generation is answered by a packet back to its source, every fifth sets a timer
    that sends a packet on to the next host. Hosts with index % 3 == 2 only listen (natively
    they are not handled: their deliveries are logged in the core)."""

    def __init__(self, n_hosts, packets, timer_every=5, timer_delay=lambda uid: uid % 4 * 700):
        self.n_hosts = n_hosts
        self.timer_every, self.timer_delay = timer_every, timer_delay
        self.origin = {p.uid: (src, 0) for src, _, p, _ in packets}
        self.next_uid = len(packets)
        self.log = []

    def silent(self, host):
        return host % 3 == 2

    def on_delivery(self, host, uid, t, engine):
        self.log.append(("deliver", host, uid, t))
        src, gen = self.origin.get(uid, (None, 9))
        if gen < 3 and uid % 2 == 0 and src is not None:
            self._send(engine, host, src, t, gen + 1, uid)
        if uid % self.timer_every == 0:
            engine.timer(t + self.timer_delay(uid), lambda now: self.on_timer(host, uid, now, engine))

    def on_timer(self, host, uid, now, engine):
        self.log.append(("timer", host, uid, now))
        self._send(engine, host, (host + 1) % self.n_hosts, now, 3, uid)

    def _send(self, engine, src, dst, now, gen, cause):
        uid = self.next_uid
        self.next_uid += 1
        self.origin[uid] = (src, gen)
        engine.send(src, dst, now, Packet(64 + cause * 37 % 1400, None, flow=cause * 7919, prio=cause % 8,
                                          mag=cause % 8, droppable=cause % 3 == 0, dlcp=True, uid=uid))


class PythonHosts:
    def __init__(self, topo, pipeline, seed, packets, responder):
        self.net, _ = python_network(topo, pipeline, seed, packets)
        self.names = topo.hosts()
        for i, h in enumerate(self.names):
            if responder.silent(i):
                self.net.on_receive(h, lambda p, t, i=i: responder.log.append(("deliver", i, p.uid, t)))
            else:
                self.net.on_receive(h, lambda p, t, i=i: responder.on_delivery(i, p.uid, t, self))

    def send(self, src, dst, now, pkt):
        pkt.dst = self.names[dst]
        self.net.send(self.names[src], pkt, now)

    def timer(self, t, fn):
        self.net.loop.at(t, lambda: fn(self.net.loop.now))

    def run(self):
        self.net.loop.run()


class NativeHosts:
    """A driver as the simulator's hosts would be: one `run` per batch of deliveries and
    timers, what it answers scheduled under the major of the entry it answers."""

    def __init__(self, topo, pipeline, seed, packets, responder):
        self.net = native_network(topo, pipeline, seed, packets)
        self.responder = responder
        self.major = -1
        self.timers = {}
        self.batches = []
        for i in range(len(topo.hosts())):
            self.net.handle(i, not responder.silent(i))

    def send(self, src, dst, now, pkt):
        self.net.send(src, now, uid=pkt.uid, size=pkt.size, dst=dst, flow=pkt.flow, prio=pkt.prio,
                      mag=pkt.mag, droppable=pkt.droppable, dlcp=pkt.dlcp, major=self.major)

    def timer(self, t, fn):
        self.timers[self.net.call_at(t, self.major)] = fn

    def run(self):
        while True:
            batch = self.net.run()
            if not batch:
                break
            self.batches.append(len(batch))
            for kind, callback, major, uid, host, time, *_ in batch:
                self.major = major
                if kind == DELIVER:
                    self.responder.on_delivery(host, uid, time, self)
                else:
                    assert kind == CALLBACK
                    self.timers.pop(callback)(time)
            self.major = -1


def silent_deliveries(nat, responder):
    d = nat.deliveries()
    return [("deliver", h, u, t) for h, u, t in zip(d["host"].tolist(), d["uid"].tolist(), d["time"].tolist())]


@pytest.mark.slow   # 60 random networks, seconds: in make test (the fast tier draws every preset's)
@SETTINGS
@given(topo=topologies(), pipeline=pipelines, sends=traffic(), seed=seeds)
def test_hosts_answering_in_batches_match_the_python_network(topo, pipeline, sends, seed):
    packets = packets_of(topo, sends)
    n = len(topo.hosts())
    native_responder, python_responder = Responder(n, packets), Responder(n, packets)
    nat = NativeHosts(topo, pipeline, seed, packets, native_responder)
    py = PythonHosts(topo, pipeline, seed, packets, python_responder)
    nat.run()
    py.run()
    answered = [e for e in python_responder.log if not (e[0] == "deliver" and native_responder.silent(e[1]))]
    assert native_responder.log == answered
    listened = [e for e in python_responder.log if e[0] == "deliver" and native_responder.silent(e[1])]
    assert silent_deliveries(nat.net, native_responder) == listened
    assert_same_state(py.net, nat.net)


@pytest.mark.parametrize("pipeline", ["fifo", "dlcp"])
def test_simultaneous_deliveries_come_back_as_one_batch(pipeline):
    """Every host of a uniform star sends two packets to the next at once: deliveries tie and
    come back in batches; each sets a timer that falls due exactly when the next packet
    arrives, so timers and deliveries tie too, and only the majors order them as Python does."""
    topo = build("star", hosts=8, host_rate_bps=10**9, delay_ns=1000)
    names = topo.hosts()
    packets = [(i, (i + 1) % 8, Packet(1500, names[(i + 1) % 8], flow=i, prio=i % 8, dlcp=True, uid=i + 8 * k), 0)
               for k in range(2) for i in range(8)]
    serialisation = round((1500 + 24) * 8)   # ns at 1 Gbit/s
    responders = [Responder(8, packets, timer_every=1, timer_delay=lambda uid: serialisation) for _ in range(2)]
    nat = NativeHosts(topo, pipeline, 1, packets, responders[0])
    py = PythonHosts(topo, pipeline, 1, packets, responders[1])
    nat.run()
    py.run()
    assert max(nat.batches) >= 3   # deliveries at one time (a silent host's splits them), timers
    answered = [e for e in responders[1].log if not (e[0] == "deliver" and responders[0].silent(e[1]))]
    assert responders[0].log == answered
    assert_same_state(py.net, nat.net)


def test_a_congested_network_exercises_what_the_random_tests_rely_on():
    """A dumbbell's bottleneck under bursts of every magnitude: thresholds, evictions and full
    buffers at the switch, and a NIC whose queue overflows its 64 MiB; the same on both."""
    topo = build("dumbbell", hosts_per_side=3, host_rate_bps=10**9, bottleneck_rate_bps=10**8,
                 delay_ns=1000, buffer_bytes=30_000)
    rng = np.random.default_rng(7)
    n = 3000
    sends = {"src": np.arange(n) % 3, "dst": 3 + rng.integers(0, 3, n), "unknown": np.zeros(n, bool),
             "time": np.sort(rng.integers(0, 2_000_000, n)), "uid": np.arange(n), "size": np.full(n, 1500),
             "flow": rng.integers(0, 1 << 40, n), "prio": rng.integers(0, 8, n), "mag": rng.integers(0, 8, n),
             "layer": rng.integers(0, 8, n), "droppable": rng.random(n) < 0.6, "dlcp": np.ones(n, bool),
             "ect": np.ones(n, bool), "ce": np.zeros(n, bool)}
    py, _ = run_open_loop(topo, "dlcp", 3, sends)
    reasons = {r for c in py.counters().values() for p in c["ports"].values() for r in p["drops"]}
    assert {"buffer_full", "dlcp_threshold", "dlcp_evicted"} <= reasons
    # 7,500 frames of 9,000 bytes at once: more than a host's 64 MiB queue.
    n = 7500
    burst = {**{k: v[:1].repeat(n) for k, v in sends.items()}, "uid": np.arange(n), "time": np.zeros(n, np.int64),
             "size": np.full(n, 9000)}
    py, _ = run_open_loop(build("star", hosts=2, host_rate_bps=10**10), "fifo", 0, burst)
    assert any(node == "h1" and reason == "buffer_full" for node, _, _, reason, _ in py.drops())


@pytest.mark.parametrize("how", ["send", "send_at"])
def test_fields_left_out_take_the_packets_defaults(how):
    """A packet sent with only its uid, size and destination is `Packet(size, dst)`: through a
    switch that classifies by priority it arrives as the Python network's does (the class of
    the default priority, the default flow's path, untrimmed, unmarked)."""
    topo = build("leaf-spine", leaves=2, spines=2, hosts_per_leaf=1, host_rate_bps=10**9)
    pipeline = {"preset": "fifo", "classifier": "dscp"}
    names = topo.hosts()
    nat = NativeNetwork(topo, pipeline, seed=1, record_drops=True)
    if how == "send":   # at once, as SimNetwork.send
        nat.send(0, 0, uid=0, size=1500, dst=1)
        py, got = python_network(topo, pipeline, 1, [])
        py.send(names[0], Packet(1500, names[1]))
    else:               # an event, as loop.at(0, net.send, ...)
        nat.send_at(host=0, time=0, uid=[0], size=1500, dst=1)
        py, got = python_network(topo, pipeline, 1, [(0, 1, Packet(1500, names[1]), 0)])
    py.loop.run()
    assert nat.run() == []
    assert native_deliveries(nat, topo) == got and got[0][-1] == 7
    assert_same_state(py, nat)


def test_a_packet_field_past_its_32_bits_is_refused_by_name():
    """The core holds a packet's size, header_size and layer in 32 bits: a value past them is
    an error naming the field, and nothing of the packet is taken."""
    topo = build("leaf-spine", leaves=2, spines=2, hosts_per_leaf=1, host_rate_bps=10**9)
    nat = NativeNetwork(topo, {"preset": "fifo"}, seed=1, record_drops=True)
    with pytest.raises(ValueError, match=r"packet uid 7: size must be in 0..2147483647, got 2147483648"):
        nat.send(0, 0, uid=7, size=2**31, dst=1)
    with pytest.raises(ValueError, match=r"header_size must be in 0..2147483647, got -1"):
        nat.send_at(host=0, time=0, uid=[7], size=1500, dst=1, header_size=-1)
    with pytest.raises(ValueError, match=r"layer must be in -2147483648..2147483647, got 1099511627776"):
        nat.send(0, 0, uid=7, size=1500, dst=1, layer=2**40)
    assert nat.run() == [] and nat.deliveries()["uid"].tolist() == []
    # The largest size is taken whole: 2 GiB take 17.2 s through the NIC at 1 Gbit/s, then
    # overflow the leaf's buffer.
    assert nat.send(0, 0, uid=8, size=2**31 - 1, dst=1) and nat.run() == []
    ((node, t, _, reason, uid),) = nat.drops()
    assert (node, reason, uid) == ("l1", "buffer_full", 8) and t > (2**31 - 1) * 8
