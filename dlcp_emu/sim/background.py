"""Background traffic in the simulator. The emulator sends it over kernel TCP, which the
simulator has no model of; here each flow is a message of the `reliable` transport (window
congestion control reacting to loss and ECN), in job 1, marked as non-DLCP traffic at the
lowest priority, as the emulator's switches see TCP. Flow completion time is when the
sender learns the last byte arrived. An approximation, named as such in the summary."""
import numpy as np

from ..transport import Message, ReliableReceiver, ReliableSender, RttEstimator

JOB = 1


class BackgroundEndpoint:
    def __init__(self, index, flows, mtu=1500, link_rate_bps=None):
        """flows: [(start_ns, dst index, nbytes, flow id)] sourced by this host."""
        self.index, self.mtu, self.link_rate_bps = index, mtu, link_rate_bps
        self.receiver = ReliableReceiver(index, mtu=mtu)
        self.senders = {}
        self.pending = sorted(flows, reverse=True)     # next to start at the end
        self.started = {}
        self.finished = []                             # (flow id, dst, nbytes, start_ns, done_ns)

    def receive(self, h, payload, now, ce=False):
        if h.type == 0:
            self.receiver.receive(h, payload, now, ce)
            self.receiver.take_delivered()
        else:
            sender = self.senders.get(h.src_rank)
            if sender is not None:
                sender.receive(h, payload, now, ce)

    def poll(self, now):
        while self.pending and self.pending[-1][0] <= now:
            start, dst, nbytes, fid = self.pending.pop()
            sender = self.senders.get(dst)
            if sender is None:
                rtt = None if self.link_rate_bps is None else RttEstimator.for_link(self.link_rate_bps, self.mtu)
                sender = self.senders[dst] = ReliableSender(self.index, dst, job=JOB, mtu=self.mtu, rtt=rtt)
            sender.send(Message(np.zeros(max(1, -(-nbytes // 4)), np.float32), tensor_id=fid,
                                priority=7, job=JOB, src_rank=self.index, dst_rank=dst), now)
            self.started[fid] = (dst, nbytes, start)
        out = self.receiver.poll(now)
        for sender in self.senders.values():
            out.extend(sender.poll(now))
            for r in sender.take_completed():
                dst, nbytes, start = self.started.pop(r.tensor_id)
                self.finished.append((r.tensor_id, dst, nbytes, start, r.done_ns))
        return out

    def next_timeout(self):
        times = [self.pending[-1][0] if self.pending else None, self.receiver.next_timeout()]
        times += [s.next_timeout() for s in self.senders.values()]
        return min((t for t in times if t is not None), default=None)
