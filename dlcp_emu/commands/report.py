"""`dlcp-emu report RUN`: draw a run folder's plots."""
import json
import sys
from pathlib import Path


def add_parser(sub):
    p = sub.add_parser("report", help="plots and report.html of a run folder (default results/latest)")
    p.add_argument("run", type=Path, nargs="?", default=Path("results/latest"))
    p.add_argument("--port", metavar="SWITCH:PORT",
                   help="the port whose queue to draw, e.g. l1:2 (default: the one that queued most)")
    p.set_defaults(func=_report)


def _report(args):
    path = args.run / "summary.json"
    if not path.is_file():
        print(f"dlcp-emu report: {args.run} is not a run folder (no summary.json)", file=sys.stderr)
        return 2
    from dlcp_emu.study import compare, report
    try:
        summary = json.loads(path.read_bytes().decode("utf-8"))
        text = compare.table(summary)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        print(f"dlcp-emu report: {path} is not a run summary ({type(e).__name__}: {e})",
              file=sys.stderr)
        return 2
    try:
        port = report.parse_port(args.port) if args.port else None
        pngs, page = report.make(args.run, port)
    except ValueError as e:
        print(f"dlcp-emu report: {e}", file=sys.stderr)
        return 2
    print(text)
    for path in [*pngs, page]:
        print(path)
    return 0
