"""How long one iteration's schedule takes to build, check and run on the ideal network, for
LLaMA-7B with tp 8 on 64 and 1024 GPUs (docs/schedules.md keeps the figures).

    .venv/bin/python scripts/bench_schedules.py [--ranks 64 1024] [--micro-batches 8]
"""
import argparse
import time

from workloads.llm import ZOO, Parallelism, llm_schedule
from workloads.schedule import ideal_iteration, validate


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[64, 1024])
    ap.add_argument("--micro-batches", type=int, default=8)
    ap.add_argument("--ideal-up-to", type=int, default=64,
                    help="run the (pure Python) ideal evaluator up to this many ranks")
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


if __name__ == "__main__":
    main()
