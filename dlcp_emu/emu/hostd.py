"""The host agent process: one per emulated host, in its Mininet namespace.

    python -m dlcp_emu.emu.hostd --config FILE.json

Builds the plan from the trace (or the schedule: `build_schedule_agent`), the agent (worker,
parameter server or a schedule's rank) and its transport stack, binds a UDP socket on the
host's address at the DLCP port, waits for the common start
(`hostproc.wait_for_start`: CLOCK_MONOTONIC is shared by all namespaces), runs until the agent is done or the
deadline, and, if asked, writes its reduced tensors (`results_path`, .npz) for verification.

What it measures goes out every second, and once more at the end (SIGTERM too), so a run
that is stopped or crashes keeps it (`Reporter`):
- `records_path`: the records closed since the last second, appended as JSON lines
  (`host.records.take_closed`: iterations, tensors, deliveries, sends, accuracy, a
  parameter server's lost ranges); only open records stay in memory, so it stays flat
  however long the run. The last append adds the records still open.
- `out_path`: the status (done, packets, stalls, the sum of timer lateness), small.
- `samples_path`: the latest timer lateness and receive lag samples (10,000 each at most),
  every SAMPLES_EVERY_NS and at the end.
`run_records.read_host_records` puts the three back together.

Config: `host_configs.HostProcessConfig`, which says what each field means.
"""
import gc
import os
import select
import socket
import sys
import time

import numpy as np

from dlcp_emu.host.agent import make_worker
from dlcp_emu.host.parameter_server import ParameterServer
from dlcp_emu.host.compression import CompressionSpec
from dlcp_emu.host.stack import HostStack
from dlcp_emu.host.training import TrainingSpec, trace_of_training
from dlcp_emu.emu.host_configs import HostProcessConfig
from dlcp_emu.emu.host_process import config_and_stop_flag, wait_for_start
from dlcp_emu.emu.streams import JsonLinesWriter, process_cpu_s, process_cpus
from dlcp_emu.host.records import take_closed
from dlcp_emu.jsonio import CheckpointWriter, write_json_atomic
from dlcp_emu.host.packet_log import MAX_RECORDS, PacketLog, write_records
from dlcp_emu.host.plan import make_plan
from dlcp_emu.host.schedule_agent import ScheduleAgent
from dlcp_emu.experiment.schedule_setup import schedule_plan
from dlcp_emu.experiment.spec_schedule import schedule_of
from dlcp_emu.emu.native_host import NativeUdpHost
from dlcp_emu.experiment.engine import choose_engine
from dlcp_emu.emu.udp_driver import UdpDriver
from dlcp_emu.scale import Scale
from dlcp_emu.transport import transport
from dlcp_emu.transport.registry import adopt as adopt_transport
from dlcp_emu.transport.settings import TransportSettings
from workloads import trace_of

MAX_WAIT_S = 0.002
TCP_PORT = 9797
PREGENERATE_MAX_BYTES = 1 << 30   # a worker's gradients drawn before the start, if they fit
# The samples' checkpoint (20k numbers: ~6 ms of serialising on the loop, while packets wait)
# every 10 s, the status every second: 1 s had the four hosts of the default spec, on one
# core, each stall ~5 ms a second.
SAMPLES_EVERY_NS = 10_000_000_000


def run_kernel_tcp(cfg, agent, stopping):
    """The `tcp` transport: the agent's messages over kernel TCP connections."""
    from dlcp_emu.emu.tcp_messenger import TcpMessenger
    peers = {int(r): tuple(a) for r, a in cfg.peers.items()}
    bind = (cfg.bind[0], TCP_PORT)
    m = TcpMessenger(cfg.rank, agent, {r: (a[0], TCP_PORT) for r, a in peers.items()}, bind)
    clock = time.monotonic_ns
    wait_for_start(cfg, stopping, delay_ns=cfg.start_delay_ns)
    started = clock()
    m.start(started)
    deadline = started + int(cfg.deadline_s * 1e9)
    reporter = Reporter(cfg, agent, m)
    next_write, reported = started + 1_000_000_000, False
    while not stopping and clock() < deadline:
        wake = m.next_timeout()
        now = clock()
        wait = MAX_WAIT_S if wake is None else min(max(wake - now, 0) / 1e9, MAX_WAIT_S)
        readable, writable, _ = select.select(m.sockets(), m.writers(), [], wait)
        now = clock()
        for s in writable:
            m.on_writable(s)
        for s in readable:
            m.on_readable(s, now)
        m.on_timer(clock())
        for s in m.writers():
            m.on_writable(s)
        if now >= next_write or (m.done and not reported):
            reported = m.done
            reporter.tick(tcp_status(cfg, m, started, False))
            next_write = now + 1_000_000_000
    reporter.close(tcp_status(cfg, m, started, True))
    save_results(cfg, agent)
    return 0


def tcp_status(cfg, m, started, finished):
    engine, note = choose_engine(cfg.engine, transport=cfg.transport)   # the kernel's
    return {"rank": cfg.rank, "role": cfg.role, "finished": finished, "started_ns": started,
            "done": m.done, "engine": engine, "engine_note": note,
            "cpu_s": process_cpu_s(), "cpus": process_cpus()}


class Reporter:
    """Streams the closed records, checkpoints the status and samples (module docstring)."""

    def __init__(self, cfg, agent, host):
        self.agent, self.host = agent, host
        self.status_path, self.samples_path = cfg.out_path, cfg.samples_path
        self.records = JsonLinesWriter(cfg.records_path)
        self.checkpoints = CheckpointWriter()

    def tick(self, status, samples=None):
        self.records.append(take_closed(self.agent, self.host))
        self.checkpoints.write(self.status_path, status)
        if samples is not None and self.samples_path:
            self.checkpoints.write(self.samples_path, samples)

    def close(self, status, samples=None):
        self.records.append(take_closed(self.agent, self.host, final=True))
        self.records.close()
        self.checkpoints.close()
        write_json_atomic(self.status_path, status)
        if samples is not None and self.samples_path:
            write_json_atomic(self.samples_path, samples)


def build_agent(cfg):
    if cfg.schedule is not None:
        return build_schedule_agent(cfg)
    training = TrainingSpec(**cfg.training) if cfg.training else None
    trace = trace_of(cfg.workload()) if training is None else trace_of_training(training)
    plan = make_plan(trace, Scale(**cfg.scale),
                     fusion_bytes=cfg.fusion_bytes, fusion_cycle_ms=cfg.fusion_cycle_ms)
    rank = cfg.rank
    if cfg.role == "ps":
        agent = ParameterServer(rank, range(cfg.workers), cfg.ps_ranks, plan, cfg.iterations,
                                compression=CompressionSpec(**cfg.compression), seed=cfg.seed)
    else:
        agent = make_worker(rank, cfg.workers, plan, trace, cfg.workload(), cfg.seed, cfg.ps_ranks,
                            CompressionSpec(**cfg.compression), cfg.link_rate_bps,
                            cfg.mtu, keep_results=bool(cfg.results_path), training=training)
    return plan, agent


def build_schedule_agent(cfg):
    """(plan, agent) of a schedule run: the plan derived as the run's set-up derives it, this
    rank's program in a ScheduleAgent, the simulator's agent of that rank."""
    w = cfg.schedule
    plan = schedule_plan(schedule_of(w), w, Scale(**cfg.scale), cfg.servers)
    return plan, ScheduleAgent(cfg.rank, plan.programs[cfg.rank], cfg.iterations, payload="values", seed=cfg.seed)


class Stalls:
    """How long this process stopped serving packets for itself: garbage collections (from
    gc.callbacks) and building its record checkpoints (a thread writes them). A stall of one
    rank stalls the whole ring."""

    def __init__(self):
        self.gc = [0, 0, 0]            # count, sum ns, max ns
        self.writes = [0, 0, 0]
        self._t0 = 0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase, _info):
        if phase == "start":
            self._t0 = time.monotonic_ns()
        else:
            self.add(self.gc, time.monotonic_ns() - self._t0)

    @staticmethod
    def add(acc, ns):
        acc[0] += 1
        acc[1] += ns
        acc[2] = max(acc[2], ns)

    def summary(self):
        return {f"{k}_{f}": v for k, acc in (("gc", self.gc), ("write", self.writes))
                for f, v in zip(("count", "sum_ns", "max_ns"), acc)}


def status(cfg, stack, started_ns, finished, driver, stalls):
    turns = getattr(driver, "agent_turns", None)
    return {"rank": cfg.rank, "role": cfg.role, "finished": finished,
            "started_ns": started_ns, "done": stack.done,
            "packets_sent": driver.sent, "packets_received": driver.received,
            "timer_lateness_sum_ns": stack.timer_lateness_sum,
            "cpu_s": process_cpu_s(), "cpus": process_cpus(),
            "stalls": stalls.summary() | ({} if turns is None else
                                          dict(zip(("agent_count", "agent_sum_ns", "agent_max_ns"), turns)))}


def samples(stack, driver):
    """The latest samples (bounded: `HostStack.timer_lateness`, `UdpDriver.rx_lag_ns`)."""
    return {"timer_lateness_ns": list(stack.timer_lateness), "rx_lag_ns": list(driver.rx_lag_ns)}


def main(argv=None):
    cfg, stopping = config_and_stop_flag(HostProcessConfig, argv)
    adopt_transport({"transport_entry": cfg.transport_entry})
    plan, agent = build_agent(cfg)
    if hasattr(agent, "pregenerate"):     # before the common start (the runner waits for us)
        agent.pregenerate(PREGENERATE_MAX_BYTES)
    if transport(cfg.transport).kernel:
        return run_kernel_tcp(cfg, agent, stopping)
    engine, engine_note = choose_engine(cfg.engine, transport=cfg.transport)
    stack = HostStack(cfg.rank, agent, cfg.transport, mtu=cfg.mtu, loss_bound=cfg.loss_bound,
                      droppable_fraction=cfg.droppable_fraction, link_rate_bps=cfg.link_rate_bps,
                      drop_order=cfg.drop_order, seed=cfg.seed, endpoints=engine,
                      settings=TransportSettings(**cfg.transport_settings), job=cfg.job)
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(tuple(cfg.bind))
    peers = {int(r): tuple(a) for r, a in cfg.peers.items()}
    log = None
    if engine == "native":
        driver = NativeUdpHost(stack, sock, peers, job=cfg.job, agent_reads=True, measure_lag=True,
                               control_first=cfg.host_queue == "priority")
        if cfg.packets_path:
            driver.record_packets(MAX_RECORDS)
    else:
        log = PacketLog(stack) if cfg.packets_path else None
        driver = UdpDriver(log or stack, sock, peers, ecn=True, measure_lag=True,
                           control_first=cfg.host_queue == "priority")

    clock = time.monotonic_ns
    stalls = Stalls()
    wait_for_start(cfg, stopping, delay_ns=cfg.start_delay_ns)
    started = clock()
    stack.start(started)
    deadline = started + int(cfg.deadline_s * 1e9)
    next_write = started + 1_000_000_000
    next_samples = started + SAMPLES_EVERY_NS
    reporter = Reporter(cfg, agent, stack)
    reported_done = False
    engine_status = {"engine": engine, "engine_note": engine_note}
    # Serve until told to stop: after our own work is done, peers may still need our
    # feedback (ACKs, bitmaps) to finish theirs. The runner stops every host together.
    while not stopping:
        driver.serve(min(next_write, deadline), stopping, leave=lambda: stack.done and not reported_done)
        now = clock()
        if now >= deadline:
            print(f"hostd rank {cfg.rank}: deadline of {cfg.deadline_s} s reached", file=sys.stderr)
            break
        if now >= next_write or (stack.done and not reported_done):
            reported_done = stack.done
            take_samples = now >= next_samples
            reporter.tick(status(cfg, stack, started, False, driver, stalls) | engine_status,
                          samples(stack, driver) if take_samples else None)
            stalls.add(stalls.writes, clock() - now)   # taking and serialising them
            next_write = now + 1_000_000_000
            next_samples = now + SAMPLES_EVERY_NS if take_samples else next_samples
    reporter.close(status(cfg, stack, started, True, driver, stalls) | engine_status, samples(stack, driver))
    records = log.records() if log is not None else driver.packet_records() if cfg.packets_path else None
    if records is not None:
        write_records(records, cfg.packets_path)
    save_results(cfg, stack.agent)
    return 0


def save_results(cfg, agent):
    """The reduced tensors and their zero-filled ranges, for verification (if asked)."""
    if cfg.results_path and cfg.role == "worker" and cfg.schedule is None:   # a schedule reduces nothing
        arrays = {}
        for (it, b), (buf, lost) in agent.results.items():
            arrays[f"r_{it}_{b}"] = buf
            arrays[f"l_{it}_{b}"] = np.asarray(lost, dtype=np.int64).reshape(-1, 2)
        np.savez(cfg.results_path, **arrays)


if __name__ == "__main__":
    profile = os.environ.get("DLCP_HOSTD_PROFILE")     # developer aid: cProfile one host
    if profile:
        import cProfile
        prof = cProfile.Profile()
        rc = prof.runcall(main)
        prof.dump_stats(f"{profile}.{os.getpid()}")
        sys.exit(rc)
    sys.exit(main())
