"""`python -m dlcp_emu.emu.datapath --config FILE.json`: one emulated switch."""
import argparse
import os
import signal
import sys

from dlcp_emu.emu.datapath.config import SwitchProcessConfig
from dlcp_emu.emu.datapath.housekeeper import SWITCH_INTERVAL_S
from dlcp_emu.emu.datapath.process import Datapath


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m dlcp_emu.emu.datapath",
                                 description="Run one emulated switch on AF_PACKET sockets.")
    ap.add_argument("--config", required=True, help="switch config JSON file")
    args = ap.parse_args(argv)
    try:
        dp = Datapath(SwitchProcessConfig.read(args.config))
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
    # The loop's thread takes the GIL back from the housekeeping thread within this
    # (housekeeper.py); Python's default is 5 ms.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    profile = os.environ.get("DLCP_DATAPATH_PROFILE")   # developer aid: cProfile the loop
    try:
        if profile:
            import cProfile
            cProfile.runctx("dp.run()", globals(), {"dp": dp}, profile)
        else:
            dp.run()
    finally:
        # Stopping: a second SIGTERM (a runner's stop after its first) or a late SIGUSR1 must
        # not end the process by the signal's default action (Python restores it as the
        # interpreter exits) once the final stats are on their way: it stops cleanly, exit 0.
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
            signal.signal(sig, signal.SIG_IGN)
        dp.housekeeping(final=True)
        dp.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
