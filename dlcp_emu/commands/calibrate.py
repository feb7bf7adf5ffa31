"""`dlcp-emu calibrate`: the fidelity estimate's calibration grid (study/calibrate.py) and its
report in docs (study/calibration_report.py)."""
import sys
from pathlib import Path

from dlcp_emu.commands.argtypes import output_dir
from dlcp_emu.commands.run import _need_root


def add_parser(sub):
    c = sub.add_parser("calibrate", help="validate a grid of specs x dilations x seeds and compare the "
                                         "fidelity estimate with the measured differences (root)")
    c.add_argument("--grid", type=Path, default=Path("calibration/grid.jsonl"),
                   help="the grid's records, appended case by case; cases already there are not run again")
    c.add_argument("--case", action="append", default=None,
                   help="run only this case, `spec:dilation:seed index` (repeatable; --list shows them)")
    c.add_argument("--list", action="store_true", help="print the cases not yet in --grid, and stop")
    c.add_argument("--report-only", action="store_true", help="run nothing: write the report from --grid")
    c.add_argument("--docs", type=output_dir, default=Path("docs"),
                   help="where fidelity-grid.md and fidelity-grid.png go (default docs/)")
    c.add_argument("--results", type=output_dir, default=Path("results"), help="results root (default results/)")
    c.set_defaults(func=_calibrate)


def _calibrate(args):
    from dlcp_emu.study import calibrate, calibration_report
    todo = args.case if args.case else calibrate.pending(args.grid)
    if args.list:
        print("\n".join(todo))
        return 0
    if not args.report_only and todo:
        if _need_root("emu"):
            return 2
        for case in todo:
            print(f"== {case}", flush=True)
            try:
                calibrate.run_key(case, args.grid, root=args.results, log=lambda m: print(m, flush=True))
            except (RuntimeError, ValueError) as e:
                print(f"dlcp-emu: {e}", file=sys.stderr)
                return 2
    if not args.grid.exists():
        print(f"dlcp-emu: --grid {args.grid}: no records yet (run without --report-only)", file=sys.stderr)
        return 2
    calibration_report.write(args.grid, args.docs, "dlcp-emu calibrate")
    print(f"report: {args.docs / 'fidelity-grid.md'}, {args.docs / 'fidelity-grid.png'}")
    return 0
