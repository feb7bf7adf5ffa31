"""A DLCP header as the switch model sees it: the one header -> `switch_models.Packet` codec
of both drivers. The emulator's frame parser calls it with the fields it read at their fixed
offsets; the simulator with the transport's header object.

What the switch uses: priority, traffic class and magnitude class (classifiers, the DLCP queue manager),
droppable, the layer (for records), that it is DLCP (only those are trimmed, to the 90 header
bytes), ECN capability and marks, and the flow hash of the 5-tuple (ECMP, PIAS).
"""
from switch_models import Packet
from switch_models.traffic import GRADIENT, NONE

from dlcp_emu.wire.layout import ETH_MIN, FRAME_OVERHEAD, TENSOR_LAYER_SHIFT, Flags

_DROPPABLE = int(Flags.DROPPABLE)
NOT_DLCP_PRIORITY = 7   # the lowest: what a switch gives traffic that says nothing


def dlcp_packet(size, dst, flow, priority, mag_class, tensor_id, flags, ect, ce, frame=None, tclass=GRADIENT, job=0,
                control=False):
    """A DLCP packet of `size` bytes on the wire (padded to the Ethernet minimum). A control
    packet (any type but DATA: its payload is feedback, a NACK's chunk list or a bitmap) is
    all header: trimming would leave it naming nothing, so its `header_size` is its size and
    a trimming switch forwards it whole, a priority host queue sends it first
    (`switch_models.packet.is_header`)."""
    size = size if size > ETH_MIN else ETH_MIN
    return Packet(size, dst, flow, priority, mag_class,
                  tensor_id >> TENSOR_LAYER_SHIFT, bool(flags & _DROPPABLE), True, ect, ce,
                  size if control else FRAME_OVERHEAD, frame, tclass=tclass, job=job)


def plain_packet(size, dst, flow, priority=NOT_DLCP_PRIORITY, ect=False, ce=False, frame=None):
    """Anything else (plain UDP or TCP, ARP, ...): priority from its DSCP where it has one."""
    return Packet(size if size > ETH_MIN else ETH_MIN, dst, flow, priority, 0, 0, False, False,
                  ect, ce, FRAME_OVERHEAD, frame, tclass=NONE)
