"""The what-if analysis of "Is Network the Bottleneck of Distributed Training?" (NetAI'20):
how well would data-parallel training scale if the network were fully used?

Backward releases gradients layer by layer (the per-layer trace). Tensor fusion as in the
paper's simulation: the time and bytes accumulated since the last flush are checked after
each gradient, and the bucket is flushed once either reaches its threshold (5 ms, 64 MiB),
so a bucket may run past 64 MiB by its last tensor. Buckets are all-reduced in order by ring
all-reduce at line rate B with compression ratio C:

    reduce-scatter = S*8*(N-1)/N / B / C + (N-1) * vec_add(S/N)
    all-gather     = S*8*(N-1)/N / B / C

with vec_add the V100 cost table (cuda_vec_add.log), interpolated. A bucket's all-reduce
starts when it is ready and the previous one has ended. overhead = end of the last all-reduce
- end of backward; scaling factor = T_batch / (T_batch + overhead), T_batch the single-GPU
batch time. The paper measured this by spinning real time; here it is computed exactly.
"""
import math
from dataclasses import asdict, dataclass

from workloads import get_model, vec_add_seconds

FUSION_BYTES = 64 * 1024 * 1024
FUSION_CYCLE_S = 0.005
SWEEP_WORKERS = (16, 32, 64)
SWEEP_BANDWIDTH_GBPS = (1, 10, 25, 40, 100)
SWEEP_COMPRESSION = (1, 2, 5, 10, 100)
SWEEP_MODELS = ("resnet50", "resnet101", "vgg16")


@dataclass(frozen=True)
class WhatIf:
    model: str
    workers: int
    bandwidth_gbps: float
    compression: float
    scaling_factor: float
    batch_time_s: float
    backward_s: float
    overhead_s: float
    buckets: int
    bytes_per_iteration: int
    network_s: float        # time all-reduces spend on the wire
    vec_add_s: float        # time they spend adding vectors
    network_utilization: float  # wire time / (backward + overhead): how busy the link is

    def as_dict(self):
        return asdict(self)


def paper_fusion(trace, fusion_bytes=FUSION_BYTES, cycle_s=FUSION_CYCLE_S):
    """[(ready_s, bytes)] of the fused buckets, and the end of backward in seconds."""
    sched = trace.backward_schedule()
    waits = trace.layers.set_index("layer_id").loc[sched["layer_id"], "backward_us"].to_numpy() / 1e6
    buckets, t, acc_t, acc_b = [], 0.0, 0.0, 0
    for wait, nbytes in zip(waits, sched["grad_bytes"].to_numpy()):
        t += wait
        acc_t += wait
        acc_b += int(nbytes)
        if acc_t >= cycle_s or acc_b >= fusion_bytes:
            buckets.append((t, acc_b))
            acc_t, acc_b = 0.0, 0
    if acc_b:
        buckets.append((t, acc_b))
    return buckets, t


def whatif(model, workers, bandwidth_gbps, compression=1.0, trace=None):
    if not (isinstance(workers, int) and workers >= 1):
        raise ValueError(f"workers must be an integer >= 1, got {workers!r}")
    if not (math.isfinite(bandwidth_gbps) and bandwidth_gbps > 0):
        raise ValueError(f"bandwidth_gbps must be > 0 (and finite), got {bandwidth_gbps!r}")
    if not (math.isfinite(compression) and compression >= 1):
        raise ValueError(f"compression must be >= 1 (a finite ratio), got {compression!r}")
    trace = trace or get_model(model)
    n, bw = workers, bandwidth_gbps * 1e9
    buckets, backward_s = paper_fusion(trace)
    end = wire = adds = 0.0
    for ready, size in buckets:
        net = size * 8 * (n - 1) / n / bw / compression
        add = (n - 1) * vec_add_seconds(size / n) if n > 1 else 0.0
        end = max(ready, end) + 2 * net + add
        wire += 2 * net
        adds += add
    overhead = max(0.0, end - backward_s)
    batch_s = trace.batch_time_us / 1e6
    return WhatIf(model=model, workers=n, bandwidth_gbps=bandwidth_gbps, compression=compression,
                  scaling_factor=batch_s / (batch_s + overhead), batch_time_s=batch_s,
                  backward_s=backward_s, overhead_s=overhead, buckets=len(buckets),
                  bytes_per_iteration=int(sum(s for _, s in buckets)), network_s=wire,
                  vec_add_s=adds, network_utilization=min(1.0, wire / (backward_s + overhead)))


def sweep(models=SWEEP_MODELS, workers=SWEEP_WORKERS, bandwidths=SWEEP_BANDWIDTH_GBPS,
          compressions=SWEEP_COMPRESSION):
    import pandas as pd
    rows = []
    for model in models:
        trace = get_model(model)
        for c in compressions:
            for n in workers:
                for b in bandwidths:
                    rows.append(whatif(model, n, b, c, trace=trace).as_dict())
    return pd.DataFrame(rows)


def plot_sweep(table, path):
    """Scaling factor against bandwidth: one panel per model, a line per (workers, compression)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    models = list(dict.fromkeys(table["model"]))
    fig, axes = plt.subplots(1, len(models), figsize=(5 * len(models), 4.2), sharey=True, squeeze=False)
    for ax, model in zip(axes[0], models):
        sub = table[table["model"] == model]
        for (n, c), g in sub.groupby(["workers", "compression"]):
            if c not in (1, 10) and n != 64:
                continue   # keep the panel readable: all workers at C=1 and 10, all C at 64
            style = "-" if c == 1 else "--" if c == 10 else ":"
            ax.plot(g["bandwidth_gbps"], g["scaling_factor"], style, marker="o", ms=3,
                    label=f"{n} workers, C={c:g}")
        ax.set_xscale("log")
        ax.set_xticks(SWEEP_BANDWIDTH_GBPS, [str(b) for b in SWEEP_BANDWIDTH_GBPS])
        ax.set_ylim(0, 1.05)
        ax.set_title(model)
        ax.set_xlabel("bandwidth (Gbit/s)")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("scaling factor  T / (T + overhead)")
    axes[0][-1].legend(fontsize=7, loc="lower right")
    fig.suptitle("What-if: fully used network, ring all-reduce (NetAI'20 analysis)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
