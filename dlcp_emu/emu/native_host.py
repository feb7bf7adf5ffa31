"""A host process's data plane compiled (`dlcp_native.host.UdpHost`,
dlcp_native/src/host/udp_host.cpp): what `UdpDriver` does with the Python endpoints (read each
datagram, hand it to the endpoints, send what they put out, ECT(0) on data and probes, CE
and the kernel's arrival stamp read on arrival) with the compiled endpoints and no Python
per packet; recvmmsg and sendmmsg move a batch a call.

The agent stays in Python and runs per message: the loop returns when the receiver has
completed a tensor the agent reads, the agent's timer is due or a sender knows a tensor
complete; `serve` then runs the agent's part of the endpoint (`pump`, `agent_turn` and
`completed`, the calls `HostStack.receive` and `poll` make) and goes on. The endpoint (a `HostStack` or a `BackgroundEndpoint`) must
have native endpoints; its senders join the loop as the agent makes them.

Which data plane a host process runs, this one or `UdpDriver` with the Python endpoints, is
`experiment.engine.choose_engine`'s to say (from the spec's `engine` and the transport).
"""
import os
import signal
import time
from collections import deque

from dlcp_native.host import UdpHost

AGENT, WAKE = 1, 2
LAG_SAMPLES = 10_000
BATCH = 32


class NativeUdpHost:
    """The surface of a `UdpDriver` that hostd and background_udp use (`serve`, `sent`,
    `received`, `malformed`, `rx_lag_ns`), over an endpoint with native endpoints."""

    def __init__(self, endpoint, sock, peers, *, job, agent_reads, measure_lag=False,
                 signals=True, clock=time.monotonic_ns, control_first=False):
        """peers: {rank: (ip, port)}; agent_reads: the agent takes the receiver's tensors
        (training) or they are let go (background flows); signals: a signal wakes the loop
        (the main thread only; `wake` does it from another thread); control_first: a
        `priority` host queue (`host_egress`): control packets waiting for the socket go
        ahead of data."""
        if getattr(endpoint, "endpoints", None) != "native":
            raise ValueError("the compiled data plane runs native endpoints only")
        self.endpoint, self.sock, self.clock = endpoint, sock, clock
        # A signal wakes the loop (its handler runs once the loop returns to Python).
        self._wake_r, self._wake_w = os.pipe()
        for fd in (self._wake_r, self._wake_w):
            os.set_blocking(fd, False)
        self._old_wakeup = signal.set_wakeup_fd(self._wake_w) if signals else None
        self.core = UdpHost(sock.fileno(), endpoint.receiver._core, job,
                                  {int(r): (a[0], int(a[1])) for r, a in peers.items()}, agent_reads,
                                  ecn=True, measure_lag=measure_lag, batch=BATCH, wake_fd=self._wake_r,
                                  lag_limit=LAG_SAMPLES, control_first=control_first)
        endpoint.on_sender = lambda sender: self.core.add_sender(sender._core)
        for sender in endpoint.senders.values():
            self.core.add_sender(sender._core)
        self._pump = getattr(endpoint, "pump", None)      # HostStack: deliveries to the agent
        self._lag = deque(maxlen=LAG_SAMPLES)
        # The agent's turns: count, sum ns, max ns (packets wait in the socket meanwhile).
        self.agent_turns = [0, 0, 0]

    def serve(self, until, stopping, leave=None):
        """Packets and transport timers in the core until `until` (monotonic ns), a stop or
        `leave()` (asked after each turn of the agent); the agent in Python whenever it has
        to run."""
        ep, core = self.endpoint, self.core
        core.set_agent_timer(ep.agent_timer())
        while not stopping:
            r = core.run(until)
            now = self.clock()
            if r == AGENT:
                if self._pump is not None:
                    self._pump(now)
                ep.agent_turn(now)
                core.set_agent_timer(ep.agent_timer())
                took = self.clock() - now
                self.agent_turns[0] += 1
                self.agent_turns[1] += took
                self.agent_turns[2] = max(self.agent_turns[2], took)
            elif r == WAKE:
                self._drain_wakeup()
            self._collect()
            if r not in (AGENT, WAKE) or (leave is not None and leave()):
                return

    def _collect(self):
        done = self.core.take_completions()
        if done:
            self.endpoint.completed_rows(done)

    def _drain_wakeup(self):
        try:
            while os.read(self._wake_r, 512):
                pass
        except BlockingIOError:
            pass

    def wake(self):
        """Make `serve` look at its stop flag now (from another thread)."""
        os.write(self._wake_w, b"x")

    def close(self):
        if self._old_wakeup is not None:
            signal.set_wakeup_fd(self._old_wakeup)
        for fd in (self._wake_r, self._wake_w):
            os.close(fd)

    def record_packets(self, max_records):
        self.core.record_packets(max_records)

    def packet_records(self):
        """As `PacketLog.records()`: {"sent", "received", "overflow"}."""
        return self.core.packet_records()

    @property
    def rx_lag_ns(self):
        """The latest receive lags (ns from the kernel's arrival stamp to handling)."""
        self._lag.extend(self.core.take_rx_lag().tolist())
        return self._lag

    def counters(self):
        return self.core.counters()

    sent = property(lambda self: self.core.counters()["sent"])
    received = property(lambda self: self.core.counters()["received"])
    malformed = property(lambda self: self.core.counters()["malformed"])
    backlogged = property(lambda self: self.core.backlog > 0)
