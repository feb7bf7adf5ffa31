"""`dlcp-emu clean`: remove what crashed emulation runs left behind, by their state files.

Only what a run recorded: its processes (by pid, if the start time still matches) and its
root-namespace interfaces. Runs whose owner is still running are left alone. Never kills by
name and never runs `mn -c`.
"""
import json

from dlcp_emu.commands.argtypes import folder_or_absent


def add_parser(sub):
    p = sub.add_parser("clean", help="remove the leftovers of crashed emulation runs")
    p.add_argument("--runtime-dir", type=folder_or_absent, default=None,
                   help="where runs keep their state files (default $DLCP_EMU_RUNTIME_DIR "
                        "or /run/dlcp-emu)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=_clean)
    return p


def _clean(args):
    from dlcp_emu.emu import cleanup
    directory = args.runtime_dir or cleanup.runtime_dir()
    try:
        reports = cleanup.clean(directory)
    except PermissionError as e:
        print(f"dlcp-emu clean: {e} (run as root)")
        return 1
    if args.json:
        print(json.dumps({"runtime_dir": directory, "runs": reports}))
        return 0
    if not reports:
        print(f"nothing to clean in {directory}")
    for r in reports:
        if "skipped" in r:
            print(f"run {r['run_id']}: skipped ({r['skipped']})")
            continue
        killed = ", ".join(f"{k} {n} pid {pid} ({how})" for k, n, pid, how in r["killed"]) or "none"
        deleted = ", ".join(r["deleted"]) or "none"
        print(f"run {r['run_id']}: killed {killed}; deleted interfaces {deleted}")
    return 0
