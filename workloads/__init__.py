"""Workloads: per-layer gradient traces, the model zoo, tensor fusion, communication
patterns and background traffic. All pure Python: no I/O beyond reading trace files."""

from workloads.background import FLOW_CDFS, Flow, mean_flow_bytes, poisson_flows, sample_flow_sizes
from workloads.fusion import DEFAULT_CYCLE_MS, DEFAULT_FUSION_BYTES, Bucket, fuse, fuse_ready
from workloads.netai2020 import load_netai2020, read_bk_log, vec_add_seconds, vec_add_table
from workloads.patterns import (
    PATTERNS,
    Aggregate,
    Pattern,
    PSSchedule,
    RingSchedule,
    Transfer,
    ds_sync_groups,
    execute_ps,
    execute_ring_allreduce,
    parameter_server,
    ring_allreduce,
    split_ranges,
)
from workloads.trace import Trace, TraceError, load_trace
from workloads.zoo import get_model, list_models, trace_of

__all__ = [
    "PATTERNS", "Pattern",    "Aggregate", "Bucket", "DEFAULT_CYCLE_MS", "DEFAULT_FUSION_BYTES", "FLOW_CDFS", "Flow",
    "PSSchedule", "RingSchedule", "Trace", "TraceError", "Transfer", "ds_sync_groups",
    "execute_ps", "execute_ring_allreduce", "fuse", "fuse_ready", "get_model", "list_models",
    "load_netai2020", "load_trace", "mean_flow_bytes", "parameter_server", "poisson_flows",
    "read_bk_log", "ring_allreduce", "sample_flow_sizes", "split_ranges", "trace_of", "vec_add_seconds",
    "vec_add_table",
]
