"""What a sender keeps of each message it sends: the state of every chunk, and what it
reports when the message is complete."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

UNSENT, IN_FLIGHT, ACKED, LOST, ABANDONED = range(5)  # chunk states; LOST = awaiting retransmission


@dataclass
class SendResult:
    iteration: int
    tensor_id: int
    nbytes: int
    chunks: int
    start_ns: int        # send() was called
    done_ns: int         # the sender learnt the tensor is complete
    packets: int         # data packets sent, retransmissions included
    retransmissions: int
    probe_rounds: int


class _Outbound:
    __slots__ = ("key", "iteration", "tensor_id", "priority", "count", "cs", "total", "view",
                 "mag", "flags", "state", "xmit_ts", "tx_seq", "next_new", "retx", "cum",
                 "acked", "inflight", "abandoned", "bound", "probes", "probe_rounds", "probe_ts",
                 "probe_due", "done", "order", "in_ready", "start_ns", "packets",
                 "retransmits", "lane_base")


def _per_chunk(values, count: int, name: str, dtype) -> bytes:
    """One value per chunk; a single value (a scalar) applies to every chunk."""
    a = np.asarray(values, dtype=dtype).ravel()
    if a.ndim == 1 and np.ndim(values) == 0:
        a = np.full(count, a[0], dtype=dtype)
    if a.shape != (count,):
        raise ValueError(f"{name} needs one value per chunk ({count}), got {a.size}")
    return a.astype(np.uint8).tobytes()
