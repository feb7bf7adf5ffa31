"""Endpoints on the simulated network: each endpoint's packets become `switch_models.Packet`
objects carrying (header, payload), through the header -> Packet codec the emulator's frame
parser uses too (`dlcp_emu.wire.packet`), and what the switches did to them (trim, CE) is
applied on delivery, as the emulator's data path applies it to frames.

Endpoints are keyed by (job, rank): job 0 is the training (HostStacks), job 1 background
traffic, more training jobs (a spec's [[jobs]]) 2, 3, ... (`add_training`); each job has its
own rank -> host map, and a host demultiplexes by the job field."""
import dataclasses
import ipaddress

from switch_models import REWRITE_CE, REWRITE_TRIM

from dlcp_emu.host.packet_log import PacketLog, packet_key
from dlcp_emu.transport.ecn import ECN_CAPABLE_TYPES
from dlcp_emu.wire import DLCP_UDP_PORT, FRAME_OVERHEAD, Flags
from dlcp_emu.wire.flow import flow_hash
from dlcp_emu.wire.layout import BACKGROUND_TCP_PORT, PacketType
from dlcp_emu.wire.packet import dlcp_packet, plain_packet

TRAINING = 0


class SimHosts:
    def __init__(self, net, stacks, host_of_rank):
        """stacks: {rank: HostStack} of the training job; host_of_rank: {rank: host name}."""
        self.net, self.loop = net, net.loop
        self.stacks = stacks
        self.jobs = {TRAINING: stacks}   # training job -> {rank: HostStack}
        self.start_ns = {}               # training job -> when its agents start (absent: at start)
        self.endpoints = {(TRAINING, r): s for r, s in stacks.items()}
        self.host_of = {TRAINING: dict(host_of_rank)}
        topo = net.topology
        self.index = {h: i for i, h in enumerate(topo.hosts())}
        self.ip = {h: int(ipaddress.IPv4Address(topo.host_ip(h))) for h in topo.hosts()}
        self.by_host = {}
        self.wire = {TRAINING: (True, DLCP_UDP_PORT)}   # job -> (DLCP?, UDP port or None: TCP)
        self.armed = {}     # key -> the endpoint's timeout, as last armed (None: fired)
        self.queued = {}    # key -> the time of its earliest timer event in the loop
        self.packets_sent = 0
        self.training = {(TRAINING, r) for r in stacks}   # (job, rank) whose agent is not done yet
        for rank, host in host_of_rank.items():
            self.by_host.setdefault(host, {})[TRAINING] = rank
        for host in net.topology.hosts():
            net.on_receive(host, self._receiver(host))

    def add_job(self, job, endpoints, host_of_rank, udp_port=None, dlcp=False):
        """More endpoints (e.g. background flows), as the emulator's switches see them: not
        DLCP (only the DLCP port is parsed as such), so the lowest priority. With `udp_port`
        they are a packet transport on that port (one flow per host pair); without, they
        stand in for kernel TCP (one flow per message). `dlcp` sends them on the DLCP port
        instead, parsed as DLCP packets: what NDP trimming acts on (non-DLCP ones it drops)."""
        if dlcp and udp_port is None:
            raise ValueError("dlcp: a job on the DLCP port is a packet transport; kernel TCP stand-ins "
                             "(udp_port None) are never DLCP")
        self.host_of[job] = dict(host_of_rank)
        self.wire[job] = (True, DLCP_UDP_PORT) if dlcp else (False, udp_port)
        for rank, ep in endpoints.items():
            self.endpoints[(job, rank)] = ep
            self.by_host.setdefault(host_of_rank[rank], {})[job] = rank

    def add_training(self, job, stacks, host_of_rank, start_ns=0):
        """Another training job's HostStacks (a spec's [[jobs]]), on the DLCP port as job 0's,
        its agents starting at start_ns."""
        self.add_job(job, stacks, host_of_rank, udp_port=DLCP_UDP_PORT, dlcp=True)
        self.jobs[job] = stacks
        self.training.update((job, r) for r in stacks)
        if start_ns:
            self.start_ns[job] = start_ns

    def all_stacks(self):
        """Every training job's HostStacks, job by job."""
        return [s for stacks in self.jobs.values() for s in stacks.values()]

    def start(self):
        now = self.loop.now
        for key, ep in self.endpoints.items():
            at = self.start_ns.get(key[0])
            if at is not None and at > now:
                self.loop.at(at, self._start_late, key)
                continue
            if hasattr(ep, "start"):
                ep.start(now)
            self._flush(key, now)

    def _start_late(self, key):
        now = self.loop.now
        self.endpoints[key].start(now)
        self._flush(key, now)

    def _receiver(self, host):
        def deliver(pkt, now):
            h, payload = pkt.frame
            rank = self.by_host.get(host, {}).get(h.job)
            if rank is None:
                return
            if pkt.rewrite & REWRITE_TRIM:
                h = dataclasses.replace(h, flags=h.flags | Flags.TRIMMED)
                payload = b""
            key = (h.job, rank)
            self.endpoints[key].receive(h, payload, now, bool(pkt.rewrite & REWRITE_CE))
            self._flush(key, now)
        return deliver

    def _flush(self, key, now):
        job, rank = key
        ep = self.endpoints[key]
        hosts = self.host_of[job]
        src = hosts[rank]
        dlcp, port = self.wire[job]
        # ECT as the emulator's hosts send it: the packet transports' rule; kernel TCP
        # (stood in for without a port) does not ask for ECN (net.ipv4.tcp_ecn = 2).
        ect = ECN_CAPABLE_TYPES if port is not None else ()
        ip = self.ip
        send = self.net.send
        for h, payload in ep.poll(now):
            dst = hosts[h.dst_rank]
            # The 5-tuple the emulator's frame would carry (wire.flow): the same ECMP paths.
            if port is not None:
                flow = flow_hash(ip[src], ip[dst], 17, port, port)
            else:   # kernel TCP, stood in for: a port per message to the background server's
                flow = flow_hash(ip[src], ip[dst], 6, h.tensor_id & 0xFFFF, BACKGROUND_TCP_PORT)
            size = FRAME_OVERHEAD + len(payload)
            if dlcp:
                pkt = dlcp_packet(size, dst, flow, h.priority, h.mag_class, h.tensor_id, h.flags,
                                  h.type in ect, False, (h, payload), h.tclass, h.job,
                                  h.type != PacketType.DATA)
            else:
                pkt = plain_packet(size, dst, flow, ect=h.type in ect, frame=(h, payload))
            send(src, pkt, now)
            self.packets_sent += 1
        t = ep.next_timeout()
        if t is not None and self.armed.get(key) != t:
            self._arm(key, t)
        if key in self.training:
            self._check_done(key)

    def _arm(self, key, t):
        """The endpoint's timer at t. A sender's timeout moves later with every ACK: an event
        for each move left the heap holding ~600 stale ones a host (a fat tree of 128 hosts:
        81k), so an event is scheduled only when t comes before the one already waiting,
        which on firing waits on to the timeout armed last (`_timer`)."""
        self.armed[key] = t
        at = t if t > self.loop.now else self.loop.now
        queued = self.queued.get(key)
        if queued is None or at < queued:
            self.queued[key] = at
            self.loop.at(at, self._timer, key, at)

    def _timer(self, key, t):
        if self.queued.get(key) != t:
            return                      # superseded by an earlier one
        self.queued[key] = None
        armed = self.armed.get(key)
        if armed is not None and armed > t:
            self.queued[key] = armed    # re-armed later while this one waited
            self.loop.at(armed, self._timer, key, armed)
            return
        if armed != t:
            return
        self.armed[key] = None
        self._flush(key, self.loop.now)

    def _check_done(self, key):
        """Stop the loop the moment the last agent is done, not at the end of a slice."""
        job, rank = key
        if self.jobs[job][rank].agent.done:
            self.training.discard(key)
            if not self.training:
                self.loop.stop()

    # -- per-packet records (spec.packet_records: the stacks are PacketLogs) ------------------
    def packet_logs(self):
        return [st.records() for st in self.all_stacks() if isinstance(st, PacketLog)]

    def in_flight_keys(self):
        """The keys (`packet_key`) of the hosts' packets still in the network."""
        return (packet_key(p.frame[0]) for p in self.net.in_flight() if p.frame is not None)

    def training_drops(self):
        """(packet key, interface, reason) of every training packet a switch or NIC dropped."""
        for name, _, port, reason, pkt in self.net.drops():
            if pkt.frame is not None and pkt.frame[0].job in self.jobs:
                yield packet_key(pkt.frame[0]), f"{name}-eth{port}", reason

    def collect(self):
        """Bring the endpoints' records up to date (every one is, here: see CoreHosts)."""

    def done(self):
        """Training is over once every agent is: each has all the data it waited for. A
        sender may still wait for its last acknowledgements (after a loss, for a backed-off
        retransmission timer); running on for those would only stretch the run, and the
        utilisation averaged over it, with background traffic."""
        return all(s.agent.done for s in self.all_stacks())
