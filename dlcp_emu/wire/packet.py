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


def dlcp_packet(size, dst, flow, priority, mag_class, tensor_id, flags, ect, ce, frame=None, tclass=GRADIENT, job=0):
    """A DLCP packet of `size` bytes on the wire (padded to the Ethernet minimum)."""
    return Packet(size if size > ETH_MIN else ETH_MIN, dst, flow, priority, mag_class,
                  tensor_id >> TENSOR_LAYER_SHIFT, bool(flags & _DROPPABLE), True, ect, ce,
                  FRAME_OVERHEAD, frame, tclass=tclass, job=job)


def plain_packet(size, dst, flow, priority=NOT_DLCP_PRIORITY, ect=False, ce=False, frame=None):
    """Anything else (plain UDP or TCP, ARP, ...): priority from its DSCP where it has one."""
    return Packet(size if size > ETH_MIN else ETH_MIN, dst, flow, priority, 0, 0, False, False,
                  ect, ce, FRAME_OVERHEAD, frame, tclass=NONE)
