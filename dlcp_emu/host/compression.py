"""Gradient compression for the host agents (sans-I/O): top-k sparsification and DC2's
delay-aware control of how much of each gradient is kept.

Top-k keeps the k largest-magnitude values of a message, k = ceil(ratio * n), and sends them
as a self-describing sparse message, laid out in float32 words so the transports carry it
like any gradient:

    word 0: n, the dense length (int32)     words 1..k: indices (int32)     k+1..2k: values

It costs 8 bytes a kept value against 4 dense, so below ratio 0.5 it saves bytes; at or
above it the message is sent dense and whole. A sparse message must arrive whole (a lost
index would scatter a value to the wrong place): the agent marks it so (`Outgoing.exact`).

DC2 (Abdelmoniem and Canini, INFOCOM'21) couples the compression ratio to network delay
with a controller inspired by congestion control. Our reading, which the paper leaves
open in its details: after each bucket's synchronisation a rank measures its delay, the
time it took beyond serialising the bytes it sent at its link rate; above a target delay the
kept ratio is cut multiplicatively (in proportion to the excess, as Swift cuts its window),
below it grows additively back towards 1 (no compression).
"""
import math
from dataclasses import dataclass

import numpy as np

MODES = ("none", "fixed", "dc2")
_HEADER_WORDS = 1


def sparse_pays(n, ratio):
    """Whether top-k at this ratio sends fewer bytes than the dense message."""
    return ratio < 1.0 and 2 * _kept(n, ratio) + _HEADER_WORDS < n


def _kept(n, ratio):
    return min(n, max(1, math.ceil(ratio * n))) if n else 0


def topk_pack(values, ratio):
    """(message, kept, total): the sparse message of the ceil(ratio * n) largest |values|, or
    None when sparse would not be smaller (send `values` dense); kept and total are the sum of
    squares the message carries and the values had (equal for dense)."""
    values = np.asarray(values, dtype=np.float32).ravel()
    n = values.size
    total = float(np.dot(values, values))
    if not sparse_pays(n, ratio):
        return None, total, total
    k = _kept(n, ratio)
    idx = np.argpartition(np.abs(values), n - k)[n - k:].astype(np.int32)
    idx.sort()   # ascending indices: a receiver scatters in memory order
    kept = values[idx]
    msg = np.empty(_HEADER_WORDS + 2 * k, dtype=np.float32)
    words = msg.view(np.int32)
    words[0] = n
    words[1:1 + k] = idx
    msg[1 + k:] = kept
    return msg, float(np.dot(kept, kept)), total


def unpack_into(region, message, add):
    """Apply a message to `region` (float32, the message's dense length): a dense message is
    added or copied; a sparse one is scattered, added or over zeros. Raises ValueError when
    the message fits neither form."""
    message = np.asarray(message, dtype=np.float32).ravel()
    if message.size == region.size:
        if add:
            region += message
        else:
            region[:] = message
        return
    words = message.view(np.int32)
    k, odd = divmod(message.size - _HEADER_WORDS, 2)
    if odd or k < 0 or words[0] != region.size:
        raise ValueError(f"a message of {message.size} words is neither dense nor sparse for "
                         f"a region of {region.size} values")
    idx = words[1:1 + k]
    if k and (idx.min() < 0 or idx.max() >= region.size):
        raise ValueError("sparse message indexes outside its region")
    if not add:
        region[:] = 0.0
    region[idx] += message[1 + k:]


@dataclass(frozen=True)
class CompressionSpec:
    """What the agents compress with: `none`; `fixed` at `ratio` (uniform compression, DC2's
    baseline); `dc2` between `min_ratio` and 1, starting at 1, steered by `target_delay_ns`
    (emulated/simulated ns: the runner scales the spec's real-world ms by time_dilation)."""
    mode: str = "none"
    ratio: float = 0.1
    min_ratio: float = 0.01
    target_delay_ns: float = 1e6
    increase: float = 0.05      # additive step of the kept ratio per good sample
    decrease: float = 0.5       # largest multiplicative cut (at very large delay)

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"compression mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        for name, lo, hi in (("ratio", 0.0, 1.0), ("min_ratio", 0.0, 1.0), ("increase", 0.0, 1.0),
                             ("decrease", 0.0, 1.0)):
            v = getattr(self, name)
            if not lo < v <= hi:
                raise ValueError(f"compression {name} must be in ({lo:g}, {hi:g}], got {v!r}")
        if not self.target_delay_ns > 0:
            raise ValueError(f"compression target_delay_ns must be > 0, got {self.target_delay_ns!r}")


class Dc2Controller:
    """The kept ratio of one rank's next bucket, from the delays of its last ones."""

    def __init__(self, spec, line_ns_per_byte=0.0):
        self.spec = spec
        self.line_ns_per_byte = line_ns_per_byte   # serialisation at the host link rate
        self.ratio = spec.ratio if spec.mode == "fixed" else 1.0

    def on_sample(self, comm_ns, sent_bytes):
        """One bucket synchronised: it took comm_ns and this rank sent sent_bytes. Returns
        the delay the controller saw (ns)."""
        delay = max(0.0, comm_ns - sent_bytes * self.line_ns_per_byte)
        s = self.spec
        if s.mode != "dc2":
            return delay
        if delay > s.target_delay_ns:
            cut = s.decrease * (1.0 - s.target_delay_ns / delay)
            self.ratio = max(s.min_ratio, self.ratio * (1.0 - cut))
        else:
            self.ratio = min(1.0, self.ratio + s.increase)
        return delay


def wire_ns_per_byte(rate_bps, mtu):
    """Nanoseconds a host link of rate_bps takes per gradient byte, counting every packet's
    headers and Ethernet framing."""
    from dlcp_emu.transport.congestion import ETHERNET_FRAMING
    from dlcp_emu.transport.message import chunk_payload_size
    return (mtu + ETHERNET_FRAMING) * 8e9 / rate_bps / chunk_payload_size(mtu)
