"""What `run` (emulation) and `simulate` share: the scaled topology, who runs where, and
turning the agents' records into the run's tables and summary.

Scaling: link rates are multiplied by byte_scale / time_dilation and delays by
time_dilation; gradient bytes by byte_scale; compute times by time_dilation. A real-world
second is then time_dilation emulated seconds, and every time written out is divided back.
"""
import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from switch_models import PipelineSpec
from topologies import build as build_topology, builder_params
from workloads import PATTERNS

from dlcp_emu.experiment import results
from dlcp_emu.transport import TRANSPORTS
from dlcp_emu.transport.congestion import ETHERNET_FRAMING
from dlcp_emu.transport.settings import TransportSettings
from dlcp_emu.host.compression import CompressionSpec
from dlcp_emu.experiment.spec_checks import MAX_BACKGROUND_FLOWS


# A scaled buffer holds at least this many full frames: packets are not scaled, only their
# number, so a buffer scaled below a few frames could not queue at all.
MIN_BUFFER_FRAMES = 16


def scaled_topology(spec):
    """The topology as emulated: rates * byte_scale / dilation, delays * dilation, buffers *
    byte_scale (the same queueing delay in real-world time), but never under
    MIN_BUFFER_FRAMES frames: with strong byte scaling buffers are then deeper, in real-world
    time, than the spec's (`buffer_floor` in the summary says so)."""
    kind = spec.topology["kind"]
    params = {k: v for k, v in spec.topology.items() if k != "kind"}
    defaults = builder_params(kind)
    scale = spec.scale
    for key in list(params):
        if key.endswith("rate_bps") and params[key] is not None:
            params[key] = scale.rate_bps(params[key])
        elif key.endswith("delay_ns") and params[key] is not None:
            params[key] = scale.delay_ns(params[key])
    floor = MIN_BUFFER_FRAMES * (spec.mtu + 14)
    for key, default in defaults.items():
        if key.endswith("buffer_bytes"):
            real = params.get(key, default)
            if real is not None:
                params[key] = max(floor, scale.nbytes(real))
    return build_topology(kind, **params)


def buffer_floor_applied(spec):
    defaults = builder_params(spec.topology["kind"])
    real = [spec.topology.get(k, v) for k, v in defaults.items() if k.endswith("buffer_bytes")]
    return any(b is not None and b * spec.byte_scale < MIN_BUFFER_FRAMES * (spec.mtu + 14) for b in real)


@dataclass(frozen=True)
class Placement:
    workers: int
    ps_ranks: tuple
    host_of_rank: dict        # rank -> host name


def preset_name(pipeline):
    """What a run under this pipeline (a preset name or a [switch] table) is called."""
    return PipelineSpec.parse(pipeline).name


def place(spec, topology):
    """Which host runs which rank: workers first, then parameter servers. `spread` deals
    the ranks round robin over the racks (edge switches), so that neighbours in a ring sit in
    different racks and synchronisation crosses the fabric; `packed` fills rack after rack."""
    w = spec.workload
    n = w["workers"]
    ps = tuple(range(n, n + w["ps"])) if PATTERNS[w["pattern"]].uses_ps else ()
    hosts = topology.hosts()
    if w["placement"] == "spread":
        racks = {}
        for h in hosts:
            racks.setdefault(topology.attached_switch(h)[0], []).append(h)
        columns = list(racks.values())
        hosts = [col[i] for i in range(max(map(len, columns))) for col in columns if i < len(col)]
    return Placement(n, ps, {r: hosts[r] for r in range(n + len(ps))})


def background_flows(spec, topology):
    """The spec's background flows, the same for both backends: {host: [(start_ns, dst host
    index, nbytes, flow id), ...]} with times in emulated ns from the start and sizes scaled
    by byte_scale. Arrivals are as in the real-world network slowed by the dilation (real
    flow sizes over the unscaled rate), so the offered load is the spec's fraction of each
    host link."""
    from workloads import poisson_flows
    hosts = topology.hosts()
    rate = host_link_rate(topology, hosts[0])
    bg = spec.background
    flows = poisson_flows(bg["distribution"], bg["load"], rate / spec.byte_scale * len(hosts),
                          spec.time_limit_s, hosts, spec.seed, max_flows=MAX_BACKGROUND_FLOWS)
    index = {h: i for i, h in enumerate(hosts)}
    by_src = {h: [] for h in hosts}
    scale = spec.scale   # a new Scale each time it is read: once, not once a flow
    for fid, f in enumerate(flows):
        by_src[f.src].append((int(f.start_s * 1e9), index[f.dst], max(1, scale.nbytes(f.nbytes)), fid))
    return by_src


def host_link_rate(topology, host):
    """The rate of a host's (only) link, as the topology has it (scaled, for a run)."""
    (port,) = topology.ports(host)
    return port.link.rate_bps


def host_frame_ns(topology, mtu):
    """A full frame's time on the wire (Ethernet framing included) on the fastest host link,
    ns: the yardstick of the hosts' waits and the switches' wake period."""
    return (mtu + ETHERNET_FRAMING) * 8e9 / max(host_link_rate(topology, h) for h in topology.hosts())


def compression_for(spec):
    """The agents' CompressionSpec: the spec's real-world target delay in the run's (dilated)
    time."""
    c = dict(spec.compression)
    target_ms = c.pop("target_delay_ms")
    return CompressionSpec(**c, target_delay_ns=spec.scale.stretch(target_ms * 1e6))


def transport_settings(spec):
    """The senders' TransportSettings: the spec's congestion control, and its RTO floor in the
    run's (dilated) time."""
    t = spec.transport
    ssthresh = math.inf if t["initial_ssthresh"] == "infinite" else float(t["initial_ssthresh"])
    return TransportSettings(t["congestion"], int(spec.scale.stretch(t["min_rto_us"] * 1000)), ssthresh,
                             float(t["dctcp_alpha"]))


def hostd_config(spec, placement, topology, rank, transport, **extra):
    w, t = spec.workload, spec.transport
    return {
        "rank": rank, "role": "ps" if rank in placement.ps_ranks else "worker",
        "workers": placement.workers, "ps_ranks": list(placement.ps_ranks),
        "model": w.get("model"), "trace": w.get("trace"), "pattern": w["pattern"],
        "iterations": w["iterations"], "group_size": w["group_size"], "seed": spec.seed,
        "transport": transport, "mtu": spec.mtu, "loss_bound": t["loss_bound"],
        "droppable_fraction": t["droppable_fraction"], "drop_order": t["drop_order"],
        "transport_settings": asdict(transport_settings(spec)),
        "scale": spec.scale.as_config(), "training": spec.training,
        "fusion_bytes": w["fusion_bytes"],
        "fusion_cycle_ms": w["fusion_cycle_ms"],
        "peers": {r: [topology.host_ip(h), 9796] for r, h in placement.host_of_rank.items()},
        "bind": [topology.host_ip(placement.host_of_rank[rank]), 9796],
        "link_rate_bps": host_link_rate(topology, placement.host_of_rank[rank]),
        "compression": asdict(compression_for(spec)),
        "engine": spec.engine,
        **extra,
    }


def tables(records, run_scale, t0_ns=0):
    """records: the hosts' record dicts (hostd's format). Returns (iterations, tensors,
    deliveries) DataFrames with times in real-world seconds from the run's start."""
    scale = run_scale.s_per_ns
    its, tens, dels = [], [], []
    for rec in records:
        rank = rec["rank"]
        it = sorted(rec.get("iterations", []), key=lambda r: r["iteration"])
        for i, r in enumerate(it):
            end = it[i + 1]["start_ns"] if i + 1 < len(it) else r["comm_end_ns"]
            done = end is not None and end >= 0
            total = (end - r["start_ns"]) * scale if done else None
            its.append({"rank": rank, "iteration": r["iteration"],
                        "start_s": (r["start_ns"] - t0_ns) * scale,
                        "compute_s": r["compute_ns"] * scale,
                        "total_s": total,
                        "comm_s": None if total is None else max(0.0, total - r["compute_ns"] * scale)})
        for r in rec.get("tensors", []):
            done = r["done_ns"] >= 0
            tens.append({"rank": rank, "iteration": r["iteration"], "bucket": r["bucket"],
                         "nbytes": r["nbytes"], "ready_s": (r["ready_ns"] - t0_ns) * scale,
                         "done_s": (r["done_ns"] - t0_ns) * scale if done else None,
                         "fct_s": (r["done_ns"] - r["ready_ns"]) * scale if done else None,
                         "lost_bytes": r["lost_bytes"], "ratio": r["ratio"],
                         "sent_bytes": r["sent_bytes"], "dense_bytes": r["dense_bytes"],
                         "energy_kept": r["energy_kept"],
                         "delay_s": r["delay_ns"] * scale if r["delay_ns"] >= 0 else None})
    return pd.DataFrame(its), pd.DataFrame(tens), _deliveries(records, scale, t0_ns)


def _deliveries(records, scale, t0_ns):
    """The deliveries' table, by columns: a run of a thousand hosts delivers millions of
    messages, and a dict a row cost seconds."""
    rows, by_class = [], []
    for rec in records:
        rank = rec["rank"]
        for src, it_, tid, nbytes, lost, first, done, classes in rec.get("deliveries", []):
            rows.append((src, rank, it_, tid, nbytes, lost, first, done))
            by_class.append(classes)
    if not rows:
        return pd.DataFrame()
    d = pd.DataFrame(rows, columns=["src", "dst", "iteration", "tensor_id", "nbytes", "lost_bytes",
                                    "first_s", "done_s"])
    for col in ("first_s", "done_s"):
        d[col] = (d[col] - t0_ns) * scale
    lost = np.zeros((9, len(rows)), dtype=np.int64)   # by class -1..7 (-1: never seen, not even trimmed)
    for i, classes in enumerate(by_class):
        for k, n in classes.items():     # {} for most; keys are str in hosts' files
            if -1 <= int(k) <= 7:
                lost[int(k) + 1, i] = int(n)
    for k in range(-1, 8):
        d[f"lost_mag{k}"] = lost[k + 1]
    return d


def active_seconds(tensors):
    """Real-world seconds from the start to the last synchronised tensor: the span over
    which link utilisation is averaged."""
    return float(tensors["done_s"].max()) if len(tensors) and tensors["done_s"].notna().any() else None


def port_table(counters_by_switch, duration_s, scale):
    """Switch counters -> one row per egress port, with utilisation over duration_s
    (real-world seconds; the counters' rates are the scaled ones, so time is dilated back)."""
    rows = []
    for sw, c in counters_by_switch.items():
        for port, p in c["ports"].items():
            rate = p.get("rate_bps")
            row = {"switch": sw, "port": int(port), "tx_packets": p["tx_packets"],
                   "tx_bytes": p["tx_bytes"], "enqueued": p["enqueued"],
                   "trimmed": p["trimmed"], "marked": p["marked"],
                   "max_queue_bytes": p["max_bytes"], "dropped": sum(p["drops"].values()),
                   "rate_bps": rate,
                   "utilization": (p["tx_bytes"] * 8 / (rate * duration_s * scale.dilation))
                   if rate and duration_s else None}
            for reason, count in p["drops"].items():
                row[f"drop_{reason}"] = count
            rows.append(row)
    return pd.DataFrame(rows)


def summary(spec, pipeline, transport, its, tens, dels, ports, fidelity, duration_s, plan):
    s = results.summarize(its, tens, dels, ports,
                          compute_s=spec.scale.seconds(plan.compute_ns),
                          workers=spec.workload["workers"],
                          loss_bound=spec.transport["loss_bound"] if TRANSPORTS[transport].bounded_loss else 0.0,
                          fidelity=fidelity, duration_s=duration_s)
    s["compression"] = results.compression_summary(spec.compression, tens)
    s.update({"preset": preset_name(pipeline), "pipeline": PipelineSpec.parse(pipeline).describe(),
              "transport": transport,
              "transport_settings": None if TRANSPORTS[transport].kernel
              else transport_settings(spec).describe(spec.time_dilation),
              "model": spec.workload.get("model") or spec.workload.get("trace")
              or f"{spec.training['model']}-{spec.training['dataset']}",
              "pattern": spec.workload["pattern"], "time_dilation": spec.time_dilation,
              "byte_scale": spec.byte_scale, "buffer_floor": buffer_floor_applied(spec)})
    return s


def queue_table(samples_by_switch, t0_ns, scale):
    """{switch: {"ports": [...], "samples": rows of (t_ns, bytes...), a list or an int64
    array}} -> long table of (switch, port, t_s, queued_bytes), t_s in real-world seconds
    from t0; ports that never queued anything are left out."""
    columns = ["switch", "port", "t_s", "queued_bytes"]
    parts = []
    for sw, q in samples_by_switch.items():
        if not q or not len(q.get("samples", ())):
            continue
        a = np.asarray(q["samples"], dtype=np.int64)
        t_s = scale.seconds(a[:, 0] - t0_ns)
        parts += [pd.DataFrame({"switch": sw, "port": int(port), "t_s": t_s, "queued_bytes": a[:, i + 1]})
                  for i, port in enumerate(q["ports"]) if a[:, i + 1].any()]
    if not parts:
        return pd.DataFrame([], columns=columns)
    return pd.concat(parts, ignore_index=True)[columns]


def finish(run_dir, s, frames, interrupted):
    """What both backends do last: note why a run stopped early, summarise packet fates and
    background flows, and write every table (even empty ones, so readers find them)."""
    s["completed"] = interrupted is None
    if interrupted:
        s["stopped_because"] = interrupted
        s["interrupted"] = interrupted.startswith("interrupted")
    packets = frames.get("packets")
    if packets is not None and len(packets):
        s["packets"] = packets["fate"].value_counts().to_dict()
    background = frames.get("background")
    if background is not None and len(background):
        done = background[background["state"] == "done"]
        s["background"] = {"flows": int(len(background)), "completed": int(len(done)),
                           "fct_p50_s": results.percentile(done["fct_s"], 50),
                           "fct_p99_s": results.percentile(done["fct_s"], 99)}
    for name, frame in frames.items():
        results.write_table(run_dir, name, frame)
    return s
