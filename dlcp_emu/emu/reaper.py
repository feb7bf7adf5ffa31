"""The run's reaper: cleans up after an emulation whose runner died without doing so.

    python -m dlcp_emu.emu.reaper STATE_FILE      (stdin: a pipe the runner holds open)

`EmulationRun` starts one per run, in a session of its own (a Ctrl-C at the runner's terminal
does not reach it), and keeps the write end of a pipe that is the reaper's stdin. However
the runner ends, SIGKILL included, the kernel closes that end and the reaper reads EOF. A
runner that stopped in order has removed its state file by then, and the reaper just exits;
otherwise the reaper removes what the state file records (`cleanup.clean_state`: processes
by pid and start time, interfaces by name and ifindex) and the file. The programs of the
run follow their parent's death by themselves (`lifeline`); the reaper takes what they
leave: the host shells' namespaces and the links between switches, which no namespace takes
with it.
"""
import json
import os
import signal
import subprocess
import sys

from dlcp_emu.emu import cleanup

PROJECT_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def start(state_path):
    """Start the reaper of the run whose state file this is: (its Popen, the pipe's write
    end). The write end is close-on-exec, so no child of this process holds it; closing it
    (or dying) is what sets the reaper off."""
    r, w = os.pipe()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "dlcp_emu.emu.reaper", str(state_path)],
                                stdin=r, stdout=subprocess.DEVNULL, start_new_session=True,
                                cwd=PROJECT_ROOT)
    except BaseException:
        os.close(w)
        raise
    finally:
        os.close(r)
    return proc, w


def reap(state_path, wait_s=cleanup.KILL_WAIT_S):
    """Clean up after the run of this state file, if it is still there. Returns the report
    or None."""
    try:
        with open(state_path) as f:
            state = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        state = None
    report = cleanup.clean_state(state, wait_s=wait_s) if state is not None else None
    try:
        os.unlink(state_path)
    except FileNotFoundError:
        pass
    return report


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m dlcp_emu.emu.reaper STATE_FILE (stdin: the runner's pipe)",
              file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    while sys.stdin.buffer.read(4096):      # the runner writes nothing: this waits for EOF
        pass
    report = reap(argv[0])
    if report is not None and (report["killed"] or report["deleted"]):
        try:
            print(f"reaper: run {report['run_id']} ended without cleaning up; killed "
                  f"{len(report['killed'])} process(es), deleted {len(report['deleted'])} "
                  "interface(s)", file=sys.stderr)
        except OSError:     # the runner's terminal or pipe may be gone with it
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
