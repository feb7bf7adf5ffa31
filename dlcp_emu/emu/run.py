"""The emulator as a backend of `experiment.run`: Mininet, our switches, one agent process per
host, real packets.

    experiment.run.run(spec, EmuBackend(), "dlcp", run_dir)

Every exit path (completion, time limit, Ctrl-C, SIGTERM, a crash) stops the agents and
switches, keeps what they measured so far, and cleans up what the run created.
"""
import json
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from dlcp_emu.emu import PROJECT_ROOT
from dlcp_emu.emu.capture import listing
from dlcp_emu.emu.host_process import write_start
from dlcp_emu.emu.job_fidelity import job_verdicts, plan_steps, worst_verdict
from dlcp_emu.emu.liveview import LiveView
from dlcp_emu.emu.net import EmulationRun
from dlcp_emu.emu.placement import split_cpus
from dlcp_emu.emu.cpu import cpu_use, machine_cpu_s
from dlcp_emu.emu.run_configs import background_config, host_config
from dlcp_emu.emu.streams import tail_text
from dlcp_emu.emu.run_records import (
    Progress, background_log, background_path, background_table, host_paths, queue_samples, read_host_records,
)
from dlcp_emu.experiment.engine import choose_engine
from dlcp_emu.experiment.fidelity import host_fidelity, judge, switch_fidelity
from dlcp_emu.experiment.backend import Outcome
from dlcp_emu.experiment.jobs_run import job_setups
from dlcp_emu.experiment.topology import host_frame_ns
from switch_models.pipeline import PipelineSpec

START_MARGIN_S = 0.2     # from the last process ready to the common start (they poll for it)
READY_TIMEOUT_S = 120.0  # for every host process to import numpy, load the trace and bind
POLL_S = 0.25
PROGRESS_EVERY_S = 3.0
LIVE_EVERY_S = 1.0       # the live view's refresh: the switches write their stats once a second
SWITCH_RT_PRIORITY = 10  # switches run as real-time tasks: their wake-ups are the schedule
# Host and background processes run ahead of the machine's other work (a build, a test
# suite): a nice-0 process beside them left the hosts' packets waiting milliseconds at times.
HOST_NICE = -10
# A switch's loop acts at most once per host-link frame time (wall clock; at most 200 us):
# one frame of a 10 Gbit/s link (1.2 us) in the real world at any scale. Acting per frame and
# departure cost 27 us of CPU a frame at byte scale 0.1 (wake-ups and timers on a VM), the
# switches 1.3 of the 2 cores; once a frame time, 7-8 us and 0.4 (datapath/config.py).
SWITCH_WAKE_FRAMES = 1.0
SWITCH_WAKE_MAX_NS = 200_000


class EmuBackend:
    """The emulator, for `experiment.run` (root; one emulation at a time on a machine).
    capture: {"ports": [switch port interfaces], "max_bytes": per file, or None}: pcaps of
    those ports (`emu.capture`), listed in the summary's `captures`. live: the switches'
    ports in the terminal while the run goes on (`liveview`; None: on a terminal, not in CI)."""

    name = "emulation"

    def __init__(self, capture=None, live=None):
        self.capture, self.live = capture, live

    def transport(self, spec, pipeline):
        if spec.payload != "values":
            raise ValueError(f"payload: {spec.payload!r} (payload-free) runs in the simulator only; the "
                             "emulator's hosts send real bytes (payload = \"values\")")
        if spec.dilation_auto:   # a run at the placeholder 1 would be wildly late, and say nothing
            raise ValueError("time_dilation \"auto\" is chosen before an emulation (study/dilation.py)")
        transport = spec.transport_for(pipeline)
        choose_engine(spec.engine, transport=transport)   # `native` and no twin: refused before anything starts
        return transport

    def execute(self, setup, log):
        return _emulate(setup, log, self.capture, self.live)

    def summarize(self, setup, out, s):
        _summarize(setup, out, s, self.capture)

    def close(self, setup, out, s):
        run = out.state.run
        (setup.run_dir / "switches.json").write_text(json.dumps(run.stats, indent=1, default=str))
        (setup.run_dir / "links.json").write_text(json.dumps(run.links, indent=1))


def _emulate(setup, log, capture, live):
    spec, pipeline, keep_results = setup.spec, setup.pipeline, setup.keep_results
    topo, placement, plan = setup.topology, setup.placement, setup.plan
    run_dir = setup.run_dir   # absolute: the run's processes start elsewhere (PROJECT_ROOT)
    view = LiveView(sys.stdout, live)
    log = view.wrap(log)
    procs, outs = {}, {}
    t_start = time.monotonic()
    cpu_start = machine_cpu_s()
    interrupted = None
    host_exits = {}   # rank -> how a host process ended when not by our SIGTERM or cleanly
    host_queue = PipelineSpec.parse(pipeline).host_queue   # the hosts' queues (`host_egress`)
    if capture:
        cap = capture.get("max_bytes")
        log(f"  capturing {len(capture['ports'])} switch port(s) both ways"
            + (f", at most {cap / 1e6:.1f} MB a file (the newest frames kept)" if cap else ""))
    frame_ns = host_frame_ns(topo, spec.mtu)
    switch_cpus, host_cpus = split_cpus()
    run = EmulationRun(topo, pipeline, seed=spec.seed, static_arp=True, run_dir=str(run_dir / "emu"),
                       switch_opts={"rt_priority": SWITCH_RT_PRIORITY, "engine": spec.engine, "cpu": switch_cpus,
                                    "wake_period_ns": switch_wake_period_ns(frame_ns)}, mtu=spec.mtu,
                       pace_hosts=True, pcap=set(capture["ports"]) if capture else False,
                       pcap_max_bytes=capture.get("max_bytes") if capture else None)
    start_at = None
    keys = process_keys(setup)
    with run:
        # Every host process starts together, once all are ready (hostproc.wait_for_start).
        start_file = run_dir / "start.json"
        start_file.unlink(missing_ok=True)
        ready = []
        for key, (job, rank) in keys.items():
            host = job.placement.host_of_rank[rank]
            paths = host_paths(run_dir, key)
            for p in paths.values():
                p.unlink(missing_ok=True)   # never read a previous run's records as this one's
            ready.append(run_dir / f"host-{key}.ready")
            ready[-1].unlink(missing_ok=True)
            cfg = host_config(job.spec, job.placement, topo, rank, job.transport, job.wire_id, job.start_ns,
                              host_queue=host_queue, ready_file=str(ready[-1]),
                              start_file=str(start_file),
                              deadline_s=spec.time_limit_s, out_path=str(paths["status"]),
                              records_path=str(paths["records"]),
                              samples_path=str(paths["samples"]),
                              packets_path=str(run_dir / f"packets-{key}") if spec.packet_records else None,
                              results_path=str(run_dir / f"tensors-{key}.npz") if keep_results else None,
                              cpus=host_cpus, nice=HOST_NICE)
            cfg_path = run_dir / f"host-{key}.config.json"
            cfg.write(cfg_path, indent=None)
            outs[key] = paths
            procs[key] = run.popen(host, [sys.executable, "-m", cfg.program, "--config", str(cfg_path)],
                                    output=paths["log"], cwd=PROJECT_ROOT)
        bg_outs, bg_ready, bg_procs = _start_background(setup, run, start_file, log, host_cpus)
        try:
            start_at, interrupted = _start_together(
                ready + bg_ready, start_file,
                {**{f"host rank {r}": p for r, p in procs.items()},
                 **{f"background on {h}": p for h, p in bg_procs.items()}})
            if interrupted is None:
                show = (lambda title: view.update(run.switch_stats(), title)) if view.enabled else None
                interrupted = _wait(spec, keys, procs, outs, start_at / 1e9, log, show,
                                    switch_exits=run.switch_exits,
                                    background_exits=lambda: _failed(bg_procs, run_dir))
        except KeyboardInterrupt:
            interrupted = "interrupted (Ctrl-C)"
        finally:
            for p in procs.values():
                if p.poll() is None:
                    p.terminate()
            for rank, p in procs.items():
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
                if p.returncode not in (0, -15):
                    host_exits[rank] = {"returncode": p.returncode,
                                        "stderr_tail": tail_text(outs[rank]["log"])}
                    log(f"  host rank {rank} exited {p.returncode}: {host_exits[rank]['stderr_tail'][-500:]}")
    duration = time.monotonic() - t_start
    cpu_end = machine_cpu_s()
    cpu = {k: cpu_end[k] - cpu_start[k] for k in cpu_start} if cpu_start and cpu_end else {}
    records, torn = read_host_records(outs) if not setup.jobs else ([], {})
    if setup.jobs:   # each record its job and its rank in the job, as the simulator's
        for key, paths in outs.items():
            got, problems = read_host_records({key: paths})
            records += [{**rec, "rank": keys[key][1], "job": keys[key][0].name} for rec in got]
            torn.update(problems)
    starts = [r["started_ns"] for r in records if r.get("started_ns")]
    t0 = min(starts) if starts else 0
    samples, queue_note = queue_samples(run.stats)
    counters = {name: st["model"] for name, st in run.stats.items() if st and "model" in st}
    fidelity = switch_fidelity(run.stats)
    # CPU time the hypervisor gave to others while the run went on, as a share of the
    # machine's: no process of the run can keep its schedule through it (6.9 s went within
    # one hour here, and a test run in that hour saw its switches fall behind).
    fidelity.update(cpu_use(records, run.stats, bg_outs.values(), cpu.get("busy"), cpu.get("steal"), duration))
    fidelity["switch_wake_period_us"] = switch_wake_period_ns(frame_ns) / 1e3
    fidelity["cpus"] = {"switches": switch_cpus, "hosts": host_cpus}   # emu/placement.py
    fidelity.update(host_fidelity(records, {j.name: j.plan.compute_ns for j in setup.jobs} if setup.jobs
                                  else plan.compute_ns, frame_ns))
    # How long after the common start the last host began (its wake-up from a sleep).
    fidelity["host_start_late_ms"] = (max(starts) - start_at) / 1e6 if starts and start_at else None
    frames = {"background": background_table(bg_outs, spec.scale), "packets": _packets(run_dir, outs, spec.scale, t0,
                                                                                  keys if setup.jobs else None)}
    state = SimpleNamespace(run=run, log=log, frame_ns=frame_ns, records=records, torn=torn,
                            queue_note=queue_note, host_exits=host_exits)
    return Outcome(records, counters, samples, fidelity, duration, interrupted, frames, t0_ns=t0, state=state)


def _summarize(setup, out, s, capture):
    """The emulator's own figures: the fidelity verdict, the data planes, every link's balance."""
    spec, placement, plan = setup.spec, setup.placement, setup.plan
    kept = out.state
    run, records, fidelity, log = kept.run, kept.records, out.fidelity, kept.log
    if setup.jobs:   # each job by its own plan and hosts; the run by its worst job
        fidelity["jobs"] = job_verdicts(setup.jobs, records, switch_fidelity(run.stats), frame_ns=kept.frame_ns,
                                        dilation=spec.time_dilation, tolerance=spec.fidelity_tolerance)
        fidelity.update(worst_verdict(fidelity["jobs"]))
    else:
        fidelity.update(judge(fidelity, frame_ns=kept.frame_ns, compute_share=s["scaling_factor"],
                              iteration_s=s["iteration_time_mean_s"], dilation=spec.time_dilation,
                              tolerance=spec.fidelity_tolerance, steps=plan_steps(spec, placement, plan)))
    s["engine"] = spec.engine
    s["data_planes"] = data_planes(records, run.stats)
    s["switch_conservation_ok"] = all(st.get("conservation", {}).get("ok", False)
                                      for st in run.stats.values() if st)
    # Packets the hosts' own egress queues dropped: lost before any switch saw them.
    s["host_queue_drops"] = run.host_drops
    # Every link, both ways: sent at one end = received at the other + lost with a reason.
    checked = run.links or {}
    s["links_ok"] = checked.get("ok")
    s["link_frames"] = checked.get("frames")
    s["links_unbalanced"] = checked.get("unbalanced")
    s["network_drained"] = run.drained
    # Frames a host's kernel sent after the network went quiet at stop (late TCP
    # retransmissions): dropped at its muted egress, counted, outside the links' balance.
    s["host_frames_after_stop"] = run.host_muted
    if capture:
        s["captures"] = listing(run.stats, setup.run_dir)
    # What was not as written: a host's records stream with a torn last line (a crash) or
    # lines that are not records; queue samples kept as the largest of every few (a long
    # run), or a torn last row.
    if kept.torn:
        s["records_torn"] = kept.torn
        for rank, p in kept.torn.items():
            log(f"  records of rank {rank}: ignored a torn last line of {p['torn_bytes']} bytes "
                f"and {p['bad_lines']} lines that are not records")
    if kept.queue_note:
        s["queue_samples"] = kept.queue_note
    if kept.host_exits:
        s["host_exits"] = kept.host_exits


def data_planes(records, stats):
    """Which data plane each host process and switch ran, and why: {"hosts": {rank (several
    jobs: "<job>-<rank>"): [engine, why]}, "switches": {name: [model engine, loop]}}."""
    key = lambda r: f"{r['job']}-{r['rank']}" if r.get("job") else r["rank"]
    return {"hosts": {key(r): [r.get("engine"), r.get("engine_note")] for r in records},
            "switches": {name: [st.get("engine"), st.get("loop")] for name, st in stats.items() if st}}


def _start_together(ready_files, start_file, procs):
    """Wait until every host and background process is ready, then give them the common
    start: (start time in CLOCK_MONOTONIC ns, None), or (None, why not). procs: {label:
    process}, a process that ends before it is ready named by its label."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not all(f.exists() for f in ready_files):
        dead = [r for r, p in procs.items() if p.poll() is not None]
        if dead:
            return None, f"{', '.join(dead)} exited before the start"
        if time.monotonic() > deadline:
            return None, f"host processes not ready after {READY_TIMEOUT_S:g} s"
        time.sleep(0.01)
    start_at = time.monotonic_ns() + int(START_MARGIN_S * 1e9)
    write_start(start_file, start_at)
    return start_at, None


def _wait(spec, keys, procs, outs, t_start, log, show=None, switch_exits=dict,
          background_exits=dict):
    """Until every agent is done (None), or why not. keys: {process key: (job, rank)}.
    show(title): refresh the live view;
    switch_exits(): {name: how it ended} of switch processes that ended (each has failed: a
    network with a dead switch only times out); background_exits(): {host: how it ended} of
    background processes that failed (the load would silently drop)."""
    last = (None, 0.0)
    shown = -LIVE_EVERY_S
    tracker = Progress(outs)
    while True:
        time.sleep(POLL_S)
        # Who has exited is taken before the status files are read: an agent writes `done`
        # before it exits, so one that exits between the two is seen done, not dead.
        exited = [r for r, p in procs.items() if p.poll() is not None]
        tracker.poll()
        status = [st for st in tracker.status.values() if st]
        done = sum(bool(st.get("done")) for st in status)
        packets = sum(st.get("packets_sent", 0) for st in status)
        elapsed = time.monotonic() - t_start
        state = (iterations_done(keys, tracker.iterations), done)
        # A line when an iteration or an agent finishes, else every few seconds.
        line = (f"  {elapsed:6.1f} s  iterations {state[0]} (slowest worker), "
                    f"agents done {done}/{len(outs)}, packets sent {packets:,}")
        if state != last[0] or elapsed - last[1] >= PROGRESS_EVERY_S:
            log(line)
            last = (state, elapsed)
        if show is not None and elapsed - shown >= LIVE_EVERY_S:
            show(line.strip())
            shown = elapsed
        if done == len(outs):
            return None
        dead = [r for r in exited if not (tracker.status.get(r) or {}).get("done")]
        if dead:
            return f"agent(s) {dead} exited before finishing"
        for kind, exits, label in (("switch", switch_exits(), str),
                                   ("background", background_exits(), lambda h: f"on {h}")):
            if exits:
                return f"{kind} process(es) " + ", ".join(
                    f"{label(name)} (return code {e['returncode']}, last stderr line: "
                    f"{(e['stderr_tail'].strip().splitlines() or ['none'])[-1]})"
                    for name, e in sorted(exits.items())) + " ended during the run"
        if elapsed > spec.time_limit_s:
            return f"time limit of {spec.time_limit_s:g} s reached"


def process_keys(setup):
    """{key: (job, rank)}: a host process a rank, keyed by its rank (one job) or job-rank
    (several: ranks repeat)."""
    return {(f"{job.name}-{rank}" if setup.jobs else rank): (job, rank)
            for job in job_setups(setup) for rank in job.placement.host_of_rank}


def iterations_done(keys, counts):
    """The progress line's iterations: each job's slowest worker against the job's
    iterations ("2/4"; several jobs: "resnet 2/4, llm 1/3"). keys: {process key: (job,
    rank)}; counts: {process key: iterations communicated}."""
    jobs = {}
    for key, (job, rank) in keys.items():
        if rank not in job.placement.ps_ranks:
            jobs.setdefault(job.name, (job, []))[1].append(counts.get(key, 0))
    return ", ".join(f"{name + ' ' if name else ''}{min(n)}/{job.spec.workload['iterations']}"
                     for name, (job, n) in jobs.items())


def switch_wake_period_ns(frame_ns):
    """How often at most a switch's loop acts, given a host link's frame time (ns)."""
    return int(min(SWITCH_WAKE_FRAMES * frame_ns, SWITCH_WAKE_MAX_NS))


def _start_background(setup, run, start_file, log, cpus):
    """The run's background flows (`Setup.background`), one process per host, over
    the `reliable` packet transport (`background`, what the simulator runs too) or kernel
    TCP (`background_tcp`, sink and sources), on `cpus`. Returns ({host: records path},
    [ready files], {host: process})."""
    spec, topo, run_dir, by_src = setup.spec, setup.topology, setup.run_dir, setup.background
    if not spec.background:
        return {}, [], {}
    hosts = topo.hosts()
    bg = spec.background
    log(f"  background: {sum(map(len, by_src.values()))} {bg['distribution']} flows at load "
        f"{bg['load']:g} over {'kernel TCP' if bg['transport'] == 'tcp' else 'the reliable transport'}")
    outs, ready, procs = {}, [], {}
    for h in hosts:
        out = background_path(run_dir, h)
        out.unlink(missing_ok=True)
        ready.append(run_dir / f"background-{h}.ready")
        ready[-1].unlink(missing_ok=True)
        cfg = background_config(spec, topo, h, by_src[h], PipelineSpec.parse(setup.pipeline).host_queue,
                                ready_file=str(ready[-1]),
                                start_file=str(start_file), deadline_s=spec.time_limit_s + START_MARGIN_S,
                                out_path=str(out), cpus=cpus, nice=HOST_NICE)
        path = run_dir / f"background-{h}.config.json"
        cfg.write(path, indent=None)
        outs[h] = out
        procs[h] = run.popen(h, [sys.executable, "-m", cfg.program, "--config", str(path)],
                             output=background_log(run_dir, h), cwd=PROJECT_ROOT)
    return outs, ready, procs


def _failed(procs, run_dir):
    """{host: {"returncode", "stderr_tail"}} of the background processes that ended with an
    error."""
    return {h: {"returncode": p.returncode, "stderr_tail": tail_text(background_log(run_dir, h))}
            for h, p in procs.items() if p.poll() not in (None, 0)}


def _packets(run_dir, outs, scale, t0, keys=None):
    """The hosts' per-packet logs joined into one table with each packet's fate. keys:
    {process key: (job, rank)} of a run of [[jobs]]: each job's packets joined on their own
    (ranks repeat across jobs), in a `job` column."""
    import pandas as pd
    from dlcp_emu.host.packet_log import packet_table, read_records, record_files
    logs = {}
    for key in outs:
        base = run_dir / f"packets-{key}"
        records = read_records(base)
        if records is not None:
            logs.setdefault(keys[key][0].name if keys else None, []).append(records)
        for path in record_files(base).values():
            Path(path).unlink(missing_ok=True)
    if not keys:
        return packet_table(logs.get(None, []), scale, t0)
    parts = [packet_table(part, scale, t0).assign(job=name) for name, part in logs.items()]
    return pd.concat(parts, ignore_index=True) if parts else packet_table([], scale, t0).assign(job=None)
