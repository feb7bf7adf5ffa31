"""The checks of a spec that look past single fields: the topology it builds, the rates after
scaling, the memory its gradients need, its background flows. Each adds its problems to the
spec's checker, naming the field the user wrote."""

import functools
import os
from pathlib import Path

import numpy as np

from topologies import BUILDERS, build as build_topology, builder_params
from workloads import PATTERNS

MAX_BACKGROUND_FLOWS = 20_000   # flows drawn for a run's whole time limit
MIN_RATE_BPS = 1   # what topologies.check_rate takes: an emulated link's rate after scaling


def _check_topology(c, topology, workload):
    kind = topology.get("kind")
    try:
        allowed = builder_params(kind) if isinstance(kind, str) else None
    except ValueError as e:
        c.problems.append(f"topology.kind: {e}")
        return
    if allowed is None:
        c.problems.append("topology.kind: missing; must be one of " + ", ".join(BUILDERS))
        return
    params = {k: v for k, v in topology.items() if k != "kind"}
    try:
        topo = build_topology(kind, **params)
    except ValueError as e:
        c.problems.append(f"topology: {e}")
        return
    hosts = len(topo.hosts())
    needed = workload.get("workers", 0) if isinstance(workload.get("workers"), int) else 0
    pattern = PATTERNS.get(workload.get("pattern")) if isinstance(workload.get("pattern"), str) else None
    uses_ps = pattern is not None and pattern.uses_ps
    if uses_ps and isinstance(workload.get("ps"), int):
        needed += workload["ps"]
    if needed > hosts:
        c.problems.append(f"workload: needs {needed} hosts (workers{' + ps' if uses_ps else ''}) "
                          f"but topology {kind} has {hosts}")
    return topo


def _check_scaled_rates(c, topo, top, raw):
    """Rates run at rate x byte_scale / time_dilation: the slowest link must keep
    MIN_RATE_BPS. Named against the field the user wrote (time_dilation unless only
    byte_scale was given), not against the scaled link."""
    dilation, scale = top["time_dilation"], top["byte_scale"]
    slowest = min(topo.links, key=lambda link: link.rate_bps)
    scaled = slowest.rate_bps * scale / dilation
    if scaled >= MIN_RATE_BPS:
        return
    link = (f"runs the slowest link ({slowest.a}-{slowest.b}, {slowest.rate_bps:g} bit/s) at "
            f"{scaled:.3g} bit/s; an emulated link needs >= {MIN_RATE_BPS} bit/s")
    if "time_dilation" in raw or "byte_scale" not in raw:
        c.problems.append(f"time_dilation: {dilation:g} (with byte_scale {scale:g}) {link}: "
                          f"at most {slowest.rate_bps * scale / MIN_RATE_BPS:.6g} here")
    else:
        c.problems.append(f"byte_scale: {scale:g} (with time_dilation {dilation:g}) {link}: "
                          f"at least {MIN_RATE_BPS * dilation / slowest.rate_bps:.6g} here")


def _check_workload_memory(c, workload, top):
    """Read the workload's trace (a bad file is a problem of workload.trace) and check that
    the run's gradients fit in memory before anything allocates them: every rank holds its
    own, the model's bytes x byte_scale (as dlcp_emu.host.plan rounds them)."""
    from workloads import TraceError
    if not workload.get("trace") and not workload.get("model"):
        return   # a live training workload: its model is the [training] table's, and small
    try:
        sizes = _grad_bytes(workload)
    except TraceError as e:   # its problems already name the file
        c.problems += [f"workload.trace: {p}" for p in e.problems]
        return
    scale = top["byte_scale"]
    ranks = _ranks(workload)
    need, have = _held_bytes(sizes, scale, ranks), machine_memory_bytes()
    if need > have:
        max_scale = have / ranks / max(1, int(sizes.sum()))
        c.problems.append(
            f"byte_scale: {scale:g} x the model's {int(sizes.sum()):,} bytes of gradients x "
            f"{ranks} ranks (each holds its own) = {need / 2**30:,.1f} GiB, more than this "
            f"machine's {have / 2**30:,.1f} GiB of memory; lower byte_scale (at most "
            f"{max_scale:.3g} here) or workload.workers")


def _ranks(workload):
    return workload["workers"] + (workload["ps"] if PATTERNS[workload["pattern"]].uses_ps else 0)


def _held_bytes(sizes, byte_scale, ranks):
    """Every rank's own gradients, as dlcp_emu.host.plan rounds them."""
    return ranks * int(np.maximum(4, (sizes * byte_scale).astype(np.int64) // 4 * 4).sum())


def gradient_memory_bytes(spec):
    """The bytes of gradients a run of a (checked) spec holds at once: none without values or
    for live training (its model is small), else what `_check_workload_memory` counts."""
    w = spec.workload
    if spec.payload != "values" or not (w.get("trace") or w.get("model")):
        return 0
    return _held_bytes(_grad_bytes(w), spec.byte_scale, _ranks(w))


def _grad_bytes(workload):
    """The gradient sizes of the workload's model or trace file (TraceError if the file is
    bad). A file is read each time (it may change between parses); zoo models once."""
    if workload.get("trace"):
        from workloads import load_trace
        return load_trace(workload["trace"]).layers["grad_bytes"].to_numpy(np.float64)
    return _model_sizes(workload["model"])


@functools.lru_cache(maxsize=None)
def _model_sizes(model):
    from workloads import get_model
    sizes = get_model(model).layers["grad_bytes"].to_numpy(np.float64)
    sizes.flags.writeable = False
    return sizes


def machine_memory_bytes():
    """Physical memory, or the cgroup's limit when one is set and lower."""
    have = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
    except OSError:
        return have
    return min(have, int(limit)) if limit.isdigit() else have


def _check_background(c, background, topo, top):
    """Background flows are drawn for the whole time limit: their number must stay within
    what a run holds (MAX_BACKGROUND_FLOWS)."""
    from workloads import mean_flow_bytes
    hosts = topo.hosts()
    (port,) = topo.ports(hosts[0])
    per_s = background["load"] * port.link.rate_bps * len(hosts) / top["time_dilation"] \
        / (8 * mean_flow_bytes(background["distribution"]))
    expected = per_s * top["time_limit_s"]
    if expected > MAX_BACKGROUND_FLOWS:
        count = f"{expected:,.0f}" if expected < 1e12 else f"{expected:.3g}"
        c.problems.append(
            f"background: load {background['load']:g} over time_limit_s {top['time_limit_s']:g} means "
            f"about {count} flows ({len(hosts):,} hosts, links at {port.link.rate_bps:g} bit/s: topology "
            f"hosts and host_rate_bps), above the {MAX_BACKGROUND_FLOWS:,} a run holds; lower "
            f"background.load, time_limit_s (at most {MAX_BACKGROUND_FLOWS / per_s:.3g} s here) or the "
            f"topology's hosts or host_rate_bps")


def _check_sizes(c, workload, compression, training):
    """Payload-free runs carry no values: nothing that computes with them can run."""
    if compression.get("mode", "none") != "none":
        c.problems.append("payload: 'sizes' carries no values to compress; use payload = \"values\" "
                          "or compression.mode = \"none\"")
    if training is not None:
        c.problems.append("payload: 'sizes' carries no values to train with; use payload = \"values\"")
    if workload.get("pattern") in PATTERNS and PATTERNS[workload["pattern"]].uses_ps:
        c.problems.append("payload: 'sizes' runs the collective patterns (ring, ds-sync), not "
                          "parameter servers, which sum values")


def _check_training(c, workload, top):
    """A trained model is its own workload: its layers are the trace, its values the payloads."""
    for name in ("model", "trace"):
        if workload.get(name) is not None:
            c.problems.append(f"workload.{name}: not with [training] (the trained model's "
                              "layers are the workload); remove it")
    if top.get("byte_scale") != 1.0 and top.get("byte_scale") != 1:
        c.problems.append(f"byte_scale: {top.get('byte_scale')!r} is not allowed with [training]; "
                          "must be 1 (the payloads are the model's real gradients)")
