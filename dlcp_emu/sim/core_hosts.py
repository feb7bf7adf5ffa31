"""Endpoints inside the compiled core: `SimHosts` whose HostStacks (training) and
BackgroundEndpoints (background flows) have native endpoints (`endpoints="native"`), adopted
by the core's network (`Network.attach_stack`, dlcp_native/src/host/host_stack.hpp). The core then
runs every packet and every transport timer itself; Python is called per message, not per
packet: when a host's receiver has completed a tensor for its agent, or the agent's timer is
due (the next compute step, the next background flow), to run the agent and hand the
endpoints back (`stack_flush`).

Event for event this is what `SimHosts` does with the same endpoints driven from Python
(deliver -> receive -> pump -> poll -> send, one timer armed at the next timeout), so the
summaries are identical (tests/test_sim_engines.py).
"""
from dlcp_emu.host.background import BackgroundEndpoint
from dlcp_emu.host.packet_log import MAX_RECORDS
from dlcp_emu.sim.hosts import TRAINING, SimHosts
from dlcp_emu.wire import DLCP_UDP_PORT


class CoreHosts(SimHosts):
    def __init__(self, net, stacks, host_of_rank, packet_records=False):
        """net: a `NativeSimNetwork`; stacks: {rank: HostStack with native endpoints};
        packet_records: the training packets' records (`PacketLog`'s), taken by the core."""
        self.core = net.native   # dlcp_native.NativeNetwork: the stacks' calls, bound to the core
        self.stack_id = {}            # (job, rank) -> the core's stack
        self._rank_tables = {}        # job -> (host index, address) by rank
        self.packet_records = packet_records
        super().__init__(net, stacks, host_of_rank)
        for rank, stack in stacks.items():
            if stack.endpoints != "native":
                raise ValueError(f"rank {rank}: the core runs native endpoints only, got {stack.endpoints!r}")
            sid = self._attach(TRAINING, rank, stack.receiver, agent_reads=True)
            stack.on_sender = self._adopt(TRAINING, rank)
            if packet_records:
                self.core.record_packets(sid, MAX_RECORDS)

    def add_training(self, job, stacks, host_of_rank, start_ns=0):
        """As SimHosts.add_training, for HostStacks with native endpoints."""
        SimHosts.add_job(self, job, stacks, host_of_rank, udp_port=DLCP_UDP_PORT, dlcp=True)
        self.jobs[job] = stacks
        self.training.update((job, r) for r in stacks)
        if start_ns:
            self.start_ns[job] = start_ns
        for rank, stack in stacks.items():
            sid = self._attach(job, rank, stack.receiver, agent_reads=True)
            stack.on_sender = self._adopt(job, rank)
            if self.packet_records:
                self.core.record_packets(sid, MAX_RECORDS)

    def add_job(self, job, endpoints, host_of_rank, udp_port=None, dlcp=False):
        """As SimHosts.add_job, for BackgroundEndpoints with native endpoints."""
        super().add_job(job, endpoints, host_of_rank, udp_port, dlcp)
        for rank, ep in endpoints.items():
            if not isinstance(ep, BackgroundEndpoint) or ep.endpoints != "native":
                raise ValueError(f"job {job} rank {rank}: the core runs native BackgroundEndpoints only")
            self._attach(job, rank, ep.receiver, agent_reads=False)
            ep.on_sender = self._adopt(job, rank)

    def _attach(self, job, rank, receiver, agent_reads):
        hosts = self.host_of[job]
        dlcp, port = self.wire[job]
        index = self.net.native.host_index
        if job not in self._rank_tables:     # the same for every stack of the job
            ranks = range(max(hosts) + 1)
            self._rank_tables[job] = ([index[hosts[r]] if r in hosts else -1 for r in ranks],
                                      [self.ip[hosts[r]] if r in hosts else 0 for r in ranks])
        wire = (dlcp, port is not None, -1 if port is None else port, self.ip[hosts[rank]],
                *self._rank_tables[job])
        sid = self.core.attach_stack(index[hosts[rank]], job, receiver._core, wire, agent_reads)
        self.stack_id[(job, rank)] = sid
        self.net.on_agent(sid, lambda now: self._agent(job, rank, now))
        return sid

    def _adopt(self, job, rank):
        def adopt(sender):
            self.core.add_sender(self.stack_id[(job, rank)], sender._core)
        return adopt

    def _agent(self, job, rank, now):
        if job in self.jobs:
            self.jobs[job][rank].pump(now)  # the tensors it completed (background: none read)
        self._flush((job, rank), now)

    def _flush(self, key, now):
        sid = self.stack_id.get(key)
        if sid is None:
            super()._flush(key, now)
            return
        ep = self.endpoints[key]
        ep.agent_turn(now)
        self.core.stack_flush(sid, now, self.loop.major, ep.agent_timer())
        self._collect(key, sid)
        if key in self.training:
            self._check_done(key)

    def collect(self):
        """Tensors and flows finished since their endpoint's agent last ran: into its records."""
        for key, sid in self.stack_id.items():
            self._collect(key, sid)

    def _collect(self, key, sid):
        results = self.core.take_completions(sid)
        if results:   # most turns complete nothing
            self.endpoints[key].completed_rows(results)

    # -- per-packet records, from the core ---------------------------------------------------
    def packet_logs(self):
        if not self.packet_records:
            return []
        return [self.core.packet_records(self.stack_id[(job, rank)])
                for job, stacks in self.jobs.items() for rank in stacks]

    def in_flight_keys(self):
        yield from super().in_flight_keys()
        yield from self.core.carried_in_flight()

    def training_drops(self):
        yield from super().training_drops()
        for name, port, reason, job, key in self.net.carried_drops():
            if job in self.jobs:
                yield key, f"{name}-eth{port}", reason
