"""Egress port: the queues of one link, its queue manager and scheduler, and the serialiser.

Like an ns-3 queue disc attached to a net device: the queue manager admits, drops, trims or
marks (`qm.enqueue`), the scheduler picks the next queue, and the serialiser sends one packet
at a time at the link rate. A packet starts serialising at max(port free, its arrival) and
leaves at start + size / rate + link delay (`pkt.depart`): the schedule follows from the
arrivals alone, however late the caller polls. How late the real driver was against that
schedule is its fidelity figure.

Evicted packets stay in their deque marked not queued (`pkt.queued` is None) and are skipped
at dequeue, so eviction from the middle of a queue is O(1); live counts exclude them.
`pkt.queued` names the port that holds the packet, not just a flag: the simulator hands the
same Packet object from switch to switch, and a stale index entry here must not mistake a
packet queued further along its path for one of this port's.
"""
from collections import deque


# Preamble, start delimiter, inter-frame gap and FCS: what a real link spends per frame
# beyond the bytes a veth carries.
ETHERNET_OVERHEAD = 24


def check_link(what, rate_bps, delay_ns, buffer_bytes=None):
    """A link's settings as every model of one takes them (port, NIC, the native port)."""
    if not (isinstance(rate_bps, (int, float)) and rate_bps > 0):
        raise ValueError(f"{what}: rate_bps must be a positive number, got {rate_bps!r}")
    if not (isinstance(delay_ns, int) and delay_ns >= 0):
        raise ValueError(f"{what}: delay_ns must be an integer >= 0, got {delay_ns!r}")
    if buffer_bytes is not None and not (isinstance(buffer_bytes, int) and buffer_bytes >= 1514):
        raise ValueError(f"{what}: buffer_bytes must be an integer >= 1514, got {buffer_bytes!r}")


class PortCounters:
    __slots__ = ("enqueued", "enqueued_bytes", "tx_packets", "tx_bytes", "trimmed", "marked",
                 "drops", "drop_bytes", "q_enqueued", "q_sent", "q_dropped", "q_max_bytes",
                 "max_bytes", "jobs")

    def __init__(self, n_queues):
        self.enqueued = self.enqueued_bytes = 0
        self.tx_packets = self.tx_bytes = 0
        self.trimmed = self.marked = 0
        self.drops = {}       # reason -> packets
        self.drop_bytes = 0
        self.q_enqueued = [0] * n_queues
        self.q_sent = [0] * n_queues
        self.q_dropped = [0] * n_queues
        self.q_max_bytes = [0] * n_queues
        self.max_bytes = 0
        # Per job (Packet.job): [tx packets, tx bytes, dropped packets, dropped bytes]; each
        # column sums to the port's own (tx_packets, tx_bytes, drops, drop_bytes).
        self.jobs = {}

    def job(self, job):
        row = self.jobs.get(job)
        if row is None:
            row = self.jobs[job] = [0, 0, 0, 0]
        return row

    def as_dict(self):
        out = {name: (dict(v) if isinstance(v, dict) else list(v) if isinstance(v, list) else v)
               for name in self.__slots__ for v in [getattr(self, name)]}
        out["jobs"] = {job: list(row) for job, row in sorted(self.jobs.items())}
        return out


class EgressPort:
    def __init__(self, number, *, rate_bps, qm, scheduler, n_classes, delay_ns=0,
                 buffer_bytes=256 * 1024, buffer_packets=None, overhead_bytes=ETHERNET_OVERHEAD,
                 drop_log=None):
        check_link(f"port {number}", rate_bps, delay_ns, buffer_bytes)
        self.number = number
        self.rate_bps = rate_bps
        self.delay_ns = delay_ns
        self.buffer_bytes = buffer_bytes
        self.buffer_packets = buffer_packets or buffer_bytes // 64
        self.overhead = overhead_bytes
        self.ns_per_byte = 8e9 / rate_bps
        self.scheduler = scheduler
        n_queues = scheduler.queues_for(n_classes)
        self.n_queues = n_queues
        self.qmap = [min(c, n_queues - 1) for c in range(8)]
        self.queues = [deque() for _ in range(n_queues)]
        self.qbytes = [0] * n_queues      # live bytes per queue
        self.qpkts = [0] * n_queues       # live packets per queue
        self.mask = 0                     # bit q set while queue q holds a live packet
        self.bytes = 0                    # live bytes in all queues (the buffer occupancy)
        self.packets = 0
        # Queued droppable packets by magnitude class, for a queue manager that evicts them
        # (DLCP); None for the others, which saves eight deques a port at fat-tree scale.
        self.droppable = [deque() for _ in range(8)] if qm.evicts_droppable else None
        self.tolerant = qm.tolerant       # the classes whose droppable packets it indexes
        self.busy_until = 0
        self.last_arrival = 0             # newest arrival queued (all older ones: fast path)
        self.inflight = deque()           # serialised or serialising, waiting for pkt.depart
        self.counters = PortCounters(n_queues)
        self.drop_log = drop_log
        self.qm = qm
        qm.attach(self)
        self.idle_limit = qm.idle_limit()  # see `send_idle`

    # -- used by queue managers -------------------------------------------------------
    def push(self, pkt):
        q = self.qmap[pkt.cls]
        if pkt.arrival > self.last_arrival:
            self.last_arrival = pkt.arrival
        self.queues[q].append(pkt)
        pkt.queued = self
        size = pkt.size
        self.qbytes[q] += size
        self.qpkts[q] += 1
        self.mask |= 1 << q
        self.bytes += size
        self.packets += 1
        if pkt.droppable and self.droppable and self.tolerant[pkt.tclass]:
            self.droppable[pkt.mag].append(pkt)
        c = self.counters
        c.enqueued += 1
        c.enqueued_bytes += size
        c.q_enqueued[q] += 1
        if self.qbytes[q] > c.q_max_bytes[q]:
            c.q_max_bytes[q] = self.qbytes[q]
        if self.bytes > c.max_bytes:
            c.max_bytes = self.bytes

    def drop(self, pkt, reason, now):
        """The arriving packet is not admitted."""
        c = self.counters
        c.drops[reason] = c.drops.get(reason, 0) + 1
        c.drop_bytes += pkt.size
        row = c.job(pkt.job)
        row[2] += 1
        row[3] += pkt.size
        c.q_dropped[self.qmap[pkt.cls]] += 1
        if self.drop_log is not None:
            self.drop_log.append((now, self.number, reason, pkt))

    def evict(self, pkt, reason, now):
        """Remove a queued packet (lazily: it stays in its deque, marked not queued)."""
        q = self.qmap[pkt.cls]
        pkt.queued = None
        self._unlink(q, pkt.size)
        self.drop(pkt, reason, now)
        dq = self.queues[q]
        if len(dq) > 2 * self.qpkts[q] + 64:
            self.queues[q] = deque(p for p in dq if p.queued is self)

    def pop_tail(self, q):
        """Take the newest live packet of queue q out (pFabric drops from the tail)."""
        dq = self.queues[q]
        while True:
            pkt = dq.pop()
            if pkt.queued:
                break
        pkt.queued = None
        self._unlink(q, pkt.size)
        return pkt

    def lowest_droppable(self, below_mag=8):
        """A queued droppable packet of the lowest magnitude class under `below_mag`, newest
        first within the class (it has waited least), or None."""
        for mag in range(below_mag):
            idx = self.droppable[mag]
            while idx:
                pkt = idx.pop()
                if pkt.queued is self:
                    return pkt
        return None

    def eligible(self, t):
        """(mask of queues whose head arrived by t, earliest head arrival of the others)."""
        eligible = 0
        first = None
        mask = self.mask
        while mask:
            low = mask & -mask
            q = low.bit_length() - 1
            mask ^= low
            arrival = self.head(q).arrival
            if arrival <= t:
                eligible |= low
            elif first is None or arrival < first:
                first = arrival
        return eligible, first

    def head(self, q):
        dq = self.queues[q]
        while not dq[0].queued:
            dq.popleft()
        return dq[0]

    def _unlink(self, q, size):
        self.qbytes[q] -= size
        self.qpkts[q] -= 1
        if not self.qpkts[q]:
            self.mask &= ~(1 << q)
        self.bytes -= size
        self.packets -= 1

    # -- the serialiser ----------------------------------------------------------------
    def send_idle(self, pkt, now):
        """The fast path of an idle port (nothing queued, the link free by `now`) for a packet
        no bigger than `idle_limit`, which the queue manager would admit unchanged: it starts
        serialising at once, counted exactly as push() then start() would count it."""
        size = pkt.size
        q = self.qmap[pkt.cls]
        self.last_arrival = now
        c = self.counters
        c.enqueued += 1
        c.enqueued_bytes += size
        c.q_enqueued[q] += 1
        c.q_sent[q] += 1
        if size > c.q_max_bytes[q]:
            c.q_max_bytes[q] = size
        if size > c.max_bytes:
            c.max_bytes = size
        busy = now + int((size + self.overhead) * self.ns_per_byte + 0.5)
        self.busy_until = busy
        pkt.depart = busy + self.delay_ns
        self.inflight.append(pkt)

    def start(self, now):
        """Start serialising every packet whose turn has come by `now`."""
        busy = self.busy_until
        pick = self.scheduler.pick
        stateless = self.scheduler.stateless
        c = self.counters
        while self.mask and busy <= now:
            if self.packets == 1 and stateless:
                # One packet queued (the usual case below saturation): no choice to make.
                q = self.mask.bit_length() - 1
            elif self.last_arrival <= busy:
                q = pick(self, self.mask)
            else:
                # Causality: at `busy` the port may only choose among packets that had
                # arrived by then, or it would idle for a later, higher-priority one.
                eligible, first = self.eligible(busy)
                if not eligible:
                    busy = first
                    continue
                q = pick(self, eligible)
            dq = self.queues[q]
            pkt = dq.popleft()
            while not pkt.queued:
                pkt = dq.popleft()
            pkt.queued = None
            size = pkt.size
            # _unlink, written out: a call per packet here costs measurable throughput.
            self.qbytes[q] -= size
            self.qpkts[q] -= 1
            if not self.qpkts[q]:
                self.mask &= ~(1 << q)
            self.bytes -= size
            self.packets -= 1
            if pkt.droppable and self.droppable and self.tolerant[pkt.tclass]:
                idx = self.droppable[pkt.mag]
                while idx and idx[0].queued is not self:
                    idx.popleft()
            if pkt.arrival > busy:
                busy = pkt.arrival
            busy += int((size + self.overhead) * self.ns_per_byte + 0.5)
            pkt.depart = busy + self.delay_ns
            self.inflight.append(pkt)
            c.q_sent[q] += 1
        self.busy_until = busy

    def release(self, now, out):
        """Append (port number, packet) for every packet whose departure time has come."""
        inflight = self.inflight
        c = self.counters
        while inflight and inflight[0].depart <= now:
            pkt = inflight.popleft()
            c.tx_packets += 1
            c.tx_bytes += pkt.size
            row = c.job(pkt.job)
            row[0] += 1
            row[1] += pkt.size
            out.append((self.number, pkt))

    def hand_off(self):
        """Every packet started so far, in departure order, handed to a driver that carries
        each to the far end by its `pkt.depart` itself (the simulator): counted as sent now."""
        inflight = self.inflight
        if not inflight:
            return ()
        started = list(inflight)
        inflight.clear()
        c = self.counters
        c.tx_packets += len(started)
        jobs = c.jobs
        for pkt in started:
            c.tx_bytes += pkt.size
            row = jobs.get(pkt.job)
            if row is None:
                row = jobs[pkt.job] = [0, 0, 0, 0]
            row[0] += 1
            row[1] += pkt.size
        return started

    def next_event(self):
        """The earliest time this port has something to do, or None."""
        t = self.inflight[0].depart if self.inflight else None
        if self.mask and (t is None or self.busy_until < t):
            t = self.busy_until
        return t
