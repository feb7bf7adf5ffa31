"""The configs of an emulation's per-host processes, each written by the runner
(`run_configs`) and read by its process with the same class (`process_config`): the agent
(`hostd`: HostProcessConfig) and background traffic over the reliable transport
(`background_udp`: BackgroundUdpConfig) or kernel TCP (`background_tcp`: BackgroundTcpConfig).

Kept apart from the processes and from the spec: a process imports this module alone to read
its config, not the runner's. Values are JSON's: lists, and str keys (a rank, a host index).
"""
from dataclasses import dataclass
from typing import ClassVar

from dlcp_emu.emu.process_config import ConfigError, ProcessConfig
from switch_models.nic import HOST_QUEUES


def _check_host_queue(cfg):
    if cfg.host_queue not in HOST_QUEUES:
        raise ConfigError(f"{type(cfg).__name__}: host_queue must be one of {', '.join(HOST_QUEUES)}, "
                          f"got {cfg.host_queue!r}")


@dataclass(frozen=True, kw_only=True)
class StartedProcessConfig(ProcessConfig):
    """What every per-host process has (`host_process`): it says it is ready in ready_file and
    starts at the time the runner writes to start_file; it stops after deadline_s (emulated
    seconds) at the latest; it writes what it measured to out_path; it runs on cpus (None:
    any) at nice."""

    ready_file: str
    start_file: str
    deadline_s: float
    out_path: str
    cpus: list | None = None
    nice: int = 0


@dataclass(frozen=True, kw_only=True)
class HostProcessConfig(StartedProcessConfig):
    """One rank's agent (`hostd`). out_path: its status; records_path, samples_path: its
    records and timing samples (`hostd`'s docstring); packets_path: its packet log, or None;
    results_path: its reduced tensors (.npz) for verification, or None.

    The rest is the spec's, in the run's (scaled) units: the workload (model or trace,
    pattern, iterations, group_size, fusion), the transport and its settings
    (`TransportSettings` fields), `Scale` and `CompressionSpec` fields, [training] or None,
    the host's link rate, and engine (python: the Python endpoints over `UdpDriver`, else the
    compiled data plane, `native_host`); host_queue: the pipeline's (`emu.host_egress`).

    schedule: the spec's [workload] of a schedule kind (docs/schedules.md), or None; with it,
    servers: each rank's server number (the hierarchical algorithms' groups). The process
    derives the plan from these as the run's set-up does (`experiment.schedule_setup`) and
    runs its rank's program (`host.schedule_agent`); the data-parallel fields are then unread."""

    program: ClassVar[str] = "dlcp_emu.emu.hostd"

    rank: int
    role: str                    # "worker" | "ps"
    workers: int
    ps_ranks: list
    peers: dict                  # {rank: [ip, port]} of every rank
    bind: list                   # [ip, port]
    model: str | None
    trace: str | None
    pattern: str
    iterations: int
    group_size: int | None
    seed: int
    transport: str
    transport_entry: dict | None   # a transport not built in: `transport.registry.as_config`
    mtu: int
    loss_bound: float
    droppable_fraction: float
    drop_order: str
    transport_settings: dict
    scale: dict
    training: dict | None
    fusion_bytes: int
    fusion_cycle_ms: float
    link_rate_bps: float
    compression: dict
    engine: str
    schedule: dict | None
    servers: list | None
    records_path: str
    samples_path: str | None = None
    packets_path: str | None = None
    results_path: str | None = None
    job: int = 0                 # the header's job field (several jobs: jobs_spec.wire_id)
    host_queue: str = "fifo"     # the pipeline's: "priority" sends control packets first
    start_delay_ns: int = 0      # its job's start after the common start (emulated ns)

    __post_init__ = _check_host_queue

    def workload(self):
        """The spec's [workload] fields this config carries (`make_worker`, `trace_of`)."""
        return {"model": self.model, "trace": self.trace, "pattern": self.pattern,
                "iterations": self.iterations, "group_size": self.group_size}


@dataclass(frozen=True, kw_only=True)
class BackgroundUdpConfig(StartedProcessConfig):
    """One host's background flows over the reliable transport (`background_udp`): flows
    [[start_ns (emulated, after the common start), dst index, nbytes, flow id], ...] from bind
    [ip, port] to peers {index: [ip, port]}; transport_settings `TransportSettings` fields, as
    the training's; engine the spec's (`native_host`)."""

    program: ClassVar[str] = "dlcp_emu.emu.background_udp"

    index: int
    bind: list
    peers: dict
    flows: list
    mtu: int
    link_rate_bps: float
    engine: str
    transport_settings: dict
    host_queue: str = "fifo"     # the pipeline's: "priority" sends control packets first

    __post_init__ = _check_host_queue


@dataclass(frozen=True, kw_only=True)
class BackgroundTcpConfig(StartedProcessConfig):
    """One host's background flows over kernel TCP (`background_tcp`): a sink on bind:port
    and flows [[start_s (emulated, after the common start), dst ip, nbytes], ...]."""

    program: ClassVar[str] = "dlcp_emu.emu.background_tcp"

    bind: str
    port: int
    flows: list
