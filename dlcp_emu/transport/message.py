"""What the transports carry: one tensor (or fused bucket) of float32 gradients, cut into
fixed-size chunks, each with a magnitude class and (for `dlcp`) a droppable flag.

Chunk k holds bytes [k*chunk_size, (k+1)*chunk_size) of the tensor; only the last chunk may
be shorter. chunk_size is a multiple of 4 so a chunk holds whole float32 values, and the
receiver derives it from any one packet (offset == chunk_index * chunk_size), so it is not
sent separately.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dlcp_emu.wire import HEADER_LEN, IPV4_LEN, MAX_PAYLOAD, UDP_LEN
from dlcp_emu.wire.layout import TCLASS_GRADIENT

DEFAULT_MTU = 1500
FLOAT = np.dtype("<f4")  # gradients travel little-endian, whatever the host order
MAX_CHUNKS = 1 << 29     # probes pack (class << 29 | chunk) into 32 bits
DEFAULT_LOSS_BOUND = 0.01
DEFAULT_DROPPABLE_FRACTION = 0.5
DROP_ORDERS = ("magnitude", "random")   # which chunks a bounded-loss sender may give up


def chunk_payload_size(mtu: int = DEFAULT_MTU) -> int:
    """Gradient bytes per packet for an IP MTU: MTU - IPv4 - UDP - DLCP header, rounded down
    to whole float32 values (1500 -> 1424, 9000 -> 8924)."""
    if not isinstance(mtu, int) or not 0 < mtu <= 0xFFFF:
        raise ValueError(f"mtu must be an integer in 1..65535, got {mtu!r}")
    size = min(mtu - IPV4_LEN - UDP_LEN - HEADER_LEN, MAX_PAYLOAD) & ~3
    if size < 4:
        raise ValueError(f"mtu {mtu} leaves no room for one float32 after the "
                         f"{IPV4_LEN + UDP_LEN + HEADER_LEN} header bytes")
    return size


# Endpoints need room for their control payloads (a bitmap header is 24 bytes, a probe's 20).
MIN_TRANSPORT_PAYLOAD = 64


def transport_payload_size(mtu: int) -> int:
    """chunk_payload_size, refusing MTUs too small for the endpoints' control packets."""
    size = chunk_payload_size(mtu)
    if size < MIN_TRANSPORT_PAYLOAD:
        raise ValueError(f"mtu {mtu} is too small for the transports: need at least "
                         f"{MIN_TRANSPORT_PAYLOAD + IPV4_LEN + UDP_LEN + HEADER_LEN}")
    return size


def layer_priority(tensor_id: int, num_layers: int) -> int:
    """Layer priority 0..7: the first layers (needed first by the next forward pass) get 0."""
    if num_layers <= 0 or not 0 <= tensor_id < num_layers:
        raise ValueError(f"need 0 <= tensor_id < num_layers, got {tensor_id}, {num_layers}")
    return tensor_id * 8 // num_layers


def chunk_magnitudes(data: np.ndarray, chunk_size: int) -> np.ndarray:
    """Mean |g| of each chunk_size-byte chunk of a float32 tensor."""
    a = np.abs(np.asarray(data, dtype=np.float32).ravel())
    per = chunk_size // 4
    full = a.size // per
    out = np.empty(-(-a.size // per), dtype=np.float64)
    out[:full] = a[: full * per].reshape(full, per).mean(axis=1)
    if full < out.size:
        out[full] = a[full * per:].mean()
    return out


@dataclass
class Message:
    """One tensor to send. Per-chunk fields are for the chunk size of the sender that sends
    it (see chunk_payload_size); left None, the sender's MagnitudePolicy fills them in."""

    data: np.ndarray                  # float32 gradient values (any shape; sent flattened)
    iteration: int = 0
    tensor_id: int = 0
    priority: int = 7                 # layer priority 0..7, 0 highest (see layer_priority)
    job: int = 0
    src_rank: int = 0
    dst_rank: int = 0
    chunk_magnitudes: np.ndarray | None = None  # one |g| per chunk, e.g. Trace.chunk_magnitudes
    mag_class: np.ndarray | None = None         # explicit classes 0..7, overriding the policy
    droppable: np.ndarray | None = None         # explicit flags (dlcp), overriding the policy
    tclass: int = TCLASS_GRADIENT     # traffic class code on the wire (switch_models.traffic)

    @property
    def key(self) -> tuple[int, int]:
        return (self.iteration, self.tensor_id)


@dataclass(frozen=True)
class ChunkPlan:
    """Per-chunk header fields of one message and the bytes it may lose."""

    mag_class: bytes   # one class 0..7 per chunk
    droppable: bytes   # 1 where the chunk may be lost
    bound_bytes: int   # bytes the receiver may zero-fill (>= droppable bytes by construction)


_OCTILES = np.arange(1, 8) / 8


def octiles(m: np.ndarray) -> np.ndarray:
    """np.quantile(m, [1/8 .. 7/8]) of a 1-D float64 array without NaN, to the bit (numpy's
    "linear" method, step for step: virtual index (n - 1) q, its floor and the next as
    neighbours, and numpy's _lerp), at a fraction of its cost: np.quantile's generality took
    80 us a message, a third of the Python a payload-free message costs."""
    n = len(m)
    s = np.sort(m)
    virtual = (n - 1) * _OCTILES
    prev = np.floor(virtual).astype(np.intp)
    nxt = np.minimum(prev + 1, n - 1)
    prev = np.minimum(prev, n - 1)
    gamma = virtual - prev
    a, b = s[prev], s[nxt]
    diff = b - a
    out = a + diff * gamma
    upper = gamma >= 0.5
    out[upper] = (b - diff * (1 - gamma))[upper]
    return out


@dataclass(frozen=True)
class MagnitudePolicy:
    """Turns chunk magnitudes into magnitude classes and droppable flags.

    Classes: with `class_edges` (7 increasing |g| thresholds) class = number of edges below
    the magnitude, comparable across tensors; by default the octiles of the message itself,
    so every tensor spreads over all 8 classes and the switch drops each tensor's smallest
    gradients first.

    Droppable: candidates are the `droppable_fraction` of chunks with the smallest magnitude;
    taking them smallest first, a chunk is marked only while the marked bytes stay within
    floor(loss_bound * message bytes). The loss bound therefore holds by construction: with
    the defaults (half the chunks candidates, 1% bound) the smallest-magnitude 1% of the bytes
    may be lost.

    `drop_order = "random"` is the magnitude-blind ablation: the same rule over the chunks'
    magnitudes shuffled (from a generator seeded by `seed` and the message), so as many bytes
    are droppable but they are any chunks, and the classes the switches drop by no longer
    follow the values either.
    """

    droppable_fraction: float = DEFAULT_DROPPABLE_FRACTION
    loss_bound: float = DEFAULT_LOSS_BOUND
    class_edges: tuple[float, ...] | None = None
    drop_order: str = "magnitude"
    seed: int = 0

    def __post_init__(self):
        for name in ("droppable_fraction", "loss_bound"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and 0.0 <= v <= 1.0):
                raise ValueError(f"{name} must be a number in [0, 1], got {v!r}")
        if self.class_edges is not None:
            e = tuple(float(x) for x in self.class_edges)
            if len(e) != 7 or list(e) != sorted(e):
                raise ValueError(f"class_edges must be 7 increasing thresholds, got {self.class_edges!r}")
            object.__setattr__(self, "class_edges", e)
        if self.drop_order not in DROP_ORDERS:
            raise ValueError(f"drop_order must be one of {', '.join(DROP_ORDERS)}, got {self.drop_order!r}")

    def bound_bytes(self, total_bytes: int) -> int:
        return math.floor(self.loss_bound * total_bytes)

    def classes(self, magnitudes: np.ndarray) -> np.ndarray:
        m = np.asarray(magnitudes, dtype=np.float64)
        edges = self.class_edges
        if edges is None:
            edges = octiles(m)
        return np.searchsorted(np.asarray(edges), m, side="left").astype(np.uint8)

    def plan(self, magnitudes: np.ndarray, total_bytes: int, chunk_size: int,
             droppable_allowed: bool = True, salt: tuple = ()) -> ChunkPlan:
        """salt: integers naming the message (random drop order: its own shuffle)."""
        m = np.asarray(magnitudes, dtype=np.float64)
        n = -(-total_bytes // chunk_size)
        if m.shape != (n,):
            raise ValueError(f"need one magnitude per chunk ({n} chunks of {chunk_size} bytes), "
                             f"got shape {m.shape}")
        if self.drop_order == "random":
            m = np.random.default_rng([self.seed, *salt]).permutation(m)
        drop = np.zeros(n, dtype=np.uint8)
        bound = self.bound_bytes(total_bytes)
        k = math.floor(self.droppable_fraction * n)
        if droppable_allowed and k and bound:
            order = np.argsort(m, kind="stable")[:k]
            sizes = np.full(k, chunk_size, dtype=np.int64)
            sizes[order == n - 1] = total_bytes - (n - 1) * chunk_size
            take = int(np.searchsorted(np.cumsum(sizes), bound, side="right"))
            drop[order[:take]] = 1
        return ChunkPlan(self.classes(m).tobytes(), drop.tobytes(), bound)
