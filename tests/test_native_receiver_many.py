"""One receiver, many sources: the native receiver against the Python one when tens of
messages from tens of senders (several jobs) are under way at once, their packets shuffled,
trimmed, repeated, and repeated again after their message completed, and the receiver
remembers only a few completed messages. The endpoint pair tests have one sender and a few
messages; this is where a receiver's table of messages grows, and completed messages are
forgotten in the order they completed while others are still under way.

How: each sender is polled until its timers stop giving packets (no feedback reaches it, so
it retransmits and, DLCP, probes); the receiver twins (`transport_twins.Twin`) take those
packets in a drawn order, and every answer, counter and delivery is compared at each call.
"""
import dataclasses
import random

from hypothesis import given, settings, strategies as st

from dlcp_emu.transport import CongestionControl, Message, RttEstimator
from dlcp_emu.wire import Flags, PacketType
from transport_helpers import tensor
from transport_twins import Twin, endpoints

MTU = 576  # small chunks: many packets a message from few values


def _packets(transport, sources, messages, seed):
    """Every packet the senders put out over their first timeouts, with no answer reaching them."""
    sender_cls = endpoints("python", transport)[0]
    out = []
    for s in range(sources):
        job = s % 3
        snd = sender_cls(s + 1, 0, job=job, mtu=MTU, cc=CongestionControl(initial_window=1024),
                         rtt=RttEstimator(initial_rto_ns=100_000, min_rto_ns=50_000))
        for k in range(messages):
            data = tensor(1 + (seed * 31 + s * 7 + k * 13) % 700, seed + s * 100 + k)
            # tensor ids shared between sources and jobs: only the whole key tells messages apart
            snd.send(Message(data, iteration=k % 2, tensor_id=k // 2, priority=k % 8, job=job,
                             src_rank=s + 1, dst_rank=0), 0)
        now = 0
        for _ in range(3):
            out += snd.poll(now)
            t = snd.next_timeout()
            if t is None:
                break
            now = t
    return out


@st.composite
def loads(draw):
    return dict(transport=draw(st.sampled_from(["reliable", "dlcp"])),
                sources=draw(st.integers(1, 40)), messages=draw(st.integers(1, 4)),
                remember=draw(st.sampled_from([1, 2, 7, 4096])), seed=draw(st.integers(0, 2**16)),
                trim=draw(st.sampled_from([0.0, 0.1, 0.5])), repeat=draw(st.sampled_from([0.0, 0.1, 0.5])))


@settings(max_examples=60, deadline=None)
@given(load=loads())
def test_one_receiver_of_many_messages_answers_as_the_python_one(load):
    rng = random.Random(load["seed"])
    packets = _packets(load["transport"], load["sources"], load["messages"], load["seed"])
    # interleaved as many senders' packets arrive; some trimmed, some again at once or at the end
    rng.shuffle(packets)
    arrivals, late = [], []
    for h, payload in packets:
        if h.type == PacketType.DATA and len(payload) and rng.random() < load["trim"]:
            h, payload = dataclasses.replace(h, flags=h.flags | Flags.TRIMMED), b""
        arrivals.append((h, payload))
        if rng.random() < load["repeat"]:
            (arrivals if rng.random() < 0.5 else late).append((h, payload))
    _, R_py = endpoints("python", load["transport"])
    _, R_nat = endpoints("native", load["transport"])
    r = Twin(R_py(0, mtu=MTU, remember=load["remember"]), R_nat(0, mtu=MTU, remember=load["remember"]), "receiver")
    now = 1_000
    for h, payload in arrivals + late:
        now += 100
        r.receive(h, payload, now)
        r.poll(now)
    assert r.calls == 2 * len(arrivals + late)
    if not load["trim"] and load["transport"] == "reliable":  # every chunk arrived whole
        assert len({(d.job, d.src_rank, d.iteration, d.tensor_id) for d in r.results}) == \
            load["sources"] * load["messages"]
