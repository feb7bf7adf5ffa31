"""What the transport tests share: tensors, a recorder of what went on the wire, and one
sender-receiver transfer over lossy channels in virtual time."""
import numpy as np

from transport_channel import LossyChannel, run_pair
from dlcp_emu.wire import Flags, PacketType


def tensor(n, seed=0):
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


class Recorder:
    """Every packet an endpoint sent: (time, header, payload bytes)."""

    def __init__(self):
        self.packets = []

    def __call__(self, now, h, p):
        self.packets.append((now, h, bytes(p)))

    def of(self, ptype):
        return [(t, h, p) for t, h, p in self.packets if h.type == ptype]

    def droppable(self):
        """chunk -> flag, per tensor, as the sender put it on the wire."""
        out = {}
        for _, h, _ in self.of(PacketType.DATA):
            out.setdefault(h.tensor_id, {})[h.chunk_index] = bool(h.flags & Flags.DROPPABLE)
        return out


def run_transfer(sender, receiver, msgs, fwd=None, back=None, max_events=300_000):
    """Send every message from sender to receiver; (sender, receiver, recorder, stats)."""
    for m in msgs:
        sender.send(m, 0)
    rec = Recorder()
    stats = run_pair(sender, receiver, fwd or LossyChannel(seed=1), back or LossyChannel(seed=2),
                     max_events=max_events, on_packet=rec)
    return sender, receiver, rec, stats
