"""`dlcp-emu whatif`: the NetAI'20 analysis of scaling on a fully used network."""
import json
import sys
from pathlib import Path

from dlcp_emu.commands.argtypes import number_at_least, output_dir


def add_parser(sub):
    from workloads import list_models
    p = sub.add_parser("whatif", help="scaling factor if the network were fully used (NetAI'20)")
    p.add_argument("--model", choices=list_models(), metavar="M",
                   help=f"model trace (one of: {', '.join(list_models())})")
    p.add_argument("--workers", type=number_at_least(1, int), metavar="N")
    p.add_argument("--bandwidth-gbps", type=number_at_least(1e-3), metavar="B")
    p.add_argument("--compression", type=number_at_least(1), default=1.0, metavar="C",
                   help="gradient compression ratio (>= 1; default 1)")
    p.add_argument("--sweep", action="store_true",
                   help="the paper's table: workers 16/32/64 x 1-100 Gbit/s x compression 1-100, "
                        "for resnet50, resnet101 and vgg16, with a plot")
    p.add_argument("--out", type=output_dir, default=Path("results/whatif"),
                   help="where --sweep writes its table and plot (default results/whatif)")
    p.add_argument("--sim", action="store_true",
                   help="also answer with the packet-level simulator (ring all-reduce over the "
                        "`reliable` transport on a star at the bandwidth)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_run, parser=p)


def _run(args):
    from dlcp_emu.study import whatif
    if args.sweep:
        return _sweep(args, whatif)
    missing = [flag for flag, v in (("--model", args.model), ("--workers", args.workers),
                                    ("--bandwidth-gbps", args.bandwidth_gbps)) if v is None]
    if missing:
        args.parser.error(f"give {', '.join(missing)} (or --sweep)")
    if args.sim:
        return _sim(args)
    r = whatif.whatif(args.model, args.workers, args.bandwidth_gbps, args.compression)
    if args.json:
        print(json.dumps(r.as_dict()))
    else:
        print(f"{r.model}, {r.workers} workers, {r.bandwidth_gbps:g} Gbit/s, compression {r.compression:g}: "
              f"scaling factor {r.scaling_factor:.3f}\n"
              f"  batch {r.batch_time_s * 1e3:.2f} ms, backward {r.backward_s * 1e3:.2f} ms, "
              f"overhead {r.overhead_s * 1e3:.2f} ms; {r.buckets} buckets, "
              f"{r.bytes_per_iteration / 1e6:.1f} MB; wire {r.network_s * 1e3:.2f} ms, "
              f"vector adds {r.vec_add_s * 1e3:.2f} ms")
    return 0


def _sweep(args, whatif):
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as e:   # the default folder, which argparse did not check
        print(f"dlcp-emu whatif: --out {args.out}: {e.strerror}", file=sys.stderr)
        return 2
    table = whatif.sweep()
    table.to_csv(args.out / "sweep.csv", index=False)
    plot = args.out / "scaling_vs_bandwidth.png"
    whatif.plot_sweep(table, plot)
    if args.json:
        print(table.to_json(orient="records"))
        return 0
    for model, g in table.groupby("model", sort=False):
        wide = g.pivot_table(index=["compression", "workers"], columns="bandwidth_gbps",
                             values="scaling_factor")
        wide.columns = [f"{b:g} Gb/s" for b in wide.columns]
        print(f"\n{model}: scaling factor (rows: compression, workers)")
        print(wide.round(3).to_string())
    print(f"\ntable: {args.out / 'sweep.csv'}\nplot:  {plot}")
    return 0


def _sim(args):
    import tempfile
    from dlcp_emu.study.whatif_sim import whatif_sim
    from dlcp_emu.experiment.spec import MAX_WORKERS
    if args.compression != 1:
        args.parser.error("--sim models no compression; leave --compression at 1")
    if args.workers > MAX_WORKERS:
        args.parser.error(f"--sim runs at most {MAX_WORKERS} workers (--workers), got {args.workers}")
    with tempfile.TemporaryDirectory() as tmp:
        r = whatif_sim(args.model, args.workers, args.bandwidth_gbps, tmp)
    if args.json:
        print(json.dumps(r))
    else:
        print(f"{r['model']}, {r['workers']} workers, {r['bandwidth_gbps']:g} Gbit/s:\n"
              f"  closed form (fully used network): scaling {r['closed_form_scaling_factor']:.3f}\n"
              f"  packet-level ({r['transport']} transport): scaling {r['simulated_scaling_factor']:.3f}, "
              f"iteration {r['simulated_iteration_time_s'] * 1e3:.1f} ms, "
              f"busiest link {r['simulated_link_utilization'] * 100:.0f}% used")
    return 0 if r["completed"] else 1
