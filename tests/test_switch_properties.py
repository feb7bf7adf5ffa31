"""Property tests of the sans-I/O switch model on random packet streams and link rates, run
on both engines: the Python model and the native switch (dlcp_native). A property read
through the Python model's internals runs on it alone; the differential tests
(test_native_switch.py) carry it over to the native switch, decision for decision."""
import random

import pytest
from hypothesis import given, settings, strategies as st

from dlcp_native import NativeSwitch
from switch_models import Packet, PortConfig, Switch, preset_names
from tiers import examples

SETTINGS = settings(max_examples=examples(150), deadline=None)
ENGINES = {"python": Switch, "native": NativeSwitch}
engines = pytest.mark.parametrize("engine", ENGINES)
SIZES = [64, 90, 200, 1000, 1500, 9000]

arrival = st.tuples(
    st.integers(0, 20_000),                   # gap to the previous arrival, ns
    st.sampled_from(SIZES),
    st.integers(0, 7),                        # priority
    st.integers(0, 7),                        # magnitude class
    st.booleans(),                            # droppable
    st.integers(0, 5),                        # flow
    st.integers(1, 2),                        # input port
)
streams = st.lists(arrival, min_size=1, max_size=250)


def burst(seed):
    """50 to 250 back-to-back arrivals (at most 1 us apart), so that queues fill and queue
    managers must choose. Drawn from a seed rather than field by field: many times cheaper
    to generate, and the seed reproduces a failure."""
    rng = random.Random(seed)
    return [(rng.randrange(1000), rng.choice(SIZES), rng.randrange(8), rng.randrange(8),
             rng.random() < 0.5, rng.randrange(6), rng.randint(1, 2))
            for _ in range(rng.randint(50, 250))]


bursts = st.integers(0, 2**32 - 1).map(burst)
rates = st.sampled_from([1e8, 1e9, 3e9, 1e10])   # 3e9: 8/3 ns a byte, where rounding shows
buffers = st.sampled_from([3000, 20_000, 200_000])


def build(pipeline, rate, buffer_bytes, egress=(3, 4), delay_ns=0, record=True, engine="python"):
    ports = {1: PortConfig(1e10), 2: PortConfig(1e10)}
    ports.update({p: PortConfig(rate, delay_ns=delay_ns, buffer_bytes=buffer_bytes) for p in egress})
    return ENGINES[engine]("s", ports, {"far": egress, "near": (1, 2)}, pipeline, record_drops=record)


def port_counters(sw, port):
    return sw.counters()["ports"][port]


def packets(stream):
    t = 0
    for uid, (gap, size, prio, mag, droppable, flow, in_port) in enumerate(stream):
        t += gap
        yield t, in_port, Packet(size, "far", flow=flow, prio=prio, mag=mag, layer=prio,
                                 droppable=droppable, dlcp=True, ect=True, uid=uid)


def drain(sw, out):
    t = sw.next_event_time()
    while t is not None:
        out.extend(sw.poll(t))
        t = sw.next_event_time()


def run(sw, stream, poll_every=1):
    """Feed the stream, polling after every `poll_every` arrivals; return departures."""
    out = []
    for i, (t, in_port, pkt) in enumerate(packets(stream)):
        sw.receive(pkt, in_port, t)
        if i % poll_every == 0:
            out.extend(sw.poll(t))
    drain(sw, out)
    return out


@engines
@SETTINGS
@given(streams, st.sampled_from(preset_names()), rates, buffers, st.integers(1, 20))
def test_conservation_at_every_step(engine, stream, preset, rate, buffer_bytes, poll_every):
    sw = build(preset, rate, buffer_bytes, engine=engine)
    sent = 0
    for i, (t, in_port, pkt) in enumerate(packets(stream)):
        sw.receive(pkt, in_port, t)
        if i % poll_every == 0:
            sent += len(sw.poll(t))
        taken, accounted = sw.conservation()
        assert taken == accounted == i + 1
    out = []
    drain(sw, out)
    sent += len(out)
    drops = sum(sum(p["drops"].values()) for p in sw.counters()["ports"].values())
    assert sw.backlog() == 0
    assert sent + drops == len(stream)
    assert len(sw.drop_log) == drops


@engines
@SETTINGS
@given(streams, rates, st.sampled_from([0, 5_000]), st.sampled_from(["fifo", "dlcp", "pias", "ndp"]))
def test_departures_follow_serialisation_schedule(engine, stream, rate, delay_ns, preset):
    sw = build(preset, rate, 200_000, egress=(3,), delay_ns=delay_ns, engine=engine)
    out = run(sw, stream)
    end = 0
    for port, pkt in out:
        ser = int((pkt.size + 24) * 8e9 / rate + 0.5)
        expected = max(end, pkt.arrival) + ser
        assert pkt.depart - delay_ns == expected
        end = expected


# Every preset, and the one queue manager no preset uses.
EVERY_PIPELINE = preset_names() + [{"preset": "fifo", "queue_manager": "ecn"}]


@engines
@SETTINGS
@given(streams, rates, buffers, st.integers(2, 40), st.sampled_from(EVERY_PIPELINE))
def test_schedule_does_not_depend_on_when_the_caller_polls(engine, stream, rate, buffer_bytes, poll_every,
                                                           pipeline):
    """Polling after every arrival or after every `poll_every`-th: the same packets leave by
    the same ports at the same times, trimmed, marked and classed alike, and the same are
    dropped, when and why."""
    def outcome(every):
        sw = build(pipeline, rate, buffer_bytes, engine=engine)
        out = run(sw, stream, every)
        sent = {p.uid: (port, p.depart, p.size, p.rewrite, p.cls) for port, p in out}
        return sent, sorted((t, port, reason, p.uid) for t, port, reason, p in sw.drop_log)
    assert outcome(1) == outcome(poll_every)


@engines
@SETTINGS
@given(streams, rates)
def test_strict_priority_never_serves_lower_class_while_higher_waits(engine, stream, rate):
    sw = build("layer-prio", rate, 10**7, egress=(3,), engine=engine)
    out = [p for _, p in run(sw, stream, poll_every=7)]
    start = {p.uid: p.depart - int((p.size + 24) * 8e9 / rate + 0.5) for p in out}
    for a in out:
        for b in out:
            # a waited (arrived before b started) and is of a higher class: a went first.
            # (One arriving at the very instant b starts is too late to preempt it.)
            if a.cls < b.cls and a.arrival < start[b.uid]:
                assert start[a.uid] < start[b.uid], (a, b)


@engines
@SETTINGS
@given(streams, rates, buffers)
def test_droptail_never_exceeds_its_limit(engine, stream, rate, buffer_bytes):
    sw = build("fifo", rate, buffer_bytes, engine=engine)
    for t, in_port, pkt in packets(stream):
        sw.receive(pkt, in_port, t)
        for port in (3, 4):
            c = port_counters(sw, port)
            assert c["queued_bytes"] <= buffer_bytes
            assert c["queued_packets"] <= buffer_bytes // 64   # the default buffer_packets
    assert all(port_counters(sw, p)["max_bytes"] <= buffer_bytes for p in (3, 4))


def queued_droppable(port):
    return sum(1 for dq in port.queues for p in dq if p.queued and p.droppable)


@SETTINGS
@given(streams, rates, buffers)
def test_dlcp_never_drops_non_droppable_while_droppable_queued(stream, rate, buffer_bytes):
    sw = build("dlcp", rate, buffer_bytes)
    for t, in_port, pkt in packets(stream):
        before = len(sw.drop_log)
        sw.receive(pkt, in_port, t)
        for _, port_no, reason, dropped in sw.drop_log[before:]:
            if not dropped.droppable:
                assert reason == "buffer_full"
                assert queued_droppable(sw.ports[port_no]) == 0
        sw.poll(t)


@engines
@SETTINGS
@given(streams, rates, buffers)
def test_dlcp_drops_lowest_magnitude_first(engine, stream, rate, buffer_bytes):
    """A droppable packet is evicted only for a more important one: a non-droppable packet,
    or a droppable one of a strictly higher magnitude class."""
    sw = build("dlcp", rate, buffer_bytes, egress=(3,), engine=engine)
    for t, in_port, pkt in packets(stream):
        before = len(sw.drop_log)
        sw.receive(pkt, in_port, t)
        for _, _, reason, dropped in sw.drop_log[before:]:
            if reason == "dlcp_evicted":
                assert dropped.droppable
                assert not pkt.droppable or dropped.mag < pkt.mag


@SETTINGS
@given(bursts, rates, buffers)
def test_dlcp_evicts_the_lowest_magnitude_queued(stream, rate, buffer_bytes):
    """Each victim is of the lowest magnitude class queued at its port: every droppable packet
    still queued after the arrival made room (all of them were queued at each eviction) is of
    the victim's class or higher."""
    sw = build("dlcp", rate, buffer_bytes, egress=(3,))
    port = sw.ports[3]
    for t, in_port, pkt in packets(stream):
        before = len(sw.drop_log)
        sw.receive(pkt, in_port, t)
        victims = [p.mag for _, _, reason, p in sw.drop_log[before:] if reason == "dlcp_evicted"]
        if victims:
            left = [p.mag for dq in port.queues for p in dq
                    if p.queued is port and p.droppable and p is not pkt]
            assert min(left, default=8) >= max(victims), (victims, sorted(left))
        sw.poll(t)


# The DLCP queue manager's admission limit per magnitude class at its default threshold 0.5,
# worked out by hand for each buffer the streams use: buffer * (0.5 + 0.5 * m / 8), truncated.
DLCP_CLASS_LIMITS = {
    3000: [1500, 1687, 1875, 2062, 2250, 2437, 2625, 2812],
    20_000: [10_000, 11_250, 12_500, 13_750, 15_000, 16_250, 17_500, 18_750],
    200_000: [100_000, 112_500, 125_000, 137_500, 150_000, 162_500, 175_000, 187_500],
}


@SETTINGS
@given(bursts, rates, buffers)
def test_dlcp_threshold_drops_exactly_past_the_class_limit(stream, rate, buffer_bytes):
    """A droppable packet is refused (`dlcp_threshold`) exactly when the bytes it finds
    queued plus its own size exceed its class's limit, and admitted otherwise (a class
    limit is below the buffer, so within it there is always room); a packet that may not be
    lost is never refused at a threshold."""
    sw = build("dlcp", rate, buffer_bytes, egress=(3,))
    port = sw.ports[3]
    limits = DLCP_CLASS_LIMITS[buffer_bytes]
    for t, in_port, pkt in packets(stream):
        sw.poll(t)             # start what is due by t: what the arrival finds queued
        occupancy = port.bytes
        before = len(sw.drop_log)
        sw.receive(pkt, in_port, t)
        fate = next((reason for _, _, reason, p in sw.drop_log[before:] if p is pkt), "admitted")
        if pkt.droppable:
            over = occupancy + pkt.size > limits[pkt.mag]
            assert fate == ("dlcp_threshold" if over else "admitted"), (pkt, occupancy)
        else:
            assert fate in ("admitted", "buffer_full")


@engines
@SETTINGS
@given(st.integers(2, 8), st.integers(1, 300), st.integers(0, 1000))
def test_spray_spreads_within_one_packet(engine, n_ports, n_packets, flow):
    egress = tuple(range(3, 3 + n_ports))
    sw = build("dlcp", 1e10, 10**7, egress=egress, engine=engine)
    for i in range(n_packets):
        sw.receive(Packet(1500, "far", flow=flow, dlcp=True, uid=i), 1, i)
    counts = [port_counters(sw, p)["enqueued"] for p in egress]
    assert max(counts) - min(counts) <= 1
    assert sum(counts) == n_packets


@engines
@SETTINGS
@given(streams, st.integers(2, 8))
def test_ecmp_keeps_each_flow_on_one_port(engine, stream, n_ports):
    egress = tuple(range(3, 3 + n_ports))
    sw = build("fifo", 1e10, 10**7, egress=egress, engine=engine)
    out = run(sw, stream)
    port_of_flow = {}
    for port, pkt in out:
        assert port_of_flow.setdefault(pkt.flow, port) == port


@engines
def test_ecmp_spreads_flows_over_every_port(engine):
    """64 flows over 4 equal-cost ports: every port carries some (a hash that sends every
    flow one way would keep each flow on one port too, and pass the test above)."""
    egress = (3, 4, 5, 6)
    sw = build("fifo", 1e10, 10**7, egress=egress, engine=engine)
    for flow in range(64):
        sw.receive(Packet(1500, "far", flow=flow * 7919 + 1, uid=flow), 1, flow)
    counts = [port_counters(sw, p)["enqueued"] for p in egress]   # taken in, before any poll
    assert sum(counts) == 64 and min(counts) >= 6, counts


@engines
@SETTINGS
@given(streams, st.sampled_from(preset_names()), rates, buffers)
def test_idle_port_fast_path_changes_nothing(engine, stream, preset, rate, buffer_bytes):
    """A packet reaching an idle port starts at once (`EgressPort.send_idle`) instead of
    going through the queue manager and the scheduler: departures, fates and every counter
    must be the same as when the fast path is switched off."""
    fast, slow = (build(preset, rate, buffer_bytes, engine=engine) for _ in range(2))
    if engine == "native":
        slow.disable_idle_fast_path()
    else:
        for port in slow.ports.values():
            port.idle_limit = 0
    # Ports are polled in no set order: compare each port's departures.
    got = [sorted((n, p.depart, p.uid, p.cls, p.rewrite) for n, p in run(sw, stream)) for sw in (fast, slow)]
    assert got[0] == got[1]
    assert fast.counters() == slow.counters()
    assert [(r, p.uid) for _, _, r, p in fast.drop_log] == [(r, p.uid) for _, _, r, p in slow.drop_log]
