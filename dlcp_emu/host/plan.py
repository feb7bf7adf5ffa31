"""A training plan: what every host agent replays, derived once from a trace and a spec.

Times are integer ns, already multiplied by the time-dilation factor; gradient sizes are
already multiplied by the byte scale (rounded to whole float32 values, at least one).
"""
import functools
from dataclasses import dataclass, field

import numpy as np

from workloads import fuse, magnitudes

from dlcp_emu.scale import Scale


@dataclass(frozen=True)
class BucketPlan:
    index: int
    ready_ns: int                       # after the start of backward
    layer_ids: tuple[int, ...]
    sizes: tuple[int, ...]              # bytes of each member, in bucket order
    nbytes: int
    priority: int                       # 0..7: front layers (needed first by forward) first


@dataclass(frozen=True)
class Plan:
    model: str
    n_layers: int
    forward_ns: tuple[int, ...]         # by layer id
    backward_ns: int                    # whole backward pass
    buckets: tuple[BucketPlan, ...]
    bucket_of_layer: tuple[int, ...]    # by layer id
    compute_ns: int                     # forward + backward of one iteration
    scale: Scale
    mag_params: tuple | None = field(default=None, compare=False, repr=False)
    # Payload-free runs: the layer of each chunk of each message shape, shared by every rank
    # (a ring's ranks send the same shapes: 2 x workers of them, not workers squared).
    chunk_layers: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def bytes_per_iteration(self):
        return sum(b.nbytes for b in self.buckets)


def make_plan(trace, scale=Scale(), fusion_bytes=64 << 20, fusion_cycle_ms=5.0):
    n_layers = trace.num_layers
    layers = trace.layers.set_index("layer_id").sort_index()
    scaled = {lid: max(4, scale.nbytes(b) // 4 * 4) for lid, b in layers["grad_bytes"].items()}
    buckets = []
    bucket_of = [0] * n_layers
    # Fusion decides on the real sizes, so a scaled run keeps the real bucket structure.
    for b in fuse(trace, fusion_bytes, fusion_cycle_ms):
        sizes = tuple(scaled[lid] for lid in b.layer_ids)
        for lid in b.layer_ids:
            bucket_of[lid] = len(buckets)
        buckets.append(BucketPlan(index=len(buckets), ready_ns=scale.time_ns(b.ready_us),
                                  layer_ids=tuple(b.layer_ids), sizes=sizes, nbytes=sum(sizes),
                                  priority=min(7, min(b.layer_ids) * 8 // n_layers)))
    forward = tuple(scale.time_ns(us) for us in layers["forward_us"])
    backward = scale.time_ns(trace.backward_total_us)
    return Plan(model=trace.model, n_layers=n_layers, forward_ns=forward, backward_ns=backward,
                buckets=tuple(buckets), bucket_of_layer=tuple(bucket_of),
                compute_ns=sum(forward) + backward, scale=scale,
                mag_params=None if trace.magnitudes is not None else magnitudes.layer_params(trace.layers))


def gradient(trace, plan, bucket, rank, iteration, seed):
    """The float32 gradient a rank contributes for a bucket: per member layer, magnitudes
    from the trace's model with random signs, from a generator seeded by (seed, rank,
    iteration, bucket) so any process can regenerate any rank's values. Parametric models
    are drawn for the whole bucket in one vectorised call: this runs on the critical path of
    every collective, where a per-layer loop cost milliseconds a bucket."""
    rng = np.random.default_rng([seed, rank, iteration, bucket.index])
    counts = np.fromiter((n // 4 for n in bucket.sizes), dtype=np.int64, count=len(bucket.sizes))
    params = plan.mag_params
    n = int(counts.sum())
    if params is None:   # a per-chunk magnitude table: per layer, as the trace samples it
        mags = np.concatenate([trace.sample_magnitudes(lid, int(c), rng)
                               for lid, c in zip(bucket.layer_ids, counts)]).astype(np.float32)
    else:
        dist, mu, sigma = (a[list(bucket.layer_ids)].astype(np.float32) for a in params)
        if (dist == magnitudes.LOGNORMAL).all():
            mags = magnitudes.lognormal_layers(mu, sigma, counts, rng)
        else:
            mags = magnitudes.draws(*(np.repeat(a, counts) for a in (dist, mu, sigma)), rng)
    # Random signs: flip the sign bit of about half the values.
    signs = rng.integers(0, 2, n, dtype=np.uint32) << np.uint32(31)
    return (mags.view(np.uint32) ^ signs).view(np.float32)


@functools.lru_cache(maxsize=4096)
def _bucket_ends(sizes):
    """Where each member layer of a bucket ends, in bytes (as `gradient` lays them out)."""
    ends = np.cumsum(np.fromiter((n // 4 * 4 for n in sizes), dtype=np.int64, count=len(sizes)))
    ends.flags.writeable = False
    return ends


def chunk_magnitudes(trace, plan, bucket, start, nbytes, chunk_bytes, rng):
    """Payload-free runs (`payload = "sizes"`): one |gradient| per `chunk_bytes` piece of
    bytes [start, start + nbytes) of a bucket, a draw of the distribution of the layer that
    holds the piece's first byte (from `rng`: the collective's, drawn from in the order its
    messages are sent, so a rank's draws are the same in every run). What a chunk of
    real values would give is the mean of its values' magnitudes, which varies less: the
    classes a message's chunks get then differ by layer more than within one. Which layer
    each chunk is in is kept per message shape, in the plan (`Plan.chunk_layers`)."""
    layers = chunk_layers(plan, bucket, start, nbytes, chunk_bytes)
    if plan.mag_params is None:   # a chunk table: per layer, as the trace samples it
        lids = layers
        out = np.empty(len(lids), dtype=np.float64)
        for lid in dict.fromkeys(lids.tolist()):
            at = lids == lid
            out[at] = trace.sample_magnitudes(lid, int(at.sum()), rng)
        return out
    dist, mu, sigma, lognormal_only = layers
    return magnitudes.draws(dist, mu, sigma, rng, lognormal_only)


def collective_magnitudes(trace, plan, bucket, starts, nbytes, chunk_bytes, rng):
    """`chunk_magnitudes` of each of a collective's messages, bytes [starts, starts + nbytes)
    in `chunk_bytes` chunks (int64 arrays, the messages in the order they are sent), one after
    the other from `rng`: one array. Where every chunk's layer is lognormal, one draw of all of
    them (the same stream of the generator, the same float32 operations element by element),
    not one a message."""
    if plan.mag_params is not None:
        counts = -(-nbytes // chunk_bytes)
        begins = np.repeat(np.cumsum(counts) - counts, counts)
        firsts = np.repeat(starts, counts) + (np.arange(begins.size) - begins) * np.repeat(chunk_bytes, counts)
        dist, mu, sigma, lognormal_only = _layers_at(plan, bucket, firsts)
        if lognormal_only:
            return magnitudes.draws(dist, mu, sigma, rng, True)
    return np.concatenate([np.empty(0)] + [chunk_magnitudes(trace, plan, bucket, *s, rng=rng)
                                           for s in zip(starts.tolist(), nbytes.tolist(), chunk_bytes.tolist())])


def chunk_layers(plan, bucket, start, nbytes, chunk_bytes):
    """`_chunk_layers`, kept per message shape in the plan (`Plan.chunk_layers`)."""
    key = (bucket.index, start, nbytes, chunk_bytes)
    layers = plan.chunk_layers.get(key)
    if layers is None:
        layers = plan.chunk_layers[key] = _chunk_layers(plan, bucket, start, nbytes, chunk_bytes)
    return layers


def _chunk_layers(plan, bucket, start, nbytes, chunk_bytes):
    """The layer of each chunk's first byte: see `_layers_at`."""
    return _layers_at(plan, bucket, start + np.arange(0, nbytes, chunk_bytes, dtype=np.int64))


def _layers_at(plan, bucket, firsts):
    """The layer holding each of the bucket's bytes `firsts`: its id (a chunk table), or its
    magnitude distribution's (dist, mu, sigma) as float32 arrays and whether every dist is
    lognormal."""
    ends = _bucket_ends(bucket.sizes)
    lids = np.asarray(bucket.layer_ids)[np.minimum(np.searchsorted(ends, firsts, side="right"), len(ends) - 1)]
    if plan.mag_params is None:
        return lids
    dist, mu, sigma = (a[lids].astype(np.float32) for a in plan.mag_params)
    return dist, mu, sigma, bool((dist == magnitudes.LOGNORMAL).all())
