"""The native switch against the Python model: same random topologies, pipelines and packets,
same polling, identical departures, drops, counters and conservation at every step.

The Python model (`switch_models.Switch`) is the oracle; `dlcp_native.NativeSwitch` must
agree with it to the nanosecond. Across ports `poll` may list departures in any order (the
Python switch iterates a set), so departures are compared per port, in order.
"""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import dlcp_native.switch as compiled
from dlcp_native import NATIVE_STAGES, REASONS, NativeSwitch, NotNativeError
from switch_models import (CLASSIFIERS, QUEUE_MANAGERS, Packet, PortConfig, Switch,
                           preset_names)
from switch_models.packet import NO_JOB
from switch_models.pipeline import STAGES
from switch_models.queue_managers import DropTail
from switch_models.traffic import TRAFFIC_CLASSES

SETTINGS = settings(max_examples=120, deadline=None)

DESTINATIONS = ("a", 7, ("h", 1), "d")
UNKNOWN = "nowhere"   # in no route: the default route, or no_route
FLOWS = (0, 1, 2, 3, -1, 12345678901234, 2**63 - 1, -2**63)
JOBS = (0, 2, 3, 1, NO_JOB, 4)   # training jobs, the background's, traffic without a job, one past a job rule


# -- what hypothesis draws -----------------------------------------------------------------
@st.composite
def port_configs(draw):
    numbers = sorted(draw(st.sets(st.integers(1, 48), min_size=2, max_size=6)))
    ports = {}
    for n in numbers:
        rate = draw(st.sampled_from([1e8, 1e9, 2.5e9, 1e10, 4e10]) | st.integers(10**7, 10**11)
                    | st.floats(1e7, 1e11))
        ports[n] = PortConfig(
            rate,
            delay_ns=draw(st.sampled_from([0, 0, 1000, 5000]) | st.integers(0, 100_000)),
            buffer_bytes=draw(st.sampled_from([1514, 3000, 6000, 20_000, 200_000]) | st.integers(1514, 100_000)),
            buffer_packets=draw(st.none() | st.integers(1, 60)),
            overhead_bytes=draw(st.sampled_from([24, 24, 0, 38])))
    return ports


@st.composite
def topologies(draw):
    ports = draw(port_configs())
    numbers = list(ports)
    port_lists = st.lists(st.sampled_from(numbers), min_size=1, max_size=4)
    dsts = draw(st.lists(st.sampled_from(DESTINATIONS), min_size=1, max_size=4, unique=True))
    routes = {dst: tuple(draw(port_lists)) for dst in dsts}
    default = draw(st.none() | port_lists)
    return ports, routes, default


@st.composite
def custom_pipelines(draw):
    lb = draw(st.sampled_from(["single", "ecmp", "least-loaded"])
              | st.builds(lambda mode: {"name": "spray", "mode": mode},
                          st.sampled_from(["round-robin", "flow-round-robin", "random"]))
              | st.builds(lambda name, seed: {"name": name, "seed": seed},
                          st.sampled_from(["spray", "ecmp"]), st.integers(-2**62, 2**62)))
    if isinstance(lb, dict) and lb["name"] == "spray" and "mode" not in lb:
        lb["mode"] = "random"
    n = draw(st.integers(1, 8))
    tolerant = st.lists(st.sampled_from(TRAFFIC_CLASSES), unique=True)
    other = st.none() | st.integers(0, n - 1)
    classifier = draw(st.sampled_from(["single", "dscp", "pias", "layer", "dlcp"])
                      | st.builds(lambda c: {"name": "single", "cls": c}, st.integers(0, 7))
                      | st.just({"name": "dscp", "n_classes": n})
                      | st.builds(lambda t: {"name": "pias", "thresholds": sorted(t)},
                                  st.sets(st.sampled_from([64, 1500, 1564, 3000, 4500, 9000])
                                          | st.integers(1, 100_000), min_size=1, max_size=7))
                      | st.builds(lambda o: {"name": "layer", "n_classes": n, "other_class": o}, other)
                      | st.builds(lambda w, o, t: {"name": "dlcp", "n_classes": n, "layer_weight": w,
                                                   "other_class": o, "loss_tolerant": t},
                                  st.sampled_from([0, 1, 0.5, 0.25, 1 / 3]) | st.floats(0, 1), other, tolerant)
                      | st.builds(lambda c, o: {"name": "job", "classes": c, "n_classes": n, "other_class": o},
                                  st.lists(st.integers(0, n - 1), min_size=1, max_size=5), other))
    fraction = st.sampled_from([0.1, 0.2, 0.25, 0.3, 0.5]) | st.floats(0, 1, exclude_min=True)
    qm = draw(st.sampled_from(["droptail", "ecn", "dlcp", "pfabric", "trim"])
              | st.builds(lambda f: {"name": "ecn", "mark_fraction": f}, fraction)
              | st.builds(lambda f: {"name": "dlcp", "threshold": f}, fraction)
              | st.builds(lambda t: {"name": "dlcp", "loss_tolerant": t}, tolerant)
              | st.builds(lambda k: {"name": "trim", "trim_packets": k}, st.integers(1, 20)))
    name, params = _name_params(classifier)
    classes = CLASSIFIERS.create(name, **params).n_classes
    weights = st.lists(st.integers(1, 4) | st.floats(0.1, 4), min_size=classes, max_size=classes)
    scheduler = draw(st.sampled_from(["fifo", "strict", "drr"])
                     | st.builds(lambda q, w: {"name": "drr", "quantum": q, "weights": w},
                                 st.integers(64, 9000), st.none() | weights))
    return {"load_balancer": lb, "classifier": classifier, "queue_manager": qm, "scheduler": scheduler}


def _name_params(stage):
    if isinstance(stage, str):
        return stage, {}
    return stage["name"], {k: v for k, v in stage.items() if k != "name"}


def streams_of(gaps, sizes, headers):
    """Lists of arrivals: (gap ns, size, prio, mag, droppable, dlcp, ect, ce, rewrite, flow,
    in port (index), destination (index; past the routes: unknown), header size, how to poll
    after it), with bursts of copies at the same time."""
    one = st.tuples(
        gaps, sizes, st.integers(0, 7), st.integers(0, 7), st.booleans(), st.booleans(),
        st.booleans(), st.booleans(), st.integers(0, 3), st.sampled_from(FLOWS), st.integers(0, 5),
        st.integers(0, 4), headers, st.sampled_from(["none", "now", "now", "events"]),
        st.just(1) | st.integers(1, 12))
    return st.lists(one, min_size=5, max_size=100).map(
        lambda s: [a[:-1] if i == 0 else (0,) + a[1:-1] for a in s for i in range(a[-1])])


streams = streams_of(st.just(0) | st.integers(0, 3000) | st.integers(0, 3000) | st.integers(0, 300_000),
                     st.sampled_from([64, 90, 1500, 9000]) | st.integers(64, 9000),
                     st.sampled_from([64, 90, 120]))
# Sizes and gaps in hundreds, at 1 or 10 ns a byte with no overhead: arrivals land exactly on
# the end of a serialisation, occupancies exactly on thresholds, where < and <= differ.
aligned_streams = streams_of(st.sampled_from([0, 0, 100, 200, 300, 500, 1000, 1500, 3000]),
                             st.sampled_from([100, 200, 300, 500, 1000, 1500]), st.just(100))


@st.composite
def aligned_topologies(draw):
    numbers = list(range(1, draw(st.integers(2, 4)) + 1))
    ports = {n: PortConfig(draw(st.sampled_from([8e9, 8e8])), delay_ns=draw(st.sampled_from([0, 100])),
                           buffer_bytes=draw(st.sampled_from([2000, 3000, 5000, 10_000])),
                           buffer_packets=draw(st.none() | st.integers(1, 8)), overhead_bytes=0)
             for n in numbers}
    routes = {dst: tuple(draw(st.lists(st.sampled_from(numbers), min_size=1, max_size=3)))
              for dst in DESTINATIONS[:2]}
    return ports, routes, None


seeds = st.integers(-2**40, 2**40)


# -- driving both engines ------------------------------------------------------------------
def packet(uid, a, dsts):
    _, size, prio, mag, droppable, dlcp, ect, ce, rewrite, flow, _, d, header, _ = a
    dst = dsts[d] if d < len(dsts) else UNKNOWN
    pkt = Packet(size, dst, flow=flow, prio=prio, mag=mag, layer=uid % 5, droppable=droppable,
                 dlcp=dlcp, ect=ect, ce=ce, header_size=header, uid=uid, tclass=(uid + mag) % 6,
                 job=JOBS[(uid + flow) % len(JOBS)])
    pkt.rewrite = rewrite
    return pkt


def port_number(result):
    """What receive returned, as a port number: the Python switch returns the EgressPort."""
    return getattr(result, "number", result)


def by_port(out):
    """Departures as {port: [(uid, depart, cls, rewrite, size), ...]} in poll order."""
    ports = {}
    for port, pkt in out:
        ports.setdefault(port, []).append((pkt.uid, pkt.depart, pkt.cls, pkt.rewrite, pkt.size))
    return ports


def drops(sw, start=0):
    return [(t, port, reason, pkt.uid) for t, port, reason, pkt in sw.drop_log[start:]]


def assert_same_state(py, nat, counters=True):
    assert nat.conservation() == py.conservation()
    assert nat.backlog() == py.backlog()
    assert nat.next_event_time() == py.next_event_time()
    assert nat.queued_bytes() == py.queued_bytes()       # what a queue sample records
    assert nat.buffer_bytes() == py.buffer_bytes()
    assert len(nat.drop_log) == len(py.drop_log)
    if counters:
        assert nat.counters() == py.counters()


def assert_same_poll(py, nat, now, sent):
    a, b = py.poll(now), nat.poll(now)
    assert by_port(b) == by_port(a)
    for _, pkt in b:   # the native switch hands back the caller's own objects
        assert sent[pkt.uid] is pkt
    return len(a)


def run_both(topology, pipeline, stream, seed, counters_every=1):
    """Feed the stream to both engines, comparing everything after every call (the full
    counters after every `counters_every` arrivals, and at the end)."""
    ports, routes, default = topology
    kw = dict(seed=seed, record_drops=True, default_route=default)
    py = Switch("s1", ports, routes, pipeline, **kw)
    nat = NativeSwitch("s1", ports, routes, pipeline, **kw)
    dsts = list(routes)
    numbers = list(ports)
    sent = {}
    t = 0
    for uid, a in enumerate(stream):
        t += a[0]
        in_port = numbers[a[10] % len(numbers)]
        p, n = packet(uid, a, dsts), packet(uid, a, dsts)
        sent[uid] = n
        before = len(py.drop_log)
        assert nat.receive(n, in_port, t) == port_number(py.receive(p, in_port, t))
        assert (n.cls, n.arrival, n.size, n.rewrite, n.ce) == (p.cls, p.arrival, p.size, p.rewrite, p.ce)
        assert drops(nat, before) == drops(py, before)
        full = uid % counters_every == 0
        assert_same_state(py, nat, full)
        mode = a[-1]
        if mode == "now":
            assert_same_poll(py, nat, t, sent)
        elif mode == "events":
            e = py.next_event_time()
            while e is not None and e <= t + 5000:
                assert_same_poll(py, nat, e, sent)
                e = py.next_event_time()
        assert_same_state(py, nat, full)
    e = py.next_event_time()
    while e is not None:
        assert_same_poll(py, nat, e, sent)
        assert_same_state(py, nat, counters_every == 1)
        e = py.next_event_time()
    assert_same_state(py, nat)
    assert drops(nat) == drops(py)
    assert nat.backlog() == 0
    taken, accounted = nat.conservation()
    assert taken == accounted == len(stream)
    return py, nat


# -- the differential tests ----------------------------------------------------------------
@pytest.mark.slow
@SETTINGS
@given(topologies(), st.sampled_from(preset_names()), streams, seeds)
def test_every_preset_matches_the_python_model(topology, preset, stream, seed):
    run_both(topology, preset, stream, seed)


@pytest.mark.slow
@SETTINGS
@given(topologies(), custom_pipelines(), streams, seeds)
def test_custom_pipelines_match_the_python_model(topology, pipeline, stream, seed):
    run_both(topology, pipeline, stream, seed)


CONGESTED = preset_names() + [
    {"preset": "fifo", "queue_manager": {"name": "ecn", "mark_fraction": 0.3}},
    {"preset": "pias", "scheduler": {"name": "drr", "quantum": 700, "weights": [4, 2, 1.5, 1]}},
    {"preset": "dlcp", "load_balancer": "least-loaded", "classifier": {"name": "dscp", "n_classes": 3}},
]


def test_a_congested_port_exercises_what_the_random_tests_rely_on():
    """One long overloaded run per preset and a few custom pipelines (two equal-cost slow
    ports): queues fill, drops of every kind, trims and marks happen, and the engines agree."""
    ports = {1: PortConfig(1e10), 2: PortConfig(1e10), 3: PortConfig(1e9, buffer_bytes=30_000),
             4: PortConfig(1e9, delay_ns=2000, buffer_bytes=30_000)}
    rng = np.random.default_rng(5)
    stream = [(int(rng.integers(0, 12_000)), int(rng.choice([64, 1500, 9000, int(rng.integers(64, 9000))])),
               int(rng.integers(8)), int(rng.integers(8)), bool(rng.integers(2)), bool(rng.integers(4)),
               bool(rng.integers(2)), False, 0, int(rng.integers(6)), int(rng.integers(2)), 0, 90,
               str(rng.choice(["none", "now", "events"]))) for _ in range(1500)]
    seen = set()
    for pipeline in CONGESTED:
        py, _ = run_both((ports, {"far": (3, 4)}, None), pipeline, stream, seed=3, counters_every=25)
        seen |= {reason for _, _, reason, _ in py.drop_log}
        seen |= {k for p in py.counters()["ports"].values() for k in ("trimmed", "marked") if p[k]}
    assert seen >= {"buffer_full", "dlcp_threshold", "dlcp_evicted", "pfabric_lowest",
                    "pfabric_evicted", "trimmed", "marked"}


ecn_pipelines = st.builds(lambda preset, f: {"preset": preset, "queue_manager": {"name": "ecn", "mark_fraction": f}},
                          st.sampled_from(preset_names()), st.sampled_from([0.1, 0.2, 0.25, 0.3, 0.5]))


@pytest.mark.slow
@SETTINGS
@given(aligned_topologies(), custom_pipelines() | st.sampled_from(preset_names()) | ecn_pipelines,
       aligned_streams, seeds)
def test_ties_at_equal_times_and_thresholds_match_the_python_model(topology, pipeline, stream, seed):
    run_both(topology, pipeline, stream, seed)


@SETTINGS
@given(ecn_pipelines, st.sampled_from([2000, 3000, 10_000]), aligned_streams)
def test_ecn_marks_at_the_same_occupancy(pipeline, buffer_bytes, stream):
    """One slow port whose queue grows in hundreds of bytes: arrivals often find it at the
    marking threshold exactly."""
    ports = {1: PortConfig(1e10), 2: PortConfig(8e8, buffer_bytes=buffer_bytes, overhead_bytes=0)}
    run_both((ports, {"a": (2,)}, (2,)), pipeline, stream, seed=0)


@pytest.mark.slow
@SETTINGS
@given(topologies(), custom_pipelines() | st.sampled_from(preset_names()), streams, seeds)
def test_batch_matches_receive_and_poll(topology, pipeline, stream, seed):
    """run_batch gives what receive + poll at each arrival + drain give, packet for packet."""
    ports, routes, default = topology
    kw = dict(seed=seed, default_route=default)
    dsts, numbers = list(routes), list(ports)
    one = NativeSwitch("s2", ports, routes, pipeline, record_drops=True, **kw)
    batch = NativeSwitch("s2", ports, routes, pipeline, **kw)
    t, times, pkts, in_ports = 0, [], [], []
    for uid, a in enumerate(stream):
        t += a[0]
        times.append(t)
        pkts.append(packet(uid, a, dsts))
        in_ports.append(numbers[a[10] % len(numbers)])
    out = []
    for pkt, in_port, now in zip(pkts, in_ports, times):
        one.receive(pkt, in_port, now)
        out.extend(one.poll(now))
    e = one.next_event_time()
    while e is not None:
        out.extend(one.poll(e))
        e = one.next_event_time()
    fresh = [packet(uid, a, dsts) for uid, a in enumerate(stream)]
    result = batch.run_batch(
        uid=[p.uid for p in fresh], size=[p.size for p in fresh],
        dst=[batch.route_index(p.dst) for p in fresh], in_port=in_ports, arrival=times,
        flow=[p.flow for p in fresh], prio=[p.prio for p in fresh], mag=[p.mag for p in fresh],
        layer=[p.layer for p in fresh], droppable=[p.droppable for p in fresh],
        dlcp=[p.dlcp for p in fresh], ect=[p.ect for p in fresh], ce=[p.ce for p in fresh],
        header_size=[p.header_size for p in fresh], rewrite=[p.rewrite for p in fresh],
        tclass=[p.tclass for p in fresh], job=[p.job for p in fresh])
    d = result.departures
    assert list(zip(*(d[k].tolist() for k in ("port", "uid", "depart", "cls", "rewrite", "size")))) == \
        [(port, p.uid, p.depart, p.cls, p.rewrite, p.size) for port, p in out]
    x = result.drops
    assert list(zip(x["time"].tolist(), x["port"].tolist(), [REASONS[r] for r in x["reason"]],
                    x["uid"].tolist())) == drops(one)
    assert batch.counters() == one.counters()
    assert batch.conservation() == one.conservation()
    assert batch.backlog() == 0


def test_batch_carries_state_over_and_refuses_a_busy_switch():
    ports = {1: PortConfig(1e10), 2: PortConfig(1e9), 3: PortConfig(1e9)}
    py = Switch("s", ports, {"far": (2, 3)}, "pias")
    nat = NativeSwitch("s", ports, {"far": (2, 3)}, "pias")
    for start in (0, 10**9):   # two batches, the second seeing the first's PIAS bytes
        n = 400
        uid = np.arange(start, start + n)
        size = np.full(n, 1500)
        arrival = start + np.arange(n) * 1000
        res = nat.run_batch(uid=uid, size=size, dst=np.zeros(n, dtype=np.int64), in_port=1,
                            arrival=arrival, flow=uid % 3)
        out = []
        for i in range(n):
            py.receive(Packet(1500, "far", flow=int(uid[i] % 3), uid=int(uid[i])), 1, int(arrival[i]))
            out.extend(py.poll(int(arrival[i])))
        e = py.next_event_time()
        while e is not None:
            out.extend(py.poll(e))
            e = py.next_event_time()
        assert sorted(zip(res.departures["uid"].tolist(), res.departures["depart"].tolist(),
                          res.departures["cls"].tolist())) == sorted((p.uid, p.depart, p.cls) for _, p in out)
    assert nat.counters() == py.counters()
    nat.receive(Packet(1500, "far"), 1, 2 * 10**9)
    with pytest.raises(ValueError, match="holds no packet"):
        nat.run_batch(uid=[1], size=[64], dst=[0], in_port=[1], arrival=[2 * 10**9])


# -- the surface: errors, Python-only stages -----------------------------------------------
def test_native_stages_are_the_python_built_ins():
    names = compiled.stage_names()
    for stage, registry in STAGES.items():
        assert sorted(names[stage]) == sorted(NATIVE_STAGES[stage])
        for name, cls in NATIVE_STAGES[stage].items():
            assert registry.get(name) is cls


@pytest.fixture
def restore_queue_managers():
    saved = dict(QUEUE_MANAGERS._classes)
    yield
    QUEUE_MANAGERS._classes.clear()
    QUEUE_MANAGERS._classes.update(saved)


def test_a_python_only_stage_is_refused_by_name(restore_queue_managers):
    @QUEUE_MANAGERS.register("mine")
    class Mine(DropTail):
        pass

    ports = {1: PortConfig(1e9), 2: PortConfig(1e9)}
    spec = {"preset": "fifo", "queue_manager": "mine"}
    Switch("s", ports, {"x": (2,)}, spec)   # the Python path runs it
    with pytest.raises(NotNativeError, match="queue manager 'mine' is a Python-only stage"):
        NativeSwitch("s", ports, {"x": (2,)}, spec)
    # A built-in name given to another class is Python-only too.
    QUEUE_MANAGERS.register("droptail")(Mine)
    with pytest.raises(NotNativeError, match="queue manager 'droptail'"):
        NativeSwitch("s", ports, {"x": (2,)}, "fifo")


@pytest.mark.parametrize("build", [
    lambda cls: cls("s", {1: PortConfig(0)}, {}),
    lambda cls: cls("s", {1: PortConfig(1e9, delay_ns=-1)}, {}),
    lambda cls: cls("s", {1: PortConfig(1e9, buffer_bytes=100)}, {}),
    lambda cls: cls("s", {1: PortConfig(1e9)}, {"x": (2,)}),
    lambda cls: cls("s", {1: PortConfig(1e9)}, {"x": ()}),
    lambda cls: cls("s", {1: PortConfig(1e9)}, {}, default_route=(5,)),
    lambda cls: cls("s", {1: PortConfig(1e9)}, {}, {"preset": "fifo", "scheduler": {"name": "drr", "weights": [1, 2]}}),
    lambda cls: cls("s", {1: PortConfig(1e9)}, {}, "nope"),
])
def test_bad_settings_raise_the_python_models_errors(build):
    with pytest.raises(ValueError) as expected:
        build(Switch)
    with pytest.raises(type(expected.value), match=None) as got:
        build(NativeSwitch)
    assert str(got.value) == str(expected.value)


def test_bad_packet_fields_name_the_field():
    sw = NativeSwitch("s", {1: PortConfig(1e9), 2: PortConfig(1e9)}, {"x": (2,)}, "dlcp")
    with pytest.raises(ValueError, match="prio and mag must be in 0..7"):
        sw.receive(Packet(100, "x", mag=8), 1, 0)
    with pytest.raises(TypeError, match="flow as an integer in 64 bits"):
        sw.receive(Packet(100, "x", flow=2**64), 1, 0)
    with pytest.raises(TypeError, match="now as an integer"):
        sw.receive(Packet(100, "x"), 1, 0.5)
    with pytest.raises(KeyError):
        sw.receive(Packet(100, "x"), 9, 0)
    with pytest.raises(ValueError, match="in_port must be a port number"):
        sw.run_batch(uid=[1], size=[100], dst=[0], in_port=[9], arrival=[0])
    with pytest.raises(ValueError, match="mag must be in 0..7"):
        sw.run_batch(uid=[1], size=[100], dst=[0], in_port=[1], arrival=[0], mag=[9])
    with pytest.raises(ValueError, match="tclass must be in 0..5"):
        sw.receive(Packet(100, "x", tclass=6), 1, 0)
    with pytest.raises(ValueError, match="tclass must be in 0..5"):
        sw.run_batch(uid=[1], size=[100], dst=[0], in_port=[1], arrival=[0], tclass=[6])
    with pytest.raises(TypeError, match="size must be integers"):
        sw.run_batch(uid=[1], size=[100.5], dst=[0], in_port=[1], arrival=[0])
    with pytest.raises(ValueError, match="dst must be in -1..0"):
        sw.run_batch(uid=[1], size=[100], dst=[3], in_port=[1], arrival=[0])
    # The core holds size, header_size and layer in 32 bits.
    with pytest.raises(ValueError, match=r"packet uid 0: size must be in 0..2147483647, got 2147483648"):
        sw.receive(Packet(2**31, "x"), 1, 0)
    with pytest.raises(ValueError, match=r"packet uid 1: header_size must be in 0..2147483647, got -1"):
        sw.run_batch(uid=[1], size=[100], dst=[0], in_port=[1], arrival=[0], header_size=[-1])
    with pytest.raises(ValueError, match=r"layer must be in -2147483648..2147483647, got 1099511627776"):
        sw.run_batch(uid=[1], size=[100], dst=[0], in_port=[1], arrival=[0], layer=[2**40])
    assert sw.conservation() == (0, 0)   # nothing half-taken


def test_spray_random_draws_as_cpython():
    """random.Random(seed).randrange(n), seeded as Switch seeds it: the same ports in order."""
    ports = {n: PortConfig(1e11, buffer_bytes=10**7) for n in range(1, 8)}
    routes = {"x": (2, 3, 4, 5, 6, 7), "y": (2, 3, 4)}
    spec = {"preset": "dlcp", "load_balancer": {"name": "spray", "mode": "random"}}
    for seed in (0, 1, -7, 2**35 + 11):
        py = Switch("spine-3", ports, routes, spec, seed=seed)
        nat = NativeSwitch("spine-3", ports, routes, spec, seed=seed)
        got = [(nat.receive(Packet(64, d), 1, i), port_number(py.receive(Packet(64, d), 1, i)))
               for i, d in enumerate("xyxxyyx" * 40)]
        assert [a for a, _ in got] == [b for _, b in got]
        assert len({a for a, _ in got}) == 6
