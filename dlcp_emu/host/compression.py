"""Gradient compression for the host agents (sans-I/O): sparsification (top-k, random-k),
8-bit stochastic quantisation (QSGD), and DC2's delay-aware control of how much of each
gradient is kept.

Top-k keeps the k largest-magnitude values of a message, k = ceil(ratio * n); random-k keeps
k values chosen at random (unscaled: its usual companion is error feedback). Both send them
as a self-describing sparse message, laid out in float32 words so the transports carry it
like any gradient:

    word 0: n, the dense length (int32)     words 1..k: indices (int32)     k+1..2k: values

It costs 8 bytes a kept value against 4 dense, so below ratio 0.5 it saves bytes; at or
above it the message is sent dense and whole. QSGD (Alistarh et al., NeurIPS'17) sends every
value as a signed 8-bit level of the message's largest |value| (the max-norm variant: with
the L2 norm and no bucketing most levels of a large message would be 0), rounded up or down
at random so the expectation is the value:

    word 0: -n (int32, negative: not sparse)   word 1: the scale (float32)   then n int8 levels

A compressed message must arrive whole (a lost index would scatter a value to the wrong
place, a lost header garble all): the agent marks it so (`Outgoing.exact`).

Error feedback (`error_feedback = true`): what a rank's compression left out of a message is
added to what it sends for the same range next iteration (Seide et al.; Karimireddy et al.),
so nothing is lost for good, only late.

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
METHODS = ("topk", "randomk", "qsgd")
_HEADER_WORDS = 1
_QSGD_HEADER_WORDS = 2
_LEVELS = 127


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
    return _sparse(n, idx, kept), float(np.dot(kept, kept)), total


def randomk_pack(values, ratio, rng):
    """(message, kept, total) as topk_pack, keeping ceil(ratio * n) values chosen at random."""
    values = np.asarray(values, dtype=np.float32).ravel()
    n = values.size
    total = float(np.dot(values, values))
    if not sparse_pays(n, ratio):
        return None, total, total
    k = _kept(n, ratio)
    idx = np.sort(rng.choice(n, size=k, replace=False)).astype(np.int32)
    return _sparse(n, idx, values[idx]), float(np.dot(values[idx], values[idx])), total


def _sparse(n, idx, kept):
    k = idx.size
    msg = np.empty(_HEADER_WORDS + 2 * k, dtype=np.float32)
    words = msg.view(np.int32)
    words[0] = n
    words[1:1 + k] = idx
    msg[1 + k:] = kept
    return msg


def qsgd_pack(values, rng):
    """(message, kept, total): the 8-bit stochastic quantisation of values, or None when it
    would not be smaller; kept = total less the squared error, as a sparsifier's kept energy."""
    values = np.asarray(values, dtype=np.float32).ravel()
    n = values.size
    total = float(np.dot(values, values))
    words_needed = _QSGD_HEADER_WORDS + -(-n // 4)
    if words_needed >= n:
        return None, total, total
    scale = float(np.abs(values).max()) if n else 0.0
    msg = np.zeros(words_needed, dtype=np.float32)
    msg.view(np.int32)[0] = -n
    msg[1] = scale
    if scale > 0:
        x = np.abs(values) * np.float32(_LEVELS / scale)
        level = np.floor(x + rng.random(n, dtype=np.float32))
        np.minimum(level, _LEVELS, out=level)
        q = (np.sign(values) * level).astype(np.int8)
        msg.view(np.int8)[4 * _QSGD_HEADER_WORDS:4 * _QSGD_HEADER_WORDS + n] = q
        err = values - q.astype(np.float32) * np.float32(scale / _LEVELS)
        return msg, total - float(np.dot(err, err)), total
    return msg, total, total


def pack(method, values, ratio, rng):
    """(message or None: send dense, kept, total) by the method's name (METHODS)."""
    if method == "topk":
        return topk_pack(values, ratio)
    if method == "randomk":
        return randomk_pack(values, ratio, rng)
    return qsgd_pack(values, rng)


def sparse_ratio(message, n):
    """The kept ratio of a sparse message for n values; 1.0 for a dense one, None for QSGD."""
    if message.size == n:
        return 1.0
    if message.view(np.int32)[0] < 0:
        return None
    return (message.size - _HEADER_WORDS) / 2 / n


def unpack_into(region, message, add):
    """Apply a message to `region` (float32, the message's dense length): a dense message is
    added or copied; a sparse one is scattered, added or over zeros; a quantised one is
    expanded. Raises ValueError when the message fits no form."""
    message = np.asarray(message, dtype=np.float32).ravel()
    if message.size == region.size:
        if add:
            region += message
        else:
            region[:] = message
        return
    words = message.view(np.int32)
    if message.size and words[0] < 0:
        _unpack_qsgd(region, message, add)
        return
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


def _unpack_qsgd(region, message, add):
    n = -int(message.view(np.int32)[0])
    if n != region.size or message.size != _QSGD_HEADER_WORDS + -(-n // 4):
        raise ValueError(f"a quantised message of {message.size} words is not for a region of "
                         f"{region.size} values")
    q = message.view(np.int8)[4 * _QSGD_HEADER_WORDS:4 * _QSGD_HEADER_WORDS + n]
    values = q.astype(np.float32) * np.float32(float(message[1]) / _LEVELS)
    if add:
        region += values
    else:
        region[:] = values


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
    method: str = "topk"        # topk | randomk (kept ratio: fixed or DC2's) | qsgd (8 bits, fixed)
    error_feedback: bool = False

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"compression mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.method not in METHODS:
            raise ValueError(f"compression method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if self.method == "qsgd" and self.mode == "dc2":
            raise ValueError("compression method qsgd has no ratio for dc2 to steer: use mode fixed")
        for name, lo, hi in (("ratio", 0.0, 1.0), ("min_ratio", 0.0, 1.0), ("increase", 0.0, 1.0),
                             ("decrease", 0.0, 1.0)):
            v = getattr(self, name)
            if not lo < v <= hi:
                raise ValueError(f"compression {name} must be in ({lo:g}, {hi:g}], got {v!r}")
        if not self.target_delay_ns > 0:
            raise ValueError(f"compression target_delay_ns must be > 0, got {self.target_delay_ns!r}")


    @property
    def active(self):
        return self.mode != "none"

    def compresses(self, ratio):
        """Whether a message goes compressed at this kept ratio."""
        return self.active and (ratio < 1.0 or self.method == "qsgd")


class Dc2Controller:
    """The kept ratio of one rank's next bucket, from the delays of its last ones."""

    def __init__(self, spec, line_ns_per_byte=0.0):
        self.spec = spec
        self.line_ns_per_byte = line_ns_per_byte   # serialisation at the host link rate
        # QSGD keeps every value (at 8 bits): its kept ratio is 1.
        self.ratio = spec.ratio if spec.mode == "fixed" and spec.method != "qsgd" else 1.0

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
