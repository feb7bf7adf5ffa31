"""The packet as the switch model sees it: parsed metadata plus an opaque frame.

The model never touches bytes. The emulator's data path fills these fields from the frame
with struct at fixed offsets and applies `rewrite` flags (trim, ECN CE) when it transmits;
the simulator builds them directly. Times are integer nanoseconds on the caller's clock.
"""

from switch_models.traffic import GRADIENT

# Bits of Packet.rewrite: what the model changed that the driver must apply to the frame.
REWRITE_TRIM = 1
REWRITE_CE = 2
# Packet.job of traffic without a DLCP header: the switch cannot read a job from it.
NO_JOB = 0xFFFF


class Packet:
    __slots__ = (
        "size",        # bytes on the wire (Ethernet frame without FCS)
        "dst",         # routing key: destination host (name, IP, ... as the route table uses)
        "flow",        # flow hash (5-tuple); ECMP and PIAS key on it
        "prio",        # sender's priority 0..7, 0 highest (DLCP header, else from DSCP)
        "mag",         # gradient magnitude class 0..7, 7 = largest (DLCP data only)
        "tclass",      # traffic class code (switch_models.traffic): a gradient unless it says otherwise
        "layer",       # tensor / layer id, 0 = first layer of the model
        "droppable",   # the sender allows this packet to be lost (bounded-loss transport)
        "dlcp",        # carries a DLCP header (only those can be trimmed)
        "ect",         # ECN-capable transport
        "ce",          # congestion experienced (already marked, or marked here)
        "header_size", # size after trimming the payload (a control packet: its whole size)
        "frame",       # opaque to the model: the driver's bytes, or None
        "uid",         # caller's id for per-packet records
        "job",         # the DLCP header's job (several jobs on one fabric), else NO_JOB
        # Filled in by the switch:
        "cls",         # class chosen by the classifier, 0 = most important
        "arrival",     # time the switch took it in
        "depart",      # scheduled time it leaves the egress port (after serialisation + delay)
        "rewrite",     # REWRITE_* bits
        "queued",      # the EgressPort whose queue holds it live, else None (lazy deletion)
    )

    def __init__(self, size, dst, flow=0, prio=7, mag=0, layer=0, droppable=False,
                 dlcp=False, ect=False, ce=False, header_size=90, frame=None, uid=0, tclass=GRADIENT, job=NO_JOB):
        self.size = size
        self.dst = dst
        self.flow = flow
        self.prio = prio
        self.mag = mag
        self.tclass = tclass
        self.layer = layer
        self.droppable = droppable
        self.dlcp = dlcp
        self.ect = ect
        self.ce = ce
        self.header_size = header_size
        self.frame = frame
        self.uid = uid
        self.job = job
        self.cls = 0
        self.arrival = 0
        self.depart = 0
        self.rewrite = 0
        self.queued = None

    def __repr__(self):
        return (f"Packet(uid={self.uid}, size={self.size}, dst={self.dst!r}, flow={self.flow}, "
                f"prio={self.prio}, mag={self.mag}, tclass={self.tclass}, droppable={self.droppable}, cls={self.cls})")


def is_header(pkt):
    """A packet a trimming switch forwards whole, in its header class, and a priority host
    queue sends ahead of data: a bare DLCP header (a data packet trimmed upstream) or a
    control packet, whose feedback is all header (`dlcp_emu.wire.packet.dlcp_packet` gives it
    a `header_size` of its whole size, so nothing of it is ever cut)."""
    return pkt.dlcp and pkt.size <= pkt.header_size


# Every field a packet built from only `size` and `dst` has, with its value: what an adapter
# that carries packets as columns (dlcp_native) fills in for a field its caller left out.
# Read from such a packet, so that the constructor stays the one place that says it.
_BLANK = Packet(0, None)
DEFAULTS = {name: getattr(_BLANK, name) for name in Packet.__slots__ if name not in ("size", "dst")}
del _BLANK
