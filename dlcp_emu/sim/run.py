"""The simulator as a backend of `experiment.run`: the same switch models, transports and
agents as the emulator, on the discrete-event network in virtual time.

    experiment.run.run(spec, SimBackend(), "dlcp", run_dir)
"""
import contextlib
import signal
import threading
import time

import pandas as pd

from dlcp_emu import huge_pages
from dlcp_emu.experiment.accuracy import training_of
from dlcp_emu.experiment.backend import Outcome, Setup
from dlcp_emu.experiment.run import prepare
from dlcp_emu.experiment.settings import compression_for, transport_settings
from dlcp_emu.experiment.topology import host_link_rate
from dlcp_emu.host.agent import Worker, make_worker
from dlcp_emu.host.prefetch import Prefetch
from dlcp_emu.host.schedule_agent import ScheduleAgent
from dlcp_emu.host.schedule_plan import SchedulePlan
from dlcp_emu.host.parameter_server import ParameterServer
from dlcp_emu.host.background import BACKGROUND_UDP_PORT, JOB as BACKGROUND_JOB, BackgroundEndpoint
from dlcp_emu.host.packet_log import PacketLog, packet_table
from dlcp_emu.host.stack import HostStack
from dlcp_emu.sim.core_hosts import CoreHosts
from dlcp_emu.sim.core_ring import CoreRingHosts
from dlcp_emu.sim.core_schedule import CoreScheduleAgent, CoreScheduleHosts
from dlcp_emu.experiment.engine import choose_engine, choose_ring_collectives, choose_schedule_agents
from dlcp_emu.experiment.jobs_run import job_setups
from dlcp_emu.sim.engines import make_network
from dlcp_emu.sim.hosts import TRAINING, SimHosts
from dlcp_emu.transport.registry import SIMULATION, TRANSPORTS

SLICE_EVENTS = 200_000
PROGRESS_EVERY_S = 2.0   # wall seconds between progress lines; the first and the last show


def sim_transport(spec, pipeline):
    """The transport a simulated run of this pipeline uses (ValueError for kernel TCP)."""
    transport = spec.transport_for(pipeline)
    backends = TRANSPORTS[transport].backends
    if SIMULATION not in backends:
        raise ValueError(f"transport.kind: {transport!r} runs in {' and '.join(backends)} only; the "
                         f"simulator runs {', '.join(n for n, t in TRANSPORTS.items() if SIMULATION in t.backends)}")
    return transport


HOSTS = ("auto", "core", "python")


class SimBackend:
    """The simulator, for `experiment.run`. hosts: where the hosts' endpoints run: "core"
    (compiled, inside the native network: Python per message), "python" (Python per packet;
    the oracle), or "auto" (the core when the network is native). The workers draw their
    synthetic gradients a bucket ahead on threads of their own while the core moves packets
    (host/prefetch.py). agents: where a schedule's agents, or a payload-free ring's collective
    steps, run: "core" (beside the endpoints in the core: no Python per message), "python"
    (the oracle) or "auto" (the core where it can: `experiment.engine.choose_schedule_agents`,
    `choose_ring_collectives`)."""

    name = "simulation"

    def __init__(self, hosts="auto", agents="auto"):
        if hosts not in HOSTS:
            raise ValueError(f"hosts must be one of {', '.join(HOSTS)}, got {hosts!r}")
        choose_schedule_agents(agents, endpoints_in_core=True, drop_order="magnitude")   # a bad name fails here
        self.hosts, self.agents = hosts, agents

    def transport(self, spec, pipeline):
        return sim_transport(spec, pipeline)

    def execute(self, setup, log):
        with Prefetch() as prefetch:
            return _simulate(setup, log, self.hosts, prefetch, self.agents)

    def summarize(self, setup, out, s):
        net, wall, cpu, thread_cpu = out.state
        s["engine"], s["engine_note"] = net.engine, net.engine_note
        s["events"] = net.loop.events
        s["wall_s"] = time.monotonic() - wall
        s["process_cpu_s"] = time.process_time() - cpu   # every thread's: the prefetch's draws too
        # Of wall_s, the time inside the compiled core (None: the Python engine has none); the
        # same split in the running thread's CPU time, which other work on the machine moves less.
        s["core_wall_s"] = net.loop.core_s if net.engine == "native" else None
        s["run_cpu_s"] = thread_cpu
        s["core_cpu_s"] = net.loop.core_cpu_s if net.engine == "native" else None
        s["memory_pages"] = huge_pages.pages()   # which moves the core's speed at scale by ~10%
        conservation = net.conservation()
        s["switch_conservation_ok"] = all(a == b for a, b in conservation.values())
        # The simulator's own speed on this run (NICs included, as `bench sim` counts).
        s["packet_hops"] = sum(taken for taken, _ in conservation.values())
        s["packet_hops_per_s"] = round(s["packet_hops"] / s["wall_s"]) if s["wall_s"] > 0 else None

    def close(self, setup, out, s):
        if "background" in s and TRANSPORTS[setup.spec.background["transport"]].kernel:
            s["background"]["model"] = "reliable transport standing in for kernel TCP"


def build(spec, pipeline, keep_results=False, hosts="auto", prefetch=None, agents="auto"):
    """(scaled topology, plan, network, hosts) of a run, nothing started: `experiment.run`'s
    set-up and this backend's network on it. hosts: as SimBackend's; prefetch: a
    host.prefetch.Prefetch the workers draw their next bucket's synthetic gradients on, ahead
    of need (None: when they begin it)."""
    setup = prepare(spec, SimBackend(hosts, agents), pipeline, keep_results=keep_results)
    net, sim_hosts = build_network(setup, hosts, prefetch, agents)
    return setup.topology, setup.plan, net, sim_hosts


def build_network(setup: Setup, hosts="auto", prefetch=None, agents="auto"):
    """(network, hosts) of a prepared run: the switches and the hosts' stacks on them."""
    spec, pipeline, topo = setup.spec, setup.pipeline, setup.topology
    jobs = job_setups(setup)
    # Drops are recorded with the packets, to say where each lost one went.
    net = make_network(topo, pipeline, spec.engine, seed=spec.seed, record_drops=spec.packet_records)
    in_core, why = min(_hosts_in_core(net, spec, hosts, job.transport) for job in jobs)   # all, or none
    if spec.payload == "sizes" and not in_core:
        raise ValueError(f"payload: 'sizes' (payload-free) runs with the hosts' endpoints in the native core; "
                         f"here {why}")
    net.engine_note += f"; {why}"
    agents_in_core = rings_in_core = False
    if any(isinstance(job.plan, SchedulePlan) for job in jobs):
        where, note = choose_schedule_agents(agents, endpoints_in_core=in_core,
                                             drop_order=spec.transport["drop_order"], jobs=len(jobs))
        agents_in_core = where == "core"
        net.engine_note += f"; {note}"
    elif not setup.placement.ps_ranks:   # data-parallel workers: their collectives' steps
        where, note = choose_ring_collectives(agents, endpoints_in_core=in_core, payload=spec.payload,
                                              drop_order=spec.transport["drop_order"], jobs=len(jobs))
        rings_in_core = where == "core"
        net.engine_note += f"; {note}" if in_core else ""   # with Python's endpoints nothing else can
    first = _stacks(setup, jobs[0], in_core, prefetch, agents_in_core)
    if agents_in_core:
        sim_hosts = CoreScheduleHosts(net, first, setup.placement.host_of_rank, packet_records=spec.packet_records)
    elif rings_in_core:
        sim_hosts = CoreRingHosts(net, first, setup.placement.host_of_rank, packet_records=spec.packet_records)
    elif in_core:
        sim_hosts = CoreHosts(net, first, setup.placement.host_of_rank, packet_records=spec.packet_records)
    else:
        sim_hosts = SimHosts(net, first, setup.placement.host_of_rank)
    sim_hosts.start_ns.update({jobs[0].wire_id: jobs[0].start_ns} if jobs[0].start_ns else {})
    for job in jobs[1:]:
        sim_hosts.add_training(job.wire_id, _stacks(setup, job, in_core, prefetch), job.placement.host_of_rank,
                               job.start_ns)
    sim_hosts.background = _background(setup, sim_hosts, "native" if in_core else "python") \
        if spec.background else {}
    return net, sim_hosts


def _stacks(setup, job, in_core, prefetch, agents_in_core=False):
    """{rank: HostStack} of one job: its agents over their transport's endpoints (a schedule's
    agents in the core with agents_in_core)."""
    spec, transport, topo = job.spec, job.transport, setup.topology
    placement, trace, plan = job.placement, job.trace, job.plan
    w, t = spec.workload, spec.transport
    stacks = {}
    compression = compression_for(spec)
    settings = transport_settings(spec)

    def rate(rank):
        return host_link_rate(topo, placement.host_of_rank[rank])

    for rank in placement.host_of_rank:
        if isinstance(plan, SchedulePlan):
            kind, program = ((CoreScheduleAgent, plan.programs.arrays(rank)) if agents_in_core
                             else (ScheduleAgent, plan.programs[rank]))
            agent = kind(rank, program, w["iterations"], payload=spec.payload, seed=spec.seed)
        elif rank in placement.ps_ranks:
            agent = ParameterServer(rank, range(placement.workers), placement.ps_ranks, plan, w["iterations"],
                                    compression=compression, seed=spec.seed)
        else:
            agent = make_worker(rank, placement.workers, plan, trace, w, spec.seed,
                                placement.ps_ranks, compression, rate(rank), spec.mtu,
                                keep_results=setup.keep_results, training=training_of(spec), payload=spec.payload)
            if prefetch is not None:
                agent.draw_ahead_on(prefetch)
        stack = HostStack(rank, agent, transport, mtu=spec.mtu, loss_bound=t["loss_bound"],
                          droppable_fraction=t["droppable_fraction"], link_rate_bps=rate(rank),
                          drop_order=t["drop_order"], seed=spec.seed,
                          endpoints="native" if in_core else "python", store=spec.payload == "values",
                          settings=settings, job=job.wire_id)
        stacks[rank] = PacketLog(stack) if spec.packet_records and not in_core else stack
    return stacks


def _hosts_in_core(net, spec, hosts, transport):
    """(whether the training endpoints run in the core, why) for build's `hosts`: the core
    runs them when the network is native and the transport has a native twin."""
    if hosts == "python":
        return False, "hosts' endpoints in Python (asked for)"
    if net.engine != "native":
        why = "hosts' endpoints in Python (the network is Python's)"
    else:
        engine, note = choose_engine(spec.engine, transport=transport)
        if engine == "native":
            return True, "hosts' endpoints in the core"
        why = f"hosts' endpoints in Python ({note})"
    if hosts == "core":
        raise ValueError(f"hosts: 'core' cannot run here: {why}")
    return False, why


def _background(setup, hosts, endpoints):
    """The run's background flows (`Setup.background`: the emulator's arrivals and sizes)
    on the `reliable` transport's endpoints. Over `reliable` they are what the emulator runs;
    for `tcp` they stand in for kernel TCP, marked as the switches see TCP (not DLCP, one
    flow hash per connection)."""
    spec, topo, by_src = setup.spec, setup.topology, setup.background
    names = topo.hosts()
    # Their bytes are zeros nobody reads: in the core, payload-free (the same packets).
    payload = "sizes" if endpoints == "native" else "values"
    endpoints = {i: BackgroundEndpoint(i, by_src[h], spec.mtu, host_link_rate(topo, h), endpoints=endpoints,
                                       payload=payload, settings=transport_settings(spec))
                 for i, h in enumerate(names)}
    hosts.add_job(BACKGROUND_JOB, endpoints, dict(enumerate(names)),
                  udp_port=None if TRANSPORTS[spec.background["transport"]].kernel else BACKGROUND_UDP_PORT)
    return endpoints


@contextlib.contextmanager
def _ctrl_c_between_slices():
    """A list that Ctrl-C (SIGINT) appends to while the block runs, instead of raising where
    the run happens to be; the handler there before is put back after. Where the handler is
    not Python's default (ignored, someone else's) or cannot be set (off the main thread),
    Ctrl-C does what it did."""
    asked = []
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield asked
        return
    previous = signal.signal(signal.SIGINT, lambda *_: asked.append(1))
    try:
        yield asked
    finally:
        signal.signal(signal.SIGINT, previous)


def _simulate(setup, log, hosts, prefetch, agents="auto"):
    spec = setup.spec
    net, hosts = build_network(setup, hosts, prefetch, agents)
    topo = setup.topology
    log(f"  engine: {net.engine} ({net.engine_note}); {huge_pages.note()}")
    wall, cpu, thread_cpu = time.monotonic(), time.process_time(), time.thread_time()
    samples = {name: {"ports": net.port_numbers(name), "samples": []} for name in topo.switches()}
    sample_ns = spec.scale.delay_ns(1_000_000)   # 1 ms of real-world time

    def sample():
        for name, q in samples.items():
            queued = net.queued_bytes(name)
            q["samples"].append((net.loop.now, *[queued[n] for n in q["ports"]]))
        if not hosts.done():
            net.loop.at(net.loop.now + sample_ns, sample)

    net.loop.at(0, sample)
    hosts.start()
    limit_ns = int(spec.time_limit_s * 1e9)
    # Run in slices of events so that progress can show (a line every PROGRESS_EVERY_S of
    # wall time: a slice takes ~0.4 s on the native engine, and a line each made a 1024-host
    # run print 780), and the time limit (virtual) is honoured. Ctrl-C stops the run between
    # two slices: raised inside one, it could leave a batch of the core's events half handed
    # to the hosts.
    t = 0
    interrupted = None
    shown = None   # (wall time, events) of the last progress line

    def progress():
        nonlocal shown
        its = min(_iterations_ended(s.agent) for s in hosts.all_stacks()
                  if isinstance(s.agent, (Worker, ScheduleAgent, CoreScheduleAgent)))
        shown = (time.monotonic(), net.loop.events)
        log(f"  virtual {spec.scale.seconds(t):8.3f} s  iterations {its}/{spec.workload['iterations']}  "
            f"events {shown[1]:,}  wall {shown[0] - wall:.1f} s")

    with _ctrl_c_between_slices() as asked:
        try:
            while not hosts.done() and net.loop.pending() and t < limit_ns and not asked:
                t = net.loop.run(until=limit_ns, max_events=SLICE_EVENTS)
                if shown is None or time.monotonic() - shown[0] >= PROGRESS_EVERY_S:
                    progress()
            if shown is not None and shown[1] != net.loop.events:
                progress()   # where the run ended
        except KeyboardInterrupt:   # where Ctrl-C is not ours to take (a thread's run)
            asked.append(1)
    thread_cpu = time.thread_time() - thread_cpu
    if asked:
        interrupted = "interrupted (Ctrl-C)"
    hosts.collect()
    if not hosts.done() and interrupted is None:
        interrupted = (f"time limit of {spec.time_limit_s:g} s (virtual) reached" if t >= limit_ns
                       else "no events left before the agents were done (stalled)")
    names = {job.wire_id: job.name for job in setup.jobs}
    records = [_records(rank, s) | ({"job": names[job]} if setup.jobs else {})
               for job, stacks in hosts.jobs.items() for rank, s in stacks.items()]
    frames = {"background": _background_table(topo, hosts, spec.scale),
              "packets": packet_table(hosts.packet_logs(), spec.scale, in_flight=hosts.in_flight_keys(),
                                      dropped=hosts.training_drops())}
    return Outcome(records, net.counters(), samples,
                   {"p99_lateness_us": 0.0, "fell_behind": False, "note": "virtual time: exact by construction"},
                   spec.scale.seconds(net.loop.now), interrupted, frames, state=(net, wall, cpu, thread_cpu),
                   handles={"hosts": hosts})


def _background_table(topo, hosts, scale):
    """Background flows as the emulator reports them: finished ones with their completion
    time, flows still under way at the end as `sending`."""
    names = topo.hosts()
    rows = [{"src": names[ep.index], "dst": names[dst], "bytes": n, "state": "done",
             "start_s": scale.seconds(start), "fct_s": scale.seconds(done - start)}
            for ep in hosts.background.values() for _, dst, n, start, done in ep.finished]
    rows += [{"src": names[ep.index], "dst": names[dst], "bytes": n, "state": "sending",
              "start_s": scale.seconds(start), "fct_s": None}
             for ep in hosts.background.values() for dst, n, start in ep.started.values()]
    return pd.DataFrame(rows, columns=["src", "dst", "bytes", "state", "start_s", "fct_s"])


def _iterations_ended(agent):
    if isinstance(agent, CoreScheduleAgent):
        return agent.iterations_ended()
    return sum(1 for r in agent.iteration_records if r.comm_end_ns >= 0)


def _records(rank, stack):
    a = stack.agent
    if isinstance(a, CoreScheduleAgent):
        return {"rank": rank, "started_ns": 0, **a.records()}
    out = {"rank": rank, "deliveries": stack.deliveries, "started_ns": 0}
    if isinstance(a, Worker):
        out["iterations"] = [r.__dict__ for r in a.iteration_records]
        out["tensors"] = [r.__dict__ for r in a.tensors]
        if a.training is not None:
            out["accuracy"] = a.training.evaluations
    elif isinstance(a, ScheduleAgent):
        out["iterations"] = [r.__dict__ for r in a.iteration_records]
        out["busy_ns"] = list(a.busy)
        out["messages_sent"] = [tuple(m.__dict__.values()) for m in a.sent]
        out["messages_received"] = [tuple(m.__dict__.values()) for m in a.received]
    return out
