"""What the emulator's host processes are given: hostd's config, from the spec and the run's
placement. (The run's steps are `experiment.run`; its parts live beside their data:
`topology`, `placement`, `background`, `settings`, `tables`.)"""
from dataclasses import asdict

from dlcp_emu.experiment.settings import compression_for, transport_settings
from dlcp_emu.experiment.topology import host_link_rate
from dlcp_emu.transport.registry import as_config as transport_config


def hostd_config(spec, placement, topology, rank, transport, **extra):
    w, t = spec.workload, spec.transport
    return {
        "rank": rank, "role": "ps" if rank in placement.ps_ranks else "worker",
        "workers": placement.workers, "ps_ranks": list(placement.ps_ranks),
        "model": w.get("model"), "trace": w.get("trace"), "pattern": w["pattern"],
        "iterations": w["iterations"], "group_size": w["group_size"], "seed": spec.seed,
        "transport": transport, **transport_config(transport), "mtu": spec.mtu, "loss_bound": t["loss_bound"],
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
