"""Transparent huge pages for the compiled core's memory.

At 1024 hosts the simulator's loop is bound by memory: each event reads a wire, a packet, a
switch's port and a host's transport state from all over a heap of several GB, and with 4 KiB
pages most of those reads also miss the TLB (in a virtual machine a miss walks two page
tables). glibc can ask the kernel for 2 MiB pages for what malloc takes
(`glibc.malloc.hugetlb=1`: madvise(MADV_HUGEPAGE) on its heap, for kernels whose
transparent huge pages are `madvise`, as Debian's are), but reads the setting only when a
process starts. So the command line starts itself once more with it set, before it has done
anything (`reexec`); `fat-tree-1024-sim.toml`'s core took 146 CPU-s against 162 without
(docs/engines-and-scale.md). Python API users set it in their own environment:
`GLIBC_TUNABLES=glibc.malloc.hugetlb=1 python ...`. A user's own choice (the tunable set to
anything, e.g. 0) is kept. The restarted process gives its children the environment it was
given: an emulation's hosts and switches run in real time, where a first touch of a 2 MiB
page (zeroed whole) would stall them for tens of microseconds.
"""
import contextlib
import os
import platform
import sys

TUNABLE = "glibc.malloc.hugetlb"
ENV = "GLIBC_TUNABLES"
BEFORE = "DLCP_EMU_GLIBC_TUNABLES_BEFORE"   # what GLIBC_TUNABLES held, across the restart only


def _chosen(environ):
    """The value the environment gives the tunable, or None."""
    for item in environ.get(ENV, "").split(":"):
        name, _, value = item.partition("=")
        if name == TUNABLE:
            return value
    return None


def environment(environ, libc=None):
    """The environment to start again with (the tunable added to what GLIBC_TUNABLES holds),
    or None when nothing is to change: the user chose already, or the C library is not glibc."""
    libc = platform.libc_ver()[0] if libc is None else libc
    if libc != "glibc" or _chosen(environ) is not None:
        return None
    env = dict(environ)
    current = environ.get(ENV, "")
    env[ENV] = f"{current}:{TUNABLE}=1" if current else f"{TUNABLE}=1"
    env[BEFORE] = current
    return env


def reexec():
    """Start this command again with huge pages advised, if it was not (never returns then);
    in the restarted process, give the environment back as it was for its children."""
    if BEFORE in os.environ:
        before = os.environ.pop(BEFORE)
        if before:
            os.environ[ENV] = before
        else:
            os.environ.pop(ENV, None)
        return
    env = environment(os.environ)
    if env is None or not sys.executable:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, sys.orig_argv, env)


# What glibc read when this process started: this module is imported before `reexec` gives
# the environment back.
_AT_START = _chosen(os.environ)


def in_effect(environ=None):
    """Whether this process's malloc advises huge pages (glibc read the tunable at start), or
    would under `environ`."""
    return (_AT_START if environ is None else _chosen(environ)) not in (None, "0")


@contextlib.contextmanager
def for_children():
    """Processes started inside (a sweep's simulating workers, never an emulation's hosts)
    start with the pages this process has."""
    env = environment(os.environ) if in_effect() else None
    if env is None:
        yield
        return
    before = os.environ.get(ENV)
    os.environ[ENV] = env[ENV]
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = before


def pages():
    """For a run's summary: "huge" (malloc advises transparent huge pages) or "4k"."""
    return "huge" if in_effect() else "4k"


def note():
    """For a run's log: how its memory was paged."""
    if in_effect():
        return "malloc advises transparent huge pages"
    return f"malloc in 4 KiB pages ({ENV}={TUNABLE}=1 gives ~10% at 1024 hosts)"
