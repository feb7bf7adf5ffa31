"""`python -m dlcp_emu.emu.datapath --config FILE.json`: one emulated switch."""
import argparse
import json
import os
import sys

from dlcp_emu.emu.datapath.process import Datapath


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m dlcp_emu.emu.datapath",
                                 description="Run one emulated switch on AF_PACKET sockets.")
    ap.add_argument("--config", required=True, help="switch config JSON file")
    args = ap.parse_args(argv)
    try:
        with open(args.config) as f:
            cfg = json.load(f)
        dp = Datapath(cfg)
    except (OSError, ValueError) as e:
        print(f"datapath: {e}", file=sys.stderr)
        return 2
    try:
        dp.open()
    except OSError as e:
        print(f"datapath {dp.name}: {e}", file=sys.stderr)
        dp.close()
        return 1
    dp.ready()
    profile = os.environ.get("DLCP_DATAPATH_PROFILE")   # developer aid: cProfile the loop
    try:
        if profile:
            import cProfile
            cProfile.runctx("dp.run()", globals(), {"dp": dp}, profile)
        else:
            dp.run()
    finally:
        dp.housekeeping(final=True)
        dp.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
