"""A process of an emulation run dies with the process that started it, however that one dies.

The runner starts every program directly (a switch with Popen, a host program through
Mininet's `mnexec`, which execs it in place, so the runner is its parent). Each asks the
kernel for a signal when its parent ends (PR_SET_PDEATHSIG, which a SIGKILL of the parent
triggers too) and then checks that the parent is still the one that started it: a parent that
died before the request was made has already handed the process to init, and no signal would
ever come. SIGTERM, so that the process ends in order and keeps what it measured.

The runner's pid reaches host programs in `PARENT_ENV` (`EmulationRun.popen` sets it), the
switches in their config (`parent_pid`).
"""
import ctypes
import os
import signal

PARENT_ENV = "DLCP_EMU_PARENT_PID"
PR_SET_PDEATHSIG = 1
PR_SET_TIMERSLACK = 29


def prctl(option, value):
    """prctl(2) with one argument; False where it is refused or unavailable."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def follow_parent(parent_pid, name, sig=signal.SIGTERM):
    """Get `sig` when the parent dies; exit at once if `parent_pid` is no longer the parent."""
    prctl(PR_SET_PDEATHSIG, sig)
    if os.getppid() != parent_pid:
        raise SystemExit(f"{name}: parent {parent_pid} is gone")


def follow_parent_from_env(name, environ=os.environ):
    """`follow_parent` for a program started by `EmulationRun.popen`; nothing when started by
    hand (no `PARENT_ENV`). Returns the parent's pid or None."""
    value = environ.get(PARENT_ENV)
    if not value:
        return None
    follow_parent(int(value), name)
    return int(value)
