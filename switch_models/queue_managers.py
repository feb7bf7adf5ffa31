"""Queue managers: admit, drop, evict, trim or mark each arriving packet at an egress port.

`enqueue(port, pkt, now)` ends in exactly one of port.push(pkt) or port.drop(pkt, reason,
now), and may first evict queued packets with port.evict (each counted with its reason), so
every packet a port takes in is accounted for. Thresholds are fractions of the port buffer
so that a spec means the same thing at every link rate.
"""
from switch_models.packet import REWRITE_CE, REWRITE_TRIM, is_header
from switch_models.registry import Registry, require
from switch_models.traffic import LOSS_TOLERANT, TRAFFIC_CLASSES, tolerant_table

QUEUE_MANAGERS = Registry("queue manager")

# Drop reasons, as counted per port.
BUFFER_FULL = "buffer_full"
DLCP_THRESHOLD = "dlcp_threshold"
DLCP_EVICTED = "dlcp_evicted"
PFABRIC_LOWEST = "pfabric_lowest"
PFABRIC_EVICTED = "pfabric_evicted"
TRIM_OVERFLOW = "trim_header_overflow"


def _fraction(kind, field, value):
    require(isinstance(value, (int, float)) and 0 < value <= 1, kind, field, "a fraction in (0, 1]")
    return float(value)


class _Base:
    evicts_droppable = False   # True: the port keeps an index of its queued droppable packets
    # By traffic class code: whether this manager may drop a droppable packet of that class
    # (the port indexes only those).
    tolerant = (True,) * len(TRAFFIC_CLASSES)

    def attach(self, port):
        self.limit_bytes = port.buffer_bytes
        self.limit_packets = port.buffer_packets

    def idle_limit(self):
        """The largest packet this manager admits unchanged into an empty queue: the port
        starts such a packet at once without asking (its fast path). 0: always ask."""
        return self.limit_bytes if self.limit_packets >= 1 else 0

    def fits(self, port, size):
        return port.bytes + size <= self.limit_bytes and port.packets < self.limit_packets


@QUEUE_MANAGERS.register("droptail")
class DropTail(_Base):
    """Admit while the buffer has room in bytes and packets, else drop the arrival."""

    def __init__(self):
        pass

    def enqueue(self, port, pkt, now):
        if port.bytes + pkt.size <= self.limit_bytes and port.packets < self.limit_packets:
            port.push(pkt)
        else:
            port.drop(pkt, BUFFER_FULL, now)


@QUEUE_MANAGERS.register("ecn")
class Ecn(_Base):
    """Drop-tail that marks CE on ECN-capable packets above `mark_fraction` of the buffer
    (DCTCP-style instantaneous threshold)."""

    def __init__(self, *, mark_fraction=0.2):
        self.mark_fraction = _fraction("ecn", "mark_fraction", mark_fraction)

    def attach(self, port):
        super().attach(port)
        self.mark_bytes = int(self.mark_fraction * port.buffer_bytes)

    def enqueue(self, port, pkt, now):
        if not self.fits(port, pkt.size):
            port.drop(pkt, BUFFER_FULL, now)
            return
        if port.bytes > self.mark_bytes and pkt.ect and not pkt.ce:
            pkt.ce = True
            pkt.rewrite |= REWRITE_CE
            port.counters.marked += 1
        port.push(pkt)


@QUEUE_MANAGERS.register("dlcp")
class Dlcp(_Base):
    """DLCP bounded-loss dropping. Above `threshold` of the buffer, droppable packets are
    dropped, the lowest magnitude class first: class m is refused once occupancy passes
    threshold + (1 - threshold) * m / 8, so the bottom class goes at `threshold` and the top
    one just before the buffer is full. A packet that does not fit in the full buffer evicts
    queued droppable packets of lower magnitude (any magnitude, for a non-droppable arrival);
    a non-droppable packet is dropped only when no droppable one is left to evict.
    Droppable means the sender flagged it so and its traffic class is one of `loss_tolerant`
    (by default gradients only): a packet of any other class is never dropped to make room,
    nor evicted, whatever its flag says."""

    evicts_droppable = True

    def __init__(self, *, threshold=0.5, loss_tolerant=LOSS_TOLERANT):
        self.threshold = _fraction("dlcp", "threshold", threshold)
        self.tolerant = tolerant_table("dlcp", loss_tolerant)

    def attach(self, port):
        super().attach(port)
        b, t = port.buffer_bytes, self.threshold
        self.mag_limit = [int(b * (t + (1 - t) * m / 8)) for m in range(8)]

    def idle_limit(self):
        return min(super().idle_limit(), self.mag_limit[0])

    def enqueue(self, port, pkt, now):
        size = pkt.size
        droppable = pkt.droppable and self.tolerant[pkt.tclass]
        if droppable:
            if port.bytes + size > self.mag_limit[pkt.mag]:
                port.drop(pkt, DLCP_THRESHOLD, now)
                return
            below = pkt.mag
        else:
            below = 8
        while not self.fits(port, size):
            victim = port.lowest_droppable(below)
            if victim is None:
                port.drop(pkt, DLCP_THRESHOLD if droppable else BUFFER_FULL, now)
                return
            port.evict(victim, DLCP_EVICTED, now)
        port.push(pkt)


@QUEUE_MANAGERS.register("pfabric")
class PFabric(_Base):
    """pFabric: a full buffer makes room by dropping the least important packet, which is the
    arrival itself unless a queued packet is of a strictly worse class."""

    def __init__(self):
        pass

    def enqueue(self, port, pkt, now):
        size = pkt.size
        q = port.qmap[pkt.cls]
        while not self.fits(port, size):
            worst = port.mask.bit_length() - 1
            if worst <= q:
                port.drop(pkt, PFABRIC_LOWEST, now)
                return
            victim = port.pop_tail(worst)
            port.drop(victim, PFABRIC_EVICTED, now)
        port.push(pkt)


@QUEUE_MANAGERS.register("trim")
class Trim(_Base):
    """NDP: once `trim_packets` are queued, a DLCP packet loses its payload and its header
    goes on in class 0, ahead of all data, so the receiver learns at once what to pull
    again. Control packets (ACKs, NACKs, pulls, probes, bitmaps: `packet.is_header`) are
    never cut: they go whole in class 0, as NDP's switches never trim theirs (a NACK cut to
    its header would name no chunk). Headers are dropped only when the whole buffer is full;
    packets that cannot be trimmed (not DLCP) are dropped at the trim point."""

    def __init__(self, *, trim_packets=8):
        require(isinstance(trim_packets, int) and trim_packets >= 1, "trim", "trim_packets",
                "an integer >= 1")
        self.trim_packets = trim_packets

    def idle_limit(self):
        return 0   # a bare header changes class here: always ask

    def enqueue(self, port, pkt, now):
        trimmed = False
        if is_header(pkt):
            # A bare header (trimmed upstream) or a control packet: never cut, top class.
            pkt.cls = 0
        else:
            data_packets = port.packets - port.qpkts[0] if port.n_queues > 1 else port.packets
            if data_packets < self.trim_packets and self.fits(port, pkt.size):
                port.push(pkt)
                return
            if not pkt.dlcp:
                port.drop(pkt, BUFFER_FULL, now)
                return
            pkt.size = pkt.header_size
            pkt.rewrite |= REWRITE_TRIM
            pkt.cls = 0
            trimmed = True
        if self.fits(port, pkt.size):
            port.counters.trimmed += trimmed
            port.push(pkt)
        else:
            port.drop(pkt, TRIM_OVERFLOW, now)
