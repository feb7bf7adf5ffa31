"""ECN in the simulator: the packets the transports send ECN-capable (transport/ecn.py) are
`ect` on the simulated wire, an `ecn` queue manager marks them, the mark is delivered to the
receiver, echoed, and the sender's window shrinks: the queue then stays near the mark."""
from topologies import build

from dlcp_emu.host.background import BackgroundEndpoint
from dlcp_emu.sim import SimNetwork
from dlcp_emu.sim.hosts import SimHosts
from dlcp_emu.wire import PacketType

BUFFER = 4_000_000          # deep: a drop-tail queue never overflows here, so no loss
MARK = 0.01                 # of it: 40 kB, about 27 full frames
FLOW_BYTES = 1_500_000


def incast(pipeline, udp_port=9798):
    """h1 and h2 each send one flow to h3 at the same time, on the `reliable` transport's
    endpoints (as background flows: the same objects the emulator runs over UDP); `udp_port`
    None makes them stand in for kernel TCP. Returns (network, endpoints, what was sent)."""
    topo = build("star", hosts=3, host_rate_bps=1e9, buffer_bytes=BUFFER)
    net = SimNetwork(topo, pipeline)
    hosts = SimHosts(net, {}, {})
    eps = {0: BackgroundEndpoint(0, [(0, 2, FLOW_BYTES, 0)]),
           1: BackgroundEndpoint(1, [(0, 2, FLOW_BYTES, 1)]),
           2: BackgroundEndpoint(2, [])}
    hosts.add_job(1, eps, {0: "h1", 1: "h2", 2: "h3"}, udp_port=udp_port)
    sent = []
    send = net.send

    def recording_send(host, pkt, now=None):
        sent.append((pkt.frame[0].type, pkt.ect))
        send(host, pkt, now)

    net.send = recording_send
    hosts.start()
    net.loop.run()
    return net, eps, sent


def port_to_h3(net):
    return net.counters()["s1"]["ports"][3]


ECN = {"preset": "fifo", "queue_manager": {"name": "ecn", "mark_fraction": MARK}}


def test_data_is_ect_and_feedback_is_not():
    _, _, sent = incast(ECN)
    by_type = {}
    for kind, ect in sent:
        by_type.setdefault(PacketType(kind), set()).add(ect)
    assert by_type == {PacketType.DATA: {True}, PacketType.ACK: {False}}


def test_kernel_tcp_stand_ins_are_not_ect_and_never_marked():
    net, _, sent = incast(ECN, udp_port=None)
    assert {ect for _, ect in sent} == {False}
    assert port_to_h3(net)["marked"] == 0


def test_ce_reaches_the_receiver_and_the_senders_windows_shrink():
    plain, plain_eps, _ = incast({"preset": "fifo"})
    marked, marked_eps, _ = incast(ECN)
    p, m = port_to_h3(plain), port_to_h3(marked)
    # Both runs deliver everything with no loss; only the marks differ.
    for net, eps in ((plain, plain_eps), (marked, marked_eps)):
        assert sum(port_to_h3(net)["drops"].values()) == 0
        assert sorted(f[0] for f in eps[0].finished + eps[1].finished) == [0, 1]
    assert p["marked"] == 0 and m["marked"] > 0
    senders = [marked_eps[i].senders[2] for i in (0, 1)]
    plain_senders = [plain_eps[i].senders[2] for i in (0, 1)]
    # Each sender heard CE echoes and cut its window for them (no loss, no timeout to
    # blame), where the same senders without marks never did.
    assert all(s.cc.reductions > 0 and s.cc.timeouts == 0 and s.losses == 0 for s in senders)
    assert all(s.cc.reductions == 0 for s in plain_senders)
    # The window shrinks, and with it the queue: it stays within a few windows' growth
    # of the mark, while drop-tail lets slow start fill it far beyond.
    mark_bytes = MARK * BUFFER
    assert m["max_bytes"] < 3 * mark_bytes < p["max_bytes"], (m["max_bytes"], p["max_bytes"])
    assert max(s.cc.cwnd for s in senders) < min(s.cc.cwnd for s in plain_senders)
