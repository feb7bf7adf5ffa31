"""Horovod-style tensor fusion: gradients, as backward makes them ready, go out in buckets.

Rules (tensors taken in the order backward produces them, i.e. descending layer_id):

- A bucket opens with the first tensor that finds no open bucket. It flushes (becomes ready
  to send) at the earliest of:
  * ``cycle_ms`` after its first tensor became ready (a tensor ready exactly then still
    joins);
  * the moment it holds ``fusion_bytes`` or more;
  * the moment a tensor arrives that would take it past ``fusion_bytes``: like Horovod's
    fixed-size fusion buffer, a bucket never exceeds the threshold unless a single tensor
    is larger than it (that tensor then travels alone); the newcomer opens the next bucket;
  * the end of backward (the last bucket).
- ``fusion_bytes=0`` disables fusion: one bucket per tensor, ready when the tensor is.
- Tensors are never split; each member's byte range inside its bucket is recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from workloads.trace import Trace

DEFAULT_FUSION_BYTES = 64 * 1024 * 1024
DEFAULT_CYCLE_MS = 5.0


@dataclass(frozen=True)
class Bucket:
    index: int
    ready_us: float  # from the start of backward
    nbytes: int
    layer_ids: tuple[int, ...]  # members in backward order
    ranges: tuple[tuple[int, int], ...]  # [start, stop) of each member inside the bucket


def fuse(trace: Trace, fusion_bytes: int = DEFAULT_FUSION_BYTES,
         cycle_ms: float = DEFAULT_CYCLE_MS) -> list[Bucket]:
    """Buckets of ``trace``'s gradients; ready times count from the start of backward."""
    sched = trace.backward_schedule()
    ready = zip(sched["layer_id"].tolist(), sched["grad_bytes"].tolist(),
                sched["ready_us"].tolist())
    return fuse_ready(ready, fusion_bytes, cycle_ms, end_us=trace.backward_total_us)


def fuse_ready(ready: Iterable[tuple[int, int, float]], fusion_bytes: int = DEFAULT_FUSION_BYTES,
               cycle_ms: float = DEFAULT_CYCLE_MS, end_us: float | None = None) -> list[Bucket]:
    """Buckets from ``(layer_id, nbytes, ready_us)`` in ready order; ``end_us`` is the end of
    backward (default: the last ready time)."""
    if fusion_bytes < 0 or cycle_ms < 0:
        raise ValueError(f"fusion_bytes and cycle_ms must be >= 0, got {fusion_bytes}, "
                         f"{cycle_ms}")
    cycle_us = cycle_ms * 1000.0
    buckets: list[Bucket] = []
    members: list[tuple[int, int]] = []  # (layer_id, nbytes) of the open bucket
    first = size = 0
    last_t = float("-inf")

    def flush(at: float) -> None:
        nonlocal members, size
        ranges, offset = [], 0
        for _, nb in members:
            ranges.append((offset, offset + nb))
            offset += nb
        buckets.append(Bucket(len(buckets), at, size, tuple(m[0] for m in members),
                              tuple(ranges)))
        members, size = [], 0

    for layer_id, nbytes, t in ready:
        if t < last_t:
            raise ValueError(f"ready times must not decrease (layer {layer_id} at {t} us)")
        last_t = t
        if members and t > first + cycle_us:
            flush(first + cycle_us)
        if members and size + nbytes > fusion_bytes:
            flush(t)
        if not members:
            first = t
        members.append((int(layer_id), int(nbytes)))
        size += int(nbytes)
        if size >= fusion_bytes:
            flush(t)
    if members:
        end = last_t if end_us is None else max(end_us, last_t)
        flush(min(first + cycle_us, end))
    return buckets
