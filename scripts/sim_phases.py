"""Where a simulated run's time goes, phase by phase, in wall and CPU seconds (this process's
CPU, which other work on a loaded machine moves less than the wall clock), and the peak
memory by the end of each phase (which phase raised it): Python's start-up
and imports, loading the spec, building the network and hosts, the run (inside the compiled
core, and the Python called per message), and writing the results (tables, parquet, summary).

    .venv/bin/python scripts/sim_phases.py SPEC [--preset NAME] [--profile OUT.prof]

--profile also writes a cProfile of the whole run (CPU time), for `python -m pstats`.
"""
from dlcp_emu import huge_pages

huge_pages.reexec()   # as the command line does (GLIBC_TUNABLES=glibc.malloc.hugetlb=0: without)

import time  # noqa: E402

T0_WALL, T0_CPU = time.perf_counter(), time.process_time()

import argparse  # noqa: E402
import cProfile  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402


def _clock():
    return time.perf_counter(), time.process_time()


def _peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Phases:
    def __init__(self):
        self.rows = []

    def add(self, name, since):
        wall, cpu = _clock()
        self.rows.append((name, wall - since[0], cpu - since[1], _peak_mb()))
        return wall, cpu

    def timed(self, module, name, label):
        """Wrap module.name so that each call's time is added as `label`."""
        fn = getattr(module, name)

        def wrapper(*a, **k):
            since = _clock()
            try:
                return fn(*a, **k)
            finally:
                self.add(label, since)
        setattr(module, name, wrapper)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("spec", type=Path)
    ap.add_argument("--preset", default=None)
    ap.add_argument("--profile", type=Path, default=None)
    args = ap.parse_args()
    # Python itself before this line: the interpreter's start-up (about 20 ms here) is not seen.
    phases = Phases()
    since = _clock()
    import dlcp_emu
    from dlcp_emu.experiment import run as experiment_run
    from dlcp_emu.sim import run as sim_run
    since = phases.add("imports", (T0_WALL, T0_CPU))
    spec = dlcp_emu.load_spec(args.spec)
    since = phases.add("load spec", since)
    phases.timed(experiment_run, "prepare", "prepare (spec, schedule, plan)")
    phases.timed(sim_run, "build_network", "build network and hosts")
    phases.timed(sim_run.SimBackend, "execute", "execute (build and run)")
    for name in ("tables", "message_table", "add_schedule_results"):
        phases.timed(experiment_run, name, f"results: {name}")
    phases.timed(experiment_run, "finish", "write results")
    # As `dlcp-emu simulate`: the preset asked for, else the spec's [switch].
    pipeline = args.preset or (spec.switch["preset"] if set(spec.switch) == {"preset"} else spec.switch)
    prof = cProfile.Profile(time.process_time) if args.profile else None
    with tempfile.TemporaryDirectory() as root:
        if prof:
            prof.enable()
        began = _clock()
        s, _ = experiment_run.run(spec, sim_run.SimBackend(), pipeline, Path(root) / "run",
                                  log=lambda m: None)
        total = phases.add("experiment.run", began)
        if prof:
            prof.disable()
            prof.dump_stats(args.profile)
    print(f"{args.spec}: {s.get('events', 0):,} events, {s.get('packet_hops', 0):,} packet-hops, "
          f"mean iteration {s['iteration_time_mean_s'] * 1e3:.3f} ms; {huge_pages.note()}")
    print(f"{'phase':38s} {'wall s':>9s} {'CPU s':>9s} {'peak MB':>9s}")
    for name, wall, cpu, peak in phases.rows:
        if name != "experiment.run":
            print(f"{name:38s} {wall:9.2f} {cpu:9.2f} {peak:9.0f}")
    run_cpu, core_cpu = s.get("run_cpu_s"), s.get("core_cpu_s")
    print(f"{'run: inside the core':38s} {s['core_wall_s'] or 0:9.2f} {core_cpu or 0:9.2f}")
    print(f"{'run: Python (agents, per message)':38s} {s['wall_s'] - (s['core_wall_s'] or 0):9.2f} "
          f"{(run_cpu or 0) - (core_cpu or 0):9.2f}")
    rest = total[0] - began[0]
    print(f"{'whole command (but interpreter start)':38s} {total[0] - T0_WALL:9.2f} {total[1] - T0_CPU:9.2f}")
    print(f"(experiment.run {rest:.2f} s wall; peak memory {_peak_mb():.0f} MB)")
    json.dump({"phases": phases.rows, "summary_keys": {k: s.get(k) for k in (
        "wall_s", "core_wall_s", "run_cpu_s", "core_cpu_s", "process_cpu_s", "events", "packet_hops",
        "memory_pages")}},
        sys.stderr)
    print(file=sys.stderr)


if __name__ == "__main__":
    main()
