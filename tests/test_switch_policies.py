"""Each pipeline stage does what its name promises, and specs reject what does not exist."""
import pytest

from switch_models import (
    CLASSIFIERS,
    LOAD_BALANCERS,
    PRESETS,
    QUEUE_MANAGERS,
    REWRITE_CE,
    REWRITE_TRIM,
    SCHEDULERS,
    Packet,
    PipelineSpec,
    PortConfig,
    SpecError,
    Switch,
)

GBPS = 1e9


def one_port(pipeline, rate=GBPS, buffer_bytes=100_000, buffer_packets=None, **kw):
    return Switch("s", {1: PortConfig(10 * GBPS),
                        2: PortConfig(rate, buffer_bytes=buffer_bytes, buffer_packets=buffer_packets)},
                  {"h2": (2,)}, pipeline, record_drops=True, **kw)


def pkt(uid, size=1500, **kw):
    kw.setdefault("dlcp", True)
    return Packet(size, "h2", uid=uid, **kw)


def drain(sw):
    out = []
    t = sw.next_event_time()
    while t is not None:
        out.extend(p for _, p in sw.poll(t))
        t = sw.next_event_time()
    return out


def test_pfabric_evicts_a_worse_packet_for_a_better_one():
    # PIAS thresholds put flow 1 (already 2 MB sent) in a low class, flow 2 in the top one.
    sw = one_port({"preset": "pfabric", "classifier": {"name": "pias", "thresholds": [1000, 10_000]}},
                  buffer_bytes=4500)
    sw.classifier.sent[1] = 2_000_000
    for i in range(4):                      # 1 starts serialising, 3 fill the buffer
        sw.receive(pkt(i, flow=1), 1, 0)
    sw.receive(pkt(10, flow=2), 1, 0)       # top class: evicts the newest low one
    sw.receive(pkt(11, flow=1), 1, 0)       # low class, buffer full of equals: dropped
    drops = {(p.uid, reason) for _, _, reason, p in sw.drop_log}
    assert drops == {(3, "pfabric_evicted"), (11, "pfabric_lowest")}
    assert [p.uid for p in drain(sw)] == [0, 10, 1, 2]


def test_ndp_trims_to_header_and_sends_headers_first():
    sw = one_port("ndp", buffer_bytes=100_000)
    for i in range(12):
        sw.receive(pkt(i, header_size=90), 1, 0)
    order = drain(sw)
    trimmed = [p for p in order if p.rewrite & REWRITE_TRIM]
    # One serialising + 8 queued data packets; the other 3 are trimmed.
    assert [p.uid for p in trimmed] == [9, 10, 11]
    assert all(p.size == 90 for p in trimmed)
    assert [p.uid for p in order[:4]] == [0, 9, 10, 11]
    assert sw.ports[2].counters.trimmed == 3


def test_ndp_drops_what_it_cannot_trim():
    sw = one_port("ndp")
    for i in range(12):
        sw.receive(pkt(i, dlcp=False), 1, 0)
    assert sw.ports[2].counters.drops == {"buffer_full": 3}


def test_ecn_marks_above_threshold_only_ect_packets():
    sw = one_port({"preset": "fifo", "queue_manager": {"name": "ecn", "mark_fraction": 0.1}},
                  buffer_bytes=30_000)
    for i in range(8):
        sw.receive(pkt(i, ect=i % 2 == 0), 1, 0)
    out = drain(sw)
    marked = {p.uid for p in out if p.rewrite & REWRITE_CE}
    # 3000 B threshold: packets arriving with more than 3000 B queued (from the 4th on) and ECT.
    assert marked == {4, 6}
    assert sw.ports[2].counters.marked == 2


def test_ecn_marks_strictly_above_the_threshold_and_never_marks_twice():
    sw = one_port({"preset": "fifo", "queue_manager": {"name": "ecn", "mark_fraction": 0.1}},
                  buffer_bytes=30_000)
    for i in range(8):      # packet 3 arrives with exactly 3000 B queued: not above, not marked
        sw.receive(pkt(i, ect=True, ce=i == 6), 1, 0)
    out = drain(sw)
    assert {p.uid for p in out if p.rewrite & REWRITE_CE} == {4, 5, 7}
    assert {p.uid for p in out if p.ce} == {4, 5, 6, 7}       # 6 came marked: left as it is
    assert sw.ports[2].counters.marked == 3


def test_dlcp_threshold_drops_low_magnitude_before_high():
    sw = one_port("dlcp", buffer_bytes=16 * 1500)
    sw.receive(pkt(0, droppable=False), 1, 0)     # serialising
    for i in range(1, 9):                         # 8 queued: half the buffer
        sw.receive(pkt(i, droppable=False), 1, 0)
    sw.receive(pkt(100, droppable=True, mag=0), 1, 0)  # lowest class: refused at 50 %
    sw.receive(pkt(107, droppable=True, mag=7), 1, 0)  # highest class: admitted
    dropped = {p.uid for _, _, _, p in sw.drop_log}
    assert dropped == {100}


def test_dlcp_class_limit_is_exact_at_the_byte():
    # 24000 B buffer, threshold 0.5: class 1 is refused past 24000 * (0.5 + 0.5 / 8) = 13500 B.
    sw = one_port("dlcp", buffer_bytes=24_000)
    sw.receive(pkt(0, droppable=False), 1, 0)            # serialising
    for i in range(1, 9):                                # 12000 B queued
        sw.receive(pkt(i, droppable=False), 1, 0)
    sw.receive(pkt(10, droppable=True, mag=1), 1, 0)     # 12000 + 1500 = 13500: admitted
    sw.receive(pkt(11, size=100, droppable=True, mag=1), 1, 0)   # 13600: refused
    sw.receive(pkt(12, size=100, droppable=True, mag=2), 1, 0)   # limit 15000: admitted
    assert [(p.uid, r) for _, _, r, p in sw.drop_log] == [(11, "dlcp_threshold")]
    assert sw.ports[2].bytes == 13_600


def test_dlcp_evicts_lowest_magnitude_first_newest_first_within_a_class():
    # 6000 B buffer: droppable classes 4, 6 and 7 are admitted up to 4500, 5250 and 5625 B.
    sw = one_port("dlcp", buffer_bytes=6000)
    sw.receive(pkt(0, droppable=False), 1, 0)             # serialising
    sw.receive(pkt(1, droppable=True, mag=6), 1, 0)       # 1500 B queued
    sw.receive(pkt(2, size=750, droppable=True, mag=4), 1, 0)
    sw.receive(pkt(3, size=750, droppable=True, mag=4), 1, 0)
    sw.receive(pkt(4, droppable=True, mag=7), 1, 0)       # 4500 B queued
    for i in range(5, 10):                                # non-droppable: each needs room
        sw.receive(pkt(i, droppable=False), 1, 0)
    assert [(p.uid, r) for _, _, r, p in sw.drop_log] == [
        (3, "dlcp_evicted"), (2, "dlcp_evicted"), (1, "dlcp_evicted"), (4, "dlcp_evicted"),
        (9, "buffer_full")]
    assert [p.uid for p in drain(sw)] == [0, 5, 6, 7, 8]


def test_dlcp_droppable_arrival_evicts_only_lower_classes():
    # A droppable packet that does not fit makes room from strictly lower classes only.
    sw = one_port("dlcp", buffer_bytes=16 * 1500, buffer_packets=4)
    sw.receive(pkt(0, droppable=False), 1, 0)             # serialising
    sw.receive(pkt(1, droppable=True, mag=3), 1, 0)
    sw.receive(pkt(2, droppable=True, mag=5), 1, 0)
    sw.receive(pkt(3, droppable=False), 1, 0)
    sw.receive(pkt(4, droppable=False), 1, 0)             # 4 packets: full by count
    sw.receive(pkt(5, droppable=True, mag=5), 1, 0)       # evicts 1 (class 3), not 2
    sw.receive(pkt(6, droppable=True, mag=5), 1, 0)       # only class 5 left: refused
    assert [(p.uid, r) for _, _, r, p in sw.drop_log] == [(1, "dlcp_evicted"), (6, "dlcp_threshold")]


def test_dlcp_non_droppable_evicts_droppable_when_full():
    sw = one_port("dlcp", buffer_bytes=3000)
    sw.receive(pkt(0, droppable=False), 1, 0)             # serialising
    sw.receive(pkt(1, droppable=True, mag=7), 1, 0)
    sw.receive(pkt(2, droppable=False), 1, 0)
    sw.receive(pkt(3, droppable=False), 1, 0)             # full: evicts 1
    sw.receive(pkt(4, droppable=False), 1, 0)             # nothing droppable: dropped
    assert [(p.uid, r) for _, _, r, p in sw.drop_log] == [(1, "dlcp_evicted"), (4, "buffer_full")]
    assert [p.uid for p in drain(sw)] == [0, 2, 3]


def test_dlcp_classifier_orders_by_layer_and_magnitude():
    c = CLASSIFIERS.create("dlcp")
    urgent = c.classify(Packet(100, "x", prio=0, mag=7, dlcp=True))
    middle = c.classify(Packet(100, "x", prio=3, mag=4, dlcp=True))
    last = c.classify(Packet(100, "x", prio=7, mag=0, dlcp=True))
    # class 0 is kept for the classes that must arrive whole: gradients spread over 1..7
    assert (urgent, last) == (1, 7) and urgent < middle < last
    assert CLASSIFIERS.create("dlcp", layer_weight=1).classify(Packet(100, "x", prio=2, mag=0, dlcp=True)) == 3
    assert c.classify(Packet(100, "x", prio=0, dlcp=False)) == 7   # other traffic last


def test_pias_demotes_a_flow_as_it_sends():
    c = CLASSIFIERS.create("pias", thresholds=[3000, 6000])
    classes = [c.classify(Packet(1500, "x", flow=9)) for _ in range(6)]
    assert classes == [0, 0, 0, 1, 1, 2]
    assert c.classify(Packet(1500, "x", flow=10)) == 0


def test_drr_shares_the_link_by_weight():
    sw = one_port({"preset": "layer-prio", "classifier": {"name": "layer", "n_classes": 2},
                   "scheduler": {"name": "drr", "weights": [3, 1]}}, buffer_bytes=10**7)
    for i in range(400):
        sw.receive(pkt(i, prio=0 if i % 2 else 7), 1, 0)
    first = drain(sw)[:200]
    high = sum(1 for p in first if p.cls == 0)
    assert 145 <= high <= 155   # 3:1 of 200


def test_least_loaded_picks_the_port_with_fewer_queued_bytes():
    # "far" may leave by port 2 or 3; "via2" and "via3" load one of them with real packets.
    sw = Switch("s", {1: PortConfig(10 * GBPS), 2: PortConfig(GBPS), 3: PortConfig(GBPS)},
                {"far": (2, 3), "via2": (2,), "via3": (3,)},
                {"preset": "fifo", "load_balancer": "least-loaded"})
    for _ in range(3):                       # port 2: one serialising, 2 x 1500 B queued
        sw.receive(Packet(1500, "via2"), 1, 0)
    sw.receive(Packet(1500, "via3"), 1, 0)   # port 3: one serialising, 1 x 9000 B queued
    sw.receive(Packet(9000, "via3"), 1, 0)
    two, three = sw.ports[2], sw.ports[3]
    assert (two.bytes, two.packets, three.bytes, three.packets) == (3000, 2, 9000, 1)
    assert sw.receive(Packet(1500, "far"), 1, 0) is two      # fewer bytes, more packets
    sw.receive(Packet(9000, "via2"), 1, 0)                  # port 2: 13500 B
    assert sw.receive(Packet(1500, "far"), 1, 0) is three


def test_least_loaded_takes_turns_between_equally_loaded_ports():
    sw = Switch("s", {1: PortConfig(10 * GBPS), 2: PortConfig(GBPS), 3: PortConfig(GBPS)},
                {"far": (2, 3)}, {"preset": "fifo", "load_balancer": "least-loaded"})
    # Each takes one packet in turn: the first two start at once, the next two queue.
    chosen = [sw.receive(Packet(1500, "far"), 1, 0).number for _ in range(4)]
    assert sorted(chosen[:2]) == sorted(chosen[2:]) == [2, 3]


def test_unrouted_packet_is_counted_not_lost():
    sw = one_port("fifo")
    sw.receive(Packet(100, "nowhere"), 1, 0)
    assert sw.no_route == 1 and sw.conservation() == (1, 1)
    assert sw.drop_log[0][2] == "no_route"


def test_every_preset_builds_and_names_its_stages():
    for name in PRESETS:
        spec = PipelineSpec.parse(name)
        assert spec.name == name
        assert name in spec.describe()


@pytest.mark.parametrize("spec, message", [
    ("nosuch", "unknown preset 'nosuch'; known: dlcp, dlcp-nodrop"),
    ({"preset": "fifo", "scheduler": "lottery"}, "unknown scheduler 'lottery'; known: drr, fifo, strict"),
    ({"preset": "fifo", "queue_manager": {"name": "dlcp", "treshold": 0.3}},
     "queue manager 'dlcp' has no parameter 'treshold'; allowed: loss_tolerant, threshold"),
    ({"preset": "fifo", "queue_manager": {"name": "dlcp", "threshold": 2}},
     "dlcp: threshold must be a fraction in (0, 1]"),
    ({"preset": "fifo", "colour": "red"}, "switch spec has no field 'colour'"),
    ({"classifier": "single"}, "switch spec needs load_balancer, queue_manager, scheduler"),
    ({"preset": "dlcp", "load_balancer": {"mode": "random"}}, "load_balancer must be a name or a table"),
    ({"preset": "dlcp", "load_balancer": {"name": "spray", "mode": "zigzag"}},
     "spray: mode must be 'round-robin', 'flow-round-robin' or 'random'"),
    ({"preset": "pias", "classifier": {"name": "pias", "thresholds": [5, 3]}},
     "pias: thresholds must be 1..7 increasing"),
])
def test_bad_specs_name_the_field_and_what_is_allowed(spec, message):
    with pytest.raises(SpecError, match=None) as err:
        PipelineSpec.parse(spec)
    assert message in str(err.value)


def test_custom_pipeline_from_parts():
    spec = PipelineSpec.parse({"load_balancer": {"name": "spray", "mode": "random"},
                               "classifier": "dscp", "queue_manager": "ecn", "scheduler": "drr"})
    assert spec.name == "custom"
    assert {s.name for s in (spec.load_balancer, spec.classifier, spec.queue_manager, spec.scheduler)} \
        == {"spray", "dscp", "ecn", "drr"}


def test_registries_list_every_stage_the_design_names():
    assert LOAD_BALANCERS.names() == ["ecmp", "least-loaded", "single", "spray"]
    assert CLASSIFIERS.names() == ["dlcp", "dscp", "job", "layer", "pias", "single"]
    assert QUEUE_MANAGERS.names() == ["dlcp", "droptail", "ecn", "pfabric", "trim"]
    assert SCHEDULERS.names() == ["drr", "fifo", "strict"]


def test_bad_port_and_route_configs_are_errors():
    with pytest.raises(ValueError, match="rate_bps must be a positive number"):
        Switch("s", {1: PortConfig(0)}, {}, "fifo")
    with pytest.raises(ValueError, match=r"route to 'h9' names ports \[7\]; ports are \[1\]"):
        Switch("s", {1: PortConfig(GBPS)}, {"h9": (7,)}, "fifo")
