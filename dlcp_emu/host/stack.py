"""One host's stack, sans-I/O: its agent (worker or parameter server) over its transport
endpoints (a sender per destination, one receiver).

It has the surface of a transport endpoint (`receive(h, payload, now, ce)`, `poll(now)`,
`next_timeout()`), so the same drivers run it: `transport.udp_driver` on real sockets in a
Mininet host, the simulator's network in virtual time. With `endpoints="native"` its
endpoints are the compiled ones, which the simulator's core can run by themselves
(`sim.core_hosts`): then only the agent's part is called from Python (`pump`, `agent_turn`,
`agent_timer`, `completed`).
"""
from collections import deque

import numpy as np

from dlcp_emu.host.endpoints import AgentEndpoints
from dlcp_emu.transport import MagnitudePolicy, Message, SendResult
from dlcp_emu.transport.settings import TransportSettings
from dlcp_emu.transport import transport as find_transport
from dlcp_emu.transport.message import DEFAULT_DROPPABLE_FRACTION, DEFAULT_LOSS_BOUND
from dlcp_emu.wire import PacketType

FEEDBACK = (PacketType.ACK, PacketType.BITMAP)
TOP_CLASS = 7          # the largest-magnitude class
TIMER_SAMPLES = 10_000  # compute-timer lateness samples a host keeps (its records carry them)
ENDPOINTS = ("python", "native")


class HostStack(AgentEndpoints):
    def __init__(self, rank, agent, transport="reliable", *, mtu=1500, job=0,
                 loss_bound=DEFAULT_LOSS_BOUND, droppable_fraction=DEFAULT_DROPPABLE_FRACTION,
                 link_rate_bps=None, drop_order="magnitude", seed=0, endpoints="python", store=True,
                 settings=None):
        """link_rate_bps: the host's link rate as emulated (scaled), which sets the senders'
        retransmission timer floors (`RttEstimator.for_link`); None keeps the defaults.
        settings: the senders' congestion control and RTO floor (`TransportSettings`).
        drop_order, seed: which chunks bounded loss may give up (`MagnitudePolicy`).
        endpoints: "python" (the models) or "native" (the same, compiled); store: False for
        payload-free runs (native endpoints: the receiver keeps no bytes)."""
        t = find_transport(transport)
        if t.kernel:
            raise ValueError(f"transport {t.name!r} is the kernel's: it has no packet endpoints to stack")
        if endpoints not in ENDPOINTS:
            raise ValueError(f"endpoints must be one of {', '.join(ENDPOINTS)}, got {endpoints!r}")
        if endpoints == "native" and not t.native:
            raise ValueError(f"endpoints: transport {t.name!r} has no native twin; use 'python' "
                             "(experiment.engine.choose_engine says which a run takes)")
        self.rank, self.agent, self.job, self.mtu = rank, agent, job, mtu
        self.link_rate_bps = link_rate_bps
        self.settings = settings or TransportSettings()
        self.endpoints = endpoints
        if endpoints == "native":
            self.sender_cls, receiver_cls = t.native_sender, t.native_receiver
        else:
            self.sender_cls, receiver_cls = t.sender, t.receiver
        self.on_sender = None     # called with each sender as it is made (the core adopts it)
        self.policy = MagnitudePolicy(droppable_fraction=droppable_fraction, loss_bound=loss_bound,
                                      drop_order=drop_order, seed=seed)
        if not store and endpoints != "native":
            raise ValueError("a payload-free stack (store=False) needs native endpoints")
        gap = self.settings.pull_gap_ns(link_rate_bps, mtu)   # NDP's pulls: the receiver paces them
        kw = ({} if store else {"store": False}) | ({} if gap is None else {"pull_gap_ns": gap})
        self.receiver = receiver_cls(rank, mtu=mtu, **kw)
        self.senders = {}
        self.deliveries = []      # (src, iteration, tensor_id, bytes, lost bytes, first_ns, done_ns,
                                  #  {magnitude class: lost bytes})
        self._completions = []    # SendResults
        self._completion_rows = []  # the core's rows of SendResults not yet asked for (`completed_rows`)
        # ns each compute timer fired after its planned time: the latest TIMER_SAMPLES, and
        # the sum of all (a list of every one grew without bound over a long run).
        self.timer_lateness = deque(maxlen=TIMER_SAMPLES)
        self.timer_lateness_sum = 0

    # -- endpoint surface ---------------------------------------------------------------
    def start(self, now):
        self.agent.start(now)
        self.pump(now)

    def receive(self, h, payload, now, ce=False):
        if h.type in FEEDBACK:
            sender = self.senders.get(h.src_rank)
            if sender is not None:
                sender.receive(h, payload, now, ce)
                self.completed(sender.take_completed())
        else:
            self.receiver.receive(h, payload, now, ce)
        self.pump(now)

    # poll, next_timeout: AgentEndpoints

    @property
    def done(self):
        return self.agent.done and not any(s.pending for s in self.senders.values())

    # -- the agent's part ---------------------------------------------------------------------
    def agent_turn(self, now):
        """What a poll does before its endpoints': the agent's timer, if it is due."""
        t = self.agent.next_timer()
        if t is not None and t <= now:
            # How late compute ended against the plan: the host side of fidelity.
            self.timer_lateness.append(now - t)
            self.timer_lateness_sum += now - t
            self.agent.on_timer(now)
            self.pump(now)

    def agent_timer(self):
        """When the agent's part next has to run (None: never without input)."""
        return self.agent.next_timer()

    def completed(self, results):
        """Tensors the senders know to have arrived (SendResults), for the records."""
        self.completions.extend(results)

    def completed_rows(self, rows):
        """The same as the core's rows (SendResult's fields in order), made SendResults only
        when `completions` is read: the simulator never reads them (records.py's streaming is
        the emulator's), and at 1024 ranks making 2.1M of them was 4.8 s of a 97 s run."""
        self._completion_rows.append(rows)

    @property
    def completions(self):
        """The SendResults so far, in the order completed (a list the caller may empty)."""
        if self._completion_rows:
            self._completions.extend(SendResult(*r) for rows in self._completion_rows for r in rows)
            self._completion_rows.clear()
        return self._completions

    def sender(self, dst):
        """The sender to rank `dst`, made on the first message to it."""
        sender = self.senders.get(dst)
        if sender is None:
            sender = self.senders[dst] = self.sender_cls(
                self.rank, dst, job=self.job, mtu=self.mtu, policy=self.policy,
                cc=self.settings.cc(), rtt=self.settings.rtt(self.link_rate_bps, self.mtu))
            if self.on_sender is not None:
                self.on_sender(sender)
        return sender

    def pump(self, now):
        """Tensors the receiver delivered to the agent, and the agent's sends to the senders:
        what follows `receive`. Runs once a message in the simulator's core: the lookups are
        hoisted out of the loops."""
        delivered = self.receiver.take_delivered()
        if delivered:
            keep, on_message = self.deliveries.append, self.agent.on_message
            for d in delivered:
                by_class = d.lost_bytes_by_class
                keep((d.src_rank, d.iteration, d.tensor_id, d.nbytes, d.lost_bytes, d.first_ns, d.done_ns,
                      {int(k): int(v) for k, v in by_class.items()} if by_class else {}))
                data = None if d.data is None else np.asarray(d.data, dtype=np.float32).ravel()
                on_message(d.src_rank, d.iteration, d.tensor_id, data, d.lost_ranges, now)
        for m in self.agent.take_sends():
            sender = self.senders.get(m.dst) or self.sender(m.dst)
            if m.data is None and not m.exact:   # payload-free: the chunks' magnitudes come with it
                sender.send(Message(None, m.iteration, m.tensor_id, m.priority, self.job, self.rank, m.dst,
                                    m.magnitudes(sender.payload_size), tclass=m.tclass), now, m.nbytes)
                continue
            # A message that must arrive whole (sparse) is never droppable; its values are
            # the bucket's largest, so its packets carry the highest magnitude class.
            exact, sized = m.exact, m.data is None
            sender.send(Message(m.data, iteration=m.iteration, tensor_id=m.tensor_id,
                                priority=m.priority, job=self.job, src_rank=self.rank,
                                dst_rank=m.dst, tclass=m.tclass, mag_class=TOP_CLASS if exact else None,
                                droppable=False if exact else None,
                                chunk_magnitudes=m.magnitudes(sender.payload_size) if sized else None),
                        now, **({"nbytes": m.nbytes} if sized else {}))
