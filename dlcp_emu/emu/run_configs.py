"""The configs an emulation run writes for its per-host processes (`host_configs`), from the
spec: each rank's agent, and each host's background traffic."""
from dataclasses import asdict
from pathlib import Path

from dlcp_emu.emu.host_configs import BackgroundTcpConfig, BackgroundUdpConfig, HostProcessConfig
from dlcp_emu.experiment.schedule_setup import servers_of
from dlcp_emu.experiment.spec_schedule import is_schedule
from dlcp_emu.experiment.settings import compression_for, transport_settings
from dlcp_emu.experiment.topology import host_link_rate
from dlcp_emu.host.background import BACKGROUND_UDP_PORT
from dlcp_emu.transport import TRANSPORTS
from dlcp_emu.transport.registry import as_config as transport_config
from dlcp_emu.wire import DLCP_UDP_PORT
from dlcp_emu.wire.layout import BACKGROUND_TCP_PORT


def host_config(spec, placement, topology, rank, transport, job=0, start_delay_ns=0, host_queue="fifo",
                **files):
    """The HostProcessConfig of one rank of job `job` (its wire id, starting start_delay_ns
    after the others), its host's queue the pipeline's `host_queue`; files: its process's
    ready_file, start_file, deadline_s, out_path, records_path, ... (`host_configs`)."""
    w, t = spec.workload, spec.transport
    host = placement.host_of_rank[rank]
    return HostProcessConfig(
        rank=rank, role="ps" if rank in placement.ps_ranks else "worker",
        workers=placement.workers, ps_ranks=list(placement.ps_ranks),
        model=w.get("model"), trace=w.get("trace"), pattern=w["pattern"],
        iterations=w["iterations"], group_size=w.get("group_size"), seed=spec.seed,
        transport=transport, transport_entry=transport_config(transport).get("transport_entry"),
        mtu=spec.mtu, loss_bound=t["loss_bound"],
        droppable_fraction=t["droppable_fraction"], drop_order=t["drop_order"],
        transport_settings=asdict(transport_settings(spec)),
        scale=spec.scale.as_config(), training=spec.training,
        # a schedule has none of these (its buckets are the schedule's own): 0 is unread
        fusion_bytes=w.get("fusion_bytes", 0), fusion_cycle_ms=w.get("fusion_cycle_ms", 0.0),
        peers={str(r): [topology.host_ip(h), DLCP_UDP_PORT] for r, h in placement.host_of_rank.items()},
        bind=[topology.host_ip(host), DLCP_UDP_PORT],
        link_rate_bps=host_link_rate(topology, host),
        compression=asdict(compression_for(spec)), engine=spec.engine, job=job,
        schedule=_schedule_section(w), servers=servers_of(placement, topology, w["gpus_per_server"])
        if is_schedule(w) else None, start_delay_ns=start_delay_ns, host_queue=host_queue, **files)


def _schedule_section(w):
    """[workload] of a schedule kind as a host process reads it (None for the data-parallel
    kind): an imported file's path made absolute, for a process started elsewhere."""
    if not is_schedule(w):
        return None
    return {**w, "path": str(Path(w["path"]).resolve())} if w.get("path") else dict(w)


def background_config(spec, topology, host, flows, host_queue="fifo", **files):
    """The config of one host's background process (`experiment.background.background_flows`: flows its
    [(start_ns, dst host index, nbytes, flow id), ...]): BackgroundTcpConfig when the spec's
    background runs over kernel TCP, else BackgroundUdpConfig (its queue the pipeline's
    `host_queue`)."""
    hosts = topology.hosts()
    if TRANSPORTS[spec.background["transport"]].kernel:
        return BackgroundTcpConfig(
            bind=topology.host_ip(host), port=BACKGROUND_TCP_PORT,
            flows=[[t / 1e9, topology.host_ip(hosts[dst]), n] for t, dst, n, _ in flows], **files)
    peers = {str(i): [topology.host_ip(h), BACKGROUND_UDP_PORT] for i, h in enumerate(hosts)}
    index = hosts.index(host)
    return BackgroundUdpConfig(
        index=index, bind=peers[str(index)], peers=peers, flows=[list(f) for f in flows],
        mtu=spec.mtu, link_rate_bps=host_link_rate(topology, host), engine=spec.engine,
        transport_settings=asdict(transport_settings(spec)), host_queue=host_queue, **files)
