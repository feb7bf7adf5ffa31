"""`dlcp-emu run`, `simulate`, `compare`, `emulate`: experiments from a spec."""
import argparse
import os
import sys
from pathlib import Path

from switch_models import preset_names

from dlcp_emu.commands.argtypes import (
    cluster_address, field_values, name, name_list, number_at_least, output_dir, positive_int,
)
from dlcp_emu import study
from dlcp_emu.emu.capture import DEFAULT_BUDGET_MB

DEFAULT_SPEC = Path(__file__).resolve().parent.parent.parent / "examples" / "default.toml"
DEFAULT_PRESETS = ",".join(study.DEFAULT_PRESETS)


def add_parser(sub):
    r = sub.add_parser("run", help="emulate one spec on Mininet (root)")
    _common(r)
    r.add_argument("--preset", type=name, help="switch preset (default: the spec's [switch])")
    r.add_argument("--pcap", nargs="?", const="all", metavar="PORTS",
                   help="capture switch ports into pcaps (both ways), listed in the results: "
                        "every port, or PORTS: comma-separated switches and ports, e.g. "
                        "l1,s1-eth2 (Wireshark dissects them: `dlcp-emu wireshark --install`)")
    r.add_argument("--pcap-max-mb", type=number_at_least(0, lo_open=True),
                   default=DEFAULT_BUDGET_MB, metavar="MB",
                   help=f"disk the captures of the run may take in all, split evenly over the "
                        f"files, each keeping its newest frames (default {DEFAULT_BUDGET_MB:g})")
    _live(r)
    r.set_defaults(func=_run, backend="emu")

    s = sub.add_parser("simulate", help="run one spec in virtual time (same models)")
    _common(s)
    s.add_argument("--preset", type=name, help="switch preset (default: the spec's [switch])")
    _engine(s)
    s.set_defaults(func=_run, backend="sim")

    c = sub.add_parser("compare", help="run one spec under several presets and print a table")
    _common(c)
    c.add_argument("--presets", type=name_list,
                   help=f"comma-separated presets (default: the spec's [variants] if it has any, "
                        f"else {DEFAULT_PRESETS}; known: {', '.join(preset_names())})")
    c.add_argument("--seeds", type=positive_int, default=1, help="runs per preset with seeds seed..seed+N-1")
    c.add_argument("--backend", choices=("emu", "sim"), default="emu",
                   help="emu: Mininet, real packets (root); sim: virtual time")
    c.add_argument("--vary", type=field_values, metavar="FIELD=V1,V2,...", action="append",
                   help="also sweep a spec field, e.g. compression.mode=none,fixed,dc2 or "
                        "background.load=0.1,0.4 (repeat for several: every combination runs)")
    c.add_argument("--jobs", type=positive_int, default=1, metavar="N",
                   help="simulated runs side by side (--backend sim), each in a process of its own "
                        "(a core and the memory of one run each); the same figures as one at a time")
    c.add_argument("--cluster", nargs="?", const="local", metavar="ADDRESS", type=cluster_address,
                   help="simulated runs (--backend sim) on a Dask cluster: a local one of --jobs "
                        "processes (a process a core by default), or the running scheduler at ADDRESS "
                        "(tcp://HOST:PORT); the same run folder as one at a time, a run that fails "
                        "there is reported with its error and the others kept (docs/cluster.md)")
    _engine(c)
    _live(c)
    c.set_defaults(func=_compare)

    e = sub.add_parser("emulate", help="the default experiment (what `sudo make emulate` runs)")
    e.add_argument("--results", type=output_dir, default=Path("results"))
    _no_report(e)
    _live(e)
    e.set_defaults(func=_emulate)


def _live(p):
    p.add_argument("--live", action=argparse.BooleanOptionalAction, default=None,
                   help="while an emulation runs, show each switch port's utilisation, queue and "
                        "drops by reason, refreshed every second (default: on when the output is "
                        "a terminal and CI is not set)")


def _no_report(p):
    p.add_argument("--no-report", action="store_true",
                   help="draw no plots and no report.html at the end (`dlcp-emu report RUN` draws them later)")


def _common(p):
    _no_report(p)
    p.add_argument("spec", type=Path, help="experiment spec (TOML); see examples/")
    p.add_argument("--results", type=output_dir, default=Path("results"),
                   help="results root (default results/)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--dry-run", action="store_true",
                   help="check the spec, its trace and the flags, say what would run, run nothing")


def _engine(p):
    from dlcp_emu.experiment.spec import ENGINES
    p.add_argument("--engine", choices=ENGINES,
                   help="the compiled core or the Python models (default: the spec's `engine`; auto: "
                        "native unless the pipeline has a Python-only stage). Simulated: the whole "
                        "network; emulated: the switches' models and the hosts' data planes")


def _with_engine(args, spec):
    """The spec with --engine laid over it, or None after saying why not."""
    engine = getattr(args, "engine", None)
    if engine is None:
        return spec
    return spec.with_field("engine", engine)


def _load(path):
    from dlcp_emu.experiment.spec import SpecError, load_spec
    try:
        return load_spec(path)
    except SpecError as e:
        print(f"dlcp-emu: {e}", file=sys.stderr)
        return None


def _need_root(backend, dry_run=False):
    if backend == "emu" and not dry_run and os.geteuid() != 0:
        print("dlcp-emu: emulation needs root (Mininet, namespaces, AF_PACKET): run with sudo, "
              "or use `simulate` / `compare --backend sim`", file=sys.stderr)
        return True
    return False


def _check_presets(names):
    bad = [p for p in names if p not in preset_names()]
    if bad:
        print(f"dlcp-emu: unknown preset(s) {', '.join(map(repr, bad))}; "
              f"known: {', '.join(preset_names())}", file=sys.stderr)
        return True
    return False


def _run(args):
    spec = _load(args.spec)
    spec = spec and _with_engine(args, spec)
    if spec is None:
        return 2
    options = _emu_options(args, spec)
    if options is None or _need_root(args.backend, args.dry_run):
        return 2
    preset = args.preset or spec.switch.get("preset", "custom")
    if args.preset and _check_presets([preset]):
        return 2
    return _finish(args, spec, [preset] if args.preset or set(spec.switch) == {"preset"} else [spec.switch], 1,
                   report=not args.no_report, emu_options=options)


def _emu_options(args, spec):
    """EmuBackend's options from the flags, checked against the spec (None: refused)."""
    options = {"live": getattr(args, "live", None)}
    if getattr(args, "pcap", None) is not None:
        from dlcp_emu.emu.capture import CaptureError, bytes_per_file, select_ports
        from dlcp_emu.experiment.topology import scaled_topology
        try:
            ports = select_ports(scaled_topology(spec), args.pcap)
            options["capture"] = {"ports": ports, "max_bytes": bytes_per_file(args.pcap_max_mb, ports)}
        except CaptureError as e:
            print(f"dlcp-emu: {e}", file=sys.stderr)
            return None
    return options


def _compare(args):
    from dlcp_emu.study.compare import check_jobs
    try:
        check_jobs(args.jobs, args.backend, args.cluster)   # before the need for root: the flag is the problem
    except (RuntimeError, ValueError) as e:
        print(f"dlcp-emu: {e}", file=sys.stderr)
        return 2
    spec = _load(args.spec)
    spec = spec and _with_engine(args, spec)
    if spec is None or _need_root(args.backend, args.dry_run):
        return 2
    if args.presets is None and spec.variants:   # the spec's [variants]
        return _finish(args, spec, None, args.seeds, report=not args.no_report, vary=args.vary,
                       emu_options=_emu_options(args, spec))
    presets = args.presets if args.presets is not None else name_list(DEFAULT_PRESETS)
    if _check_presets(presets):
        return 2
    return _finish(args, spec, presets, args.seeds, report=not args.no_report, vary=args.vary,
                   emu_options=_emu_options(args, spec))


def _finish(args, spec, presets, seeds, report=False, vary=None, emu_options=None):
    from dlcp_emu.study import compare
    if getattr(args, "dry_run", False):
        try:
            lines = compare.dry_run(spec, presets, seeds, args.backend, vary, jobs=getattr(args, "jobs", 1))
        except (RuntimeError, ValueError) as e:
            print(f"dlcp-emu: {e}", file=sys.stderr)
            return 2
        capture = (emu_options or {}).get("capture")
        if capture:
            lines.append(f"  captures: {len(capture['ports'])} switch port(s) both ways, at most "
                         f"{capture['max_bytes'] / 1e6:.1f} MB a file: {', '.join(capture['ports'])}")
        print("\n".join(lines))
        return 0
    from dlcp_emu import api
    try:
        result = api.compare(spec, presets, seeds=seeds, backend=args.backend, root=args.results,
                             log=lambda m: print(m, flush=True), vary=vary, emu_options=emu_options,
                             jobs=getattr(args, "jobs", 1), cluster=getattr(args, "cluster", None))
    except (RuntimeError, ValueError) as e:   # set-up problems (a SpecError too): say what
        print(f"dlcp-emu: {e}", file=sys.stderr)
        return 2
    run_dir, summary = result.path, result.summary
    if args.json:
        compare.print_json(summary)
    else:
        print()
        print(compare.table(summary))
        captures = [c for s in summary["presets"].values() for c in s.get("captures", ())]
        if captures:
            from dlcp_emu.emu.capture import describe
            print(f"\ncaptures ({len(captures)} files; Wireshark: `dlcp-emu wireshark --install`):")
            print("\n".join(describe(captures, run_dir)))
        for f in summary.get("failed", ()):
            print(f"FAILED {f['run']} seed {f['seed']}: {f['error']}")
        print(f"\n{summary['runs']} run(s) in {_duration(summary['elapsed_s'])}; results: {run_dir}  "
              f"(also {args.results / 'latest'})")
    if report:
        from dlcp_emu.study import report as rep
        try:
            pngs, page = rep.make(run_dir)
            print("plots:\n" + "\n".join(f"  {p}" for p in pngs) + f"\nreport: {page}")
        except (OSError, ValueError, KeyError) as e:   # the results stand without their plots
            print(f"dlcp-emu: no plots drawn ({type(e).__name__}: {e}); the results are in {run_dir}",
                  file=sys.stderr)
    return 0 if summary["complete"] else 1


def _duration(seconds):
    """`2 min 48 s`, `41.2 s`."""
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes else f"{seconds:.1f} s"


def _emulate(args):
    if _need_root("emu"):
        return 2
    spec = _load(DEFAULT_SPEC)
    if spec is None:
        return 2
    args.backend, args.json = "emu", False
    print(f"dlcp-emu: default experiment {DEFAULT_SPEC} (presets {DEFAULT_PRESETS})")
    return _finish(args, spec, DEFAULT_PRESETS.split(","), 1, report=not args.no_report,
                   emu_options={"live": args.live})
