"""Background flows over the `reliable` packet transport, sans-I/O: one endpoint per host,
the same object in both worlds (the emulator runs it over UDP in each host's namespace,
`dlcp_emu.emu.background_udp`; the simulator drives it in virtual time). Each flow is one
message of job 1 at the lowest priority, of traffic class none; its completion time is when the sender learns the
last byte arrived.

With `endpoints="native"` the senders and receiver are the compiled ones, which the
simulator's core runs by themselves (`sim.core_hosts`); Python then starts flows
(`agent_turn`, at `agent_timer`) and records them as they finish (`completed`): the agent's
part of a HostStack, under the same names. There a flow may be payload-free
(`payload="sizes"`): the same packets, sizes and classes, without the zeros they would carry
being allocated, copied into each packet and out at the receiver.
"""
import numpy as np

from dlcp_emu.host.endpoints import AgentEndpoints
from dlcp_emu.transport import Message, ReliableReceiver, ReliableSender, RttEstimator
from dlcp_emu.transport import native
from dlcp_emu.wire.layout import TCLASS_NONE

JOB = 1
TRANSPORT = "reliable"       # the packet transport its flows run on (the registry's name)
BACKGROUND_UDP_PORT = 9798


class BackgroundEndpoint(AgentEndpoints):
    def __init__(self, index, flows, mtu=1500, link_rate_bps=None, endpoints="python", payload="values",
                 settings=None):
        """flows: [(start_ns, dst index, nbytes, flow id)] sourced by this host;
        endpoints: "python" or "native" (the same, compiled); payload: "values" (zeros on
        the wire) or "sizes" (payload-free: native endpoints in the simulator only);
        settings: the senders' `TransportSettings` (None: `CongestionControl()` and the RTO
        floors of `RttEstimator.for_link`)."""
        self.index, self.mtu, self.link_rate_bps = index, mtu, link_rate_bps
        self.settings = settings
        if endpoints not in ("python", "native"):
            raise ValueError(f"endpoints must be python or native, got {endpoints!r}")
        if payload not in ("values", "sizes") or (payload == "sizes" and endpoints != "native"):
            raise ValueError(f"payload must be values, or sizes with native endpoints; got {payload!r} "
                             f"with {endpoints} endpoints")
        self.endpoints, self.sized = endpoints, payload == "sizes"
        self.sender_cls = native.ReliableSender if endpoints == "native" else ReliableSender
        gap = None if settings is None else settings.pull_gap_ns(link_rate_bps, mtu)   # NDP: it paces pulls
        if endpoints == "native":
            self.receiver = native.ReliableReceiver(index, mtu=mtu, store=not self.sized, pull_gap_ns=gap)
        else:
            self.receiver = ReliableReceiver(index, mtu=mtu, pull_gap_ns=gap)
        self.on_sender = None     # called with each sender as it is made (the core adopts it)
        self.senders = {}
        self.pending = sorted(flows, reverse=True)     # next to start at the end
        self.started = {}
        # (flow id, dst, nbytes, start_ns, done_ns): all of them in the simulator; the
        # emulator's process takes them out as it streams them (`take_finished`).
        self.finished = []
        self.data_packets = 0     # data packets the finished flows took, retransmissions included

    def receive(self, h, payload, now, ce=False):
        if h.type == 0:
            self.receiver.receive(h, payload, now, ce)
            self.receiver.take_delivered()
        else:
            sender = self.senders.get(h.src_rank)
            if sender is not None:
                sender.receive(h, payload, now, ce)
                self.completed(sender.take_completed())   # as HostStack: in arrival order

    def agent_turn(self, now):
        """The flows whose start has come: each a message to its sender."""
        while self.pending and self.pending[-1][0] <= now:
            start, dst, nbytes, fid = self.pending.pop()
            sender = self.senders.get(dst)
            if sender is None:
                if self.settings is not None:
                    cc, rtt = self.settings.cc(), self.settings.rtt(self.link_rate_bps, self.mtu)
                else:
                    cc = None
                    rtt = None if self.link_rate_bps is None else RttEstimator.for_link(self.link_rate_bps, self.mtu)
                sender = self.senders[dst] = self.sender_cls(self.index, dst, job=JOB, mtu=self.mtu, cc=cc, rtt=rtt)
                if self.on_sender is not None:
                    self.on_sender(sender)
            values = max(1, -(-nbytes // 4))   # float32 zeros: a flow's bytes, whole values
            if self.sized:   # zeros' chunk magnitudes are zero: the classes the values get
                chunks = -(-values * 4 // sender.payload_size)
                sender.send(Message(None, tensor_id=fid, priority=7, job=JOB, src_rank=self.index, dst_rank=dst,
                                    chunk_magnitudes=np.zeros(chunks), tclass=TCLASS_NONE), now, nbytes=values * 4)
            else:
                sender.send(Message(np.zeros(values, np.float32), tensor_id=fid, priority=7, job=JOB,
                                    src_rank=self.index, dst_rank=dst, tclass=TCLASS_NONE), now)
            self.started[fid] = (dst, nbytes, start)

    def agent_timer(self):
        """When the next flow starts (None: no flow is left to start)."""
        return self.pending[-1][0] if self.pending else None

    def completed(self, results):
        """Flows the senders know to have arrived whole (SendResults)."""
        for r in results:
            dst, nbytes, start = self.started.pop(r.tensor_id)
            self.finished.append((r.tensor_id, dst, nbytes, start, r.done_ns))
            self.data_packets += r.packets

    def take_finished(self):
        out, self.finished = self.finished, []
        return out


def flow_rows(finished, started, t0, ip_of):
    """Flows as `background_tcp` streams them (start times from t0): finished ones
    ((flow id, dst, nbytes, start, done)) and those still under way ({id: (dst, nbytes, start)})."""
    rows = [{"start_ns": start - t0, "dst": ip_of[dst], "bytes": n, "state": "done",
             "fct_ns": done - start, "error": None} for _, dst, n, start, done in finished]
    rows += [{"start_ns": start - t0, "dst": ip_of[dst], "bytes": n, "state": "sending",
              "fct_ns": None, "error": None} for dst, n, start in started.values()]
    return rows
