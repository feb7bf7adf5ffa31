"""`dlcp-emu report RUN`: draw a run folder's plots."""
import sys
from pathlib import Path


def add_parser(sub):
    p = sub.add_parser("report", help="plots of a run folder (default results/latest)")
    p.add_argument("run", type=Path, nargs="?", default=Path("results/latest"))
    p.set_defaults(func=_report)


def _report(args):
    if not (args.run / "summary.json").is_file():
        print(f"dlcp-emu report: {args.run} is not a run folder (no summary.json)", file=sys.stderr)
        return 2
    from dlcp_emu.study import compare, report
    import json
    print(compare.table(json.loads((args.run / "summary.json").read_text())))
    for png in report.draw(args.run):
        print(png)
    return 0
