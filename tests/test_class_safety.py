"""Traffic classes at a DLCP switch: bounded loss acts on the loss-tolerant classes only.

The sans-I/O switch (`switch_models.Switch`, one congested egress port) and its native twin
are driven directly with hypothesis-drawn mixes of classes under overload, the sender's
droppable flag drawn at random too (a sender may flag an activation droppable: the switch
must not believe it). Every packet that goes in is forwarded, or dropped with a reason and
counted; no packet of a class outside `loss_tolerant` is ever dropped by the bounded-loss
rules (refused at a threshold or evicted), nor trimmed; and the two twins agree on all of it.
"""
import pytest
from hypothesis import given, settings, strategies as st

from dlcp_native import NativeSwitch
from switch_models import Packet, PipelineSpec, PortConfig, SpecError, Switch
from switch_models.classifiers import Dlcp
from switch_models.packet import REWRITE_TRIM
from switch_models.queue_managers import BUFFER_FULL, DLCP_EVICTED, DLCP_THRESHOLD
from switch_models.traffic import GRADIENT, LOSS_TOLERANT, TRAFFIC_CLASSES
from tiers import examples

BOUNDED_LOSS = {DLCP_THRESHOLD, DLCP_EVICTED}
# One 1 Gbit/s egress port (8 ns a byte), fed from another: arrivals every few hundred ns
# overload it.
PORT, IN = 1, 2
ROUTES = {"dst": (PORT,)}

# (gap ns, size, traffic class, magnitude class, priority, droppable flag)
arrivals = st.lists(
    st.tuples(st.sampled_from([0, 0, 50, 200, 1000]), st.sampled_from([64, 500, 1500]) | st.integers(64, 1500),
              st.integers(0, len(TRAFFIC_CLASSES) - 1), st.integers(0, 7), st.integers(0, 7), st.booleans()),
    min_size=20, max_size=300)
pipelines = st.sampled_from([
    "dlcp", "dlcp-noprio", "dlcp-nospray",
    {"preset": "dlcp", "queue_manager": {"name": "dlcp", "threshold": 0.2}},
    {"preset": "dlcp", "loss_tolerant": ["gradient", "activation"]},
    {"preset": "dlcp", "loss_tolerant": []},
])


def drive(switch_cls, pipeline, stream, buffer_bytes):
    """Each packet's fate {uid: ("sent", cls, rewrite) | (reason,)} and the switch."""
    sw = switch_cls("s1", {PORT: PortConfig(1e9, buffer_bytes=buffer_bytes), IN: PortConfig(1e9)}, ROUTES,
                    pipeline, record_drops=True)
    fate, t = {}, 0
    for uid, (gap, size, tclass, mag, prio, droppable) in enumerate(stream):
        t += gap
        pkt = Packet(size, "dst", flow=uid % 3, prio=prio, mag=mag, droppable=droppable, dlcp=True,
                     uid=uid, tclass=tclass)
        sw.receive(pkt, IN, t)
        for _, out in sw.poll(t):
            fate[out.uid] = ("sent", out.cls, out.rewrite)
    while (e := sw.next_event_time()) is not None:
        for _, out in sw.poll(e):
            fate[out.uid] = ("sent", out.cls, out.rewrite)
    for _, _, reason, pkt in sw.drop_log:
        assert pkt.uid not in fate, f"packet {pkt.uid} both sent and dropped"
        fate[pkt.uid] = (reason,)
    return fate, sw


def tolerant_codes(pipeline):
    names = pipeline.get("loss_tolerant", LOSS_TOLERANT) if isinstance(pipeline, dict) else LOSS_TOLERANT
    return {TRAFFIC_CLASSES.index(n) for n in names}


@settings(max_examples=examples(150), deadline=None)
@given(pipelines, arrivals, st.sampled_from([3000, 6000, 20_000]))
def test_bounded_loss_never_drops_a_class_that_must_arrive_whole(pipeline, stream, buffer_bytes):
    fates = {}
    for name, cls in (("python", Switch), ("native", NativeSwitch)):
        fate, sw = drive(cls, pipeline, stream, buffer_bytes)
        # every packet in is forwarded, or dropped with a reason, and counted
        assert sorted(fate) == list(range(len(stream))), name
        taken, accounted = sw.conservation()
        assert taken == accounted == len(stream), name
        counted = sw.counters()["ports"][PORT]
        assert sum(counted["drops"].values()) == sum(1 for f in fate.values() if f[0] != "sent"), name
        fates[name] = fate
    assert fates["native"] == fates["python"]
    tolerant = tolerant_codes(pipeline)
    for uid, f in fates["python"].items():
        tclass, droppable = stream[uid][2], stream[uid][5]
        if tclass not in tolerant or not droppable:
            assert f[0] not in BOUNDED_LOSS, (uid, TRAFFIC_CLASSES[tclass], f)
            assert f[0] == "sent" and not f[2] & REWRITE_TRIM or f[0] == BUFFER_FULL, (uid, f)


def test_a_congested_mix_exercises_both_sides():
    """The property above has teeth: under overload a gradient is dropped by bounded loss
    while an activation flagged droppable in the same stream is not (it evicts gradients)."""
    stream = [(0, 1500, GRADIENT if i % 2 else TRAFFIC_CLASSES.index("activation"), 0, 7, True)
              for i in range(40)]
    fate, _ = drive(Switch, "dlcp", stream, 6000)
    grads = [fate[u][0] for u in range(1, 40, 2)]
    acts = [fate[u][0] for u in range(0, 40, 2)]
    assert set(grads) & BOUNDED_LOSS
    assert not set(acts) & BOUNDED_LOSS and acts.count("sent") > grads.count("sent")


def test_the_dlcp_classifier_serves_lossless_classes_above_every_gradient():
    c = Dlcp()
    for tclass, name in enumerate(TRAFFIC_CLASSES):
        for prio in range(8):
            for mag in range(8):
                got = c.classify(Packet(100, "dst", prio=prio, mag=mag, dlcp=True, tclass=tclass))
                if name in ("gradient", "none"):
                    assert 1 <= got <= 7
                else:
                    assert got == 0
    every = Dlcp(loss_tolerant=list(TRAFFIC_CLASSES))      # nothing lossless: no class kept
    assert every.classify(Packet(100, "dst", prio=0, mag=7, dlcp=True, tclass=2)) == 0
    assert every.classify(Packet(100, "dst", prio=7, mag=0, dlcp=True, tclass=2)) == 7


@pytest.mark.parametrize("spec, message", [
    ({"preset": "dlcp", "loss_tolerant": ["gradient", "activations"]}, "loss_tolerant"),
    ({"preset": "dlcp", "loss_tolerant": "gradient"}, "loss_tolerant"),
    ({"preset": "fifo", "loss_tolerant": ["gradient"]}, "needs a stage that takes it"),
    ({"preset": "dlcp", "loss_tolerant": ["gradient"],
      "queue_manager": {"name": "dlcp", "loss_tolerant": ["gradient"]}}, "both switch-wide and in queue_manager"),
    ({"preset": "dlcp", "classifier": {"name": "dlcp", "loss_tolerant": ["grad"]}}, "loss_tolerant"),
])
def test_bad_loss_tolerant_names_the_field_and_the_classes(spec, message):
    with pytest.raises(SpecError, match=message) as e:
        PipelineSpec.parse(spec)
    if "loss_tolerant" == message:
        assert all(c in str(e.value) for c in TRAFFIC_CLASSES)


def test_switch_wide_loss_tolerant_reaches_both_stages():
    spec = PipelineSpec.parse({"preset": "dlcp", "loss_tolerant": ["gradient", "activation"]})
    assert spec.name == "dlcp+custom"
    assert spec.classifier.params == {"loss_tolerant": ["gradient", "activation"]}
    assert spec.queue_manager.params == {"loss_tolerant": ["gradient", "activation"]}
    assert PipelineSpec.parse("dlcp").name == "dlcp"


def test_the_schedules_classes_are_the_wire_codes():
    from workloads.schedule import TrafficClass
    assert [c.label for c in sorted(TrafficClass)] == list(TRAFFIC_CLASSES)
