"""How long one iteration's schedule takes to build, check and run on the ideal network, for
LLaMA-7B with tp 8 on 64 and 1024 GPUs, and how long a run's plan (every message of every
rank) takes to make for examples/llama7b-1024.toml (docs/schedules.md keeps the figures).

    .venv/bin/python scripts/bench_schedules.py [--ranks 64 1024] [--micro-batches 8] [--plan SPEC]
"""
import argparse
import resource
import time
from pathlib import Path

from workloads.llm import ZOO, Parallelism, llm_schedule
from workloads.schedule import ideal_iteration, validate


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[64, 1024])
    ap.add_argument("--micro-batches", type=int, default=8)
    ap.add_argument("--ideal-up-to", type=int, default=64,
                    help="run the (pure Python) ideal evaluator up to this many ranks")
    ap.add_argument("--plan", default=str(Path(__file__).resolve().parent.parent / "examples" / "llama7b-1024.toml"),
                    help="a schedule spec whose run's plan to make (the set-up before the run); '' for none")
    args = ap.parse_args()
    for n in args.ranks:
        par = Parallelism(dp=n // 8, tp=8, micro_batches=args.micro_batches, seq_len=2048)
        t0 = time.perf_counter()
        s = llm_schedule(ZOO["llama-7b"], par)
        t1 = time.perf_counter()
        validate(s)
        t2 = time.perf_counter()
        line = (f"llama-7b tp 8 dp {n // 8} ({n} GPUs, {args.micro_batches} micro-batches): "
                f"{s.n_ops:,} ops, build {t1 - t0:.2f} s, validate {t2 - t1:.2f} s")
        if n <= args.ideal_up_to:
            res = ideal_iteration(s)
            line += (f", ideal run {time.perf_counter() - t2:.2f} s "
                     f"(iteration {res.iteration_us / 1e3:.1f} ms with free communication)")
        print(line, flush=True)
    if args.plan:
        plan_line(args.plan)


def plan_line(path):
    from dlcp_emu.experiment.run import prepare
    from dlcp_emu.experiment.spec import load_spec
    from dlcp_emu.sim.run import SimBackend

    spec = load_spec(path)
    t0 = time.process_time()
    plan = prepare(spec, SimBackend(), spec.switch.get("preset", "dlcp")).plan
    cpu = time.process_time() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    print(f"{spec.name} plan: {plan.n_messages:,} messages of {plan.n_ranks} ranks, {cpu:.1f} CPU-s "
          f"(the schedule, its collectives' steps, the columns), peak {peak:.1f} GB", flush=True)


if __name__ == "__main__":
    main()
