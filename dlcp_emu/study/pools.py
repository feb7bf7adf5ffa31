"""Where simulated runs of a comparison go side by side: `jobs` local processes
(`side_by_side`), or a Dask cluster (study/cluster.py). Either hands each run's summary to
the comparison's `record` as the run ends, so the run folder is the one a serial run writes."""
import concurrent.futures
import contextlib
import multiprocessing
import signal

from dlcp_emu import huge_pages


def check_memory(tasks, jobs, local_cluster=False):
    """ValueError naming --jobs (--cluster) if the largest runs' gradients, `jobs` of them held
    at once, would not fit in this machine's memory (each fits alone: the spec checks that)."""
    from dlcp_emu.experiment.spec_checks import gradient_memory_bytes, machine_memory_bytes
    held = sorted((gradient_memory_bytes(t.spec) for t in tasks), reverse=True)[:jobs]
    have = machine_memory_bytes()
    if sum(held) > have:
        flag, fix = (f"--cluster ({jobs} local processes)", "give fewer with --jobs N, or run "
                     "without --cluster") if local_cluster else (f"--jobs {jobs}", "lower --jobs")
        raise ValueError(f"{flag}: {len(held)} runs at once would hold {sum(held) / 2**30:,.1f} GiB of "
                         f"gradients, more than this machine's {have / 2**30:,.1f} GiB of memory; {fix}")


def side_by_side(tasks, jobs, run_dir, record, log):
    """The tasks simulated by `jobs` processes at once (spawned: a fork of a process whose
    libraries run threads may hang), each recorded as it ends, with a line of progress. On
    Ctrl-C the runs under way stop where they are (as one run alone does) and are kept; no
    other starts."""
    log(f"{len(tasks)} simulated runs, {min(jobs, len(tasks))} at a time")
    context = multiprocessing.get_context("spawn")
    stop = context.Event()
    pool = concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context, initializer=_pool_process,
                                                  initargs=(stop,))
    with huge_pages.for_children():   # the pool starts its processes with the first tasks
        futures = {pool.submit(_simulate_quietly, t.spec, t.preset, run_dir / t.folder): t for t in tasks}
    recorded = set()

    def take(future):
        task, s = futures[future], future.result()
        recorded.add(future)
        if s is not None:   # None: not started, after an interrupt
            log(f"  [{len(recorded)}/{len(tasks)}] {task.label} seed {task.spec.seed}: " + outcome(s))
            record(task, s)

    try:
        for future in concurrent.futures.as_completed(futures):
            take(future)
    except KeyboardInterrupt:
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)   # the runs under way end at the interrupt
        for future in futures:
            if future not in recorded and future.done() and not future.cancelled() and future.exception() is None:
                with contextlib.suppress(KeyboardInterrupt):   # each says it was interrupted
                    take(future)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


SIMULATE_LOG = "simulate.log"
_STOP = None   # in a pool's process: set once a run was interrupted, so that no other starts


def _pool_process(stop):
    """A pool process ignores Ctrl-C while idle (it would be taken down between runs)."""
    global _STOP
    _STOP = stop
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _simulate_quietly(spec, preset, run_dir):
    """One run in a pool's process, its progress in `<run>/simulate.log` (the terminal shows
    one line a run), or None if a run was interrupted before it started: Ctrl-C stops it
    where it is, and then the runs still queued (taken by a process as soon as it is free,
    before the runner knows of the interrupt) do not start."""
    from dlcp_emu.experiment.run import run
    from dlcp_emu.sim.run import SimBackend
    if _STOP.is_set():
        return None
    run_dir.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with open(run_dir / SIMULATE_LOG, "w") as f:
            s, _ = run(spec, SimBackend(), preset, run_dir, log=lambda m: print(m, file=f, flush=True))
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    if s.get("interrupted"):
        _STOP.set()
    return s


def outcome(s):
    if not s.get("completed"):
        return f"stopped: {s.get('stopped_because') or 'not completed'}"
    return (f"iteration {_ms(s.get('iteration_time_mean_s'))} ms, fct p99 {_ms(s.get('tensor_fct_p99_s'))} ms "
            f"({s.get('wall_s', 0):.1f} s)")


def _ms(v):
    return "-" if v is None else f"{v * 1e3:.1f}"
