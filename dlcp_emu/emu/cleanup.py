"""What an emulation run created, on disk, and removing exactly that after a crash.

Every run keeps a state file `<runtime dir>/<run id>.json` (runtime dir: $DLCP_EMU_RUNTIME_DIR,
default /run/dlcp-emu). Names of the root-namespace interfaces it will create are written
before they are created; each process (Mininet host shells, switch processes, traffic
processes) is written as soon as it is spawned, with its start time from /proc so that a
recycled pid is never mistaken for it. `dlcp-emu clean` (`clean()`) takes the state files of
runs whose owner process is dead and, for each: kills the recorded processes whose start time
still matches (SIGTERM, a bounded wait, SIGKILL), deletes the recorded interfaces that still
exist (`ip link del`; a host link goes with its switch end), and removes the state file.
Nothing else: no kill by name, no `mn -c`.
"""
import json
import os
import signal
import subprocess
import time
import uuid

from dlcp_emu.jsonio import write_json_atomic

DEFAULT_RUNTIME_DIR = "/run/dlcp-emu"
KILL_WAIT_S = 3.0


def runtime_dir():
    return os.environ.get("DLCP_EMU_RUNTIME_DIR", DEFAULT_RUNTIME_DIR)


def boot_id():
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return None


def proc_start_time(pid):
    """Start time in clock ticks since boot (field 22 of /proc/<pid>/stat), or None if there
    is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except (OSError, TypeError):
        return None
    # The command name may hold spaces and parentheses: fields start after the last ')'.
    return int(data[data.rindex(")") + 2:].split()[19])


def process_alive(pid, start):
    """The process recorded as (pid, start time) still runs (and is not a zombie)."""
    if not pid or start is None:
        return False
    if proc_start_time(pid) != start:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
        return data[data.rindex(")") + 2] != "Z"
    except OSError:
        return False


def netns_inode(pid):
    try:
        return os.stat(f"/proc/{pid}/ns/net").st_ino
    except OSError:
        return None


def ifindex(name):
    try:
        with open(f"/sys/class/net/{name}/ifindex") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


class RunState:
    """The state file of one run, rewritten (atomically) whenever something is added."""

    def __init__(self, run_id=None, directory=None, owner_pid=None, **info):
        self.dir = directory or runtime_dir()
        os.makedirs(self.dir, mode=0o755, exist_ok=True)
        self.run_id = run_id or f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.path = os.path.join(self.dir, f"{self.run_id}.json")
        owner = owner_pid or os.getpid()
        self.data = {"run_id": self.run_id, "created": time.time(), "boot_id": boot_id(),
                     "owner": {"pid": owner, "start": proc_start_time(owner)},
                     "processes": [], "interfaces": [], "info": info}
        self.save()

    def save(self):
        write_json_atomic(self.path, self.data, indent=1, fsync=True)

    def add_interfaces(self, names):
        """Record interfaces about to be created (before creating them)."""
        have = {i["name"] for i in self.data["interfaces"]}
        for n in names:
            if n not in have:
                self.data["interfaces"].append({"name": n, "ifindex": None})
        self.save()

    def confirm_interfaces(self, names=None):
        """Once created (all recorded ones by default): the ifindex of each that exists and
        has none yet. Only a confirmed interface is ever deleted by `clean`: a namesake made
        by someone else, or later, has another ifindex."""
        changed = False
        for i in self.data["interfaces"]:
            if i["ifindex"] is None and (names is None or i["name"] in names):
                i["ifindex"] = ifindex(i["name"])
                changed = changed or i["ifindex"] is not None
        if changed:
            self.save()

    def add_process(self, kind, name, pid, start=None, netns=None):
        self.data["processes"].append({
            "kind": kind, "name": name, "pid": pid,
            "start": start if start is not None else proc_start_time(pid),
            **({"netns": netns} if netns is not None else {})})
        self.save()

    def remove(self):
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


def load_states(directory=None):
    """[(path, state dict)] of every state file (unreadable ones as (path, None))."""
    d = directory or runtime_dir()
    out = []
    try:
        names = sorted(os.listdir(d))
    except FileNotFoundError:
        return out
    for n in names:
        if not n.endswith(".json"):
            continue
        p = os.path.join(d, n)
        try:
            with open(p) as f:
                out.append((p, json.load(f)))
        except (OSError, ValueError):
            out.append((p, None))
    return out


def owner_alive(state):
    o = state.get("owner") or {}
    return state.get("boot_id") == boot_id() and process_alive(o.get("pid"), o.get("start"))


def kill_recorded(processes, wait_s=KILL_WAIT_S):
    """SIGTERM each recorded process still alive (same start time), wait bounded, SIGKILL the
    rest. Returns [(kind, name, pid, how)] for those signalled."""
    live = [p for p in processes if process_alive(p.get("pid"), p.get("start"))]
    done = []
    for p in live:
        try:
            os.kill(p["pid"], signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + wait_s
    while live and time.monotonic() < deadline:
        live_now = [p for p in live if process_alive(p["pid"], p["start"])]
        for p in live:
            if p not in live_now:
                done.append((p["kind"], p["name"], p["pid"], "SIGTERM"))
        live = live_now
        if live:
            time.sleep(0.02)
    for p in live:
        if process_alive(p["pid"], p["start"]):
            try:
                os.kill(p["pid"], signal.SIGKILL)
            except ProcessLookupError:
                pass
        done.append((p["kind"], p["name"], p["pid"], "SIGKILL"))
    return done


def delete_interfaces(interfaces, protected=(), run=None):
    """`ip link del` each recorded interface that still exists with the recorded ifindex and
    that no live run claims. One recorded without an ifindex (the run died between naming it
    and creating it) is left: an interface of that name may be anyone's. Returns the names
    deleted."""
    run = run or (lambda cmd: subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                             text=True))
    deleted = []
    for i in interfaces:
        name = i["name"]
        if name in protected:
            continue
        idx = ifindex(name)
        if idx is None or i.get("ifindex") != idx:
            continue
        r = run(["ip", "link", "del", name])
        if getattr(r, "returncode", 1) == 0:
            deleted.append(name)
    return deleted


def clean_state(state, protected=(), wait_s=KILL_WAIT_S):
    """Remove what one run recorded: processes (newest first: traffic, switches, then host
    shells) and interfaces. Used by `clean` and by a run cleaning up after its own failure."""
    report = {"run_id": state.get("run_id"), "killed": [], "deleted": []}
    if state.get("boot_id") not in (None, boot_id()):
        return report            # rebooted since: its pids and interfaces are long gone
    report["killed"] = kill_recorded(list(reversed(state.get("processes", []))), wait_s)
    report["deleted"] = delete_interfaces(state.get("interfaces", []), protected)
    return report


def clean(directory=None, include_live=False):
    """Clean up after every run whose owner is dead (all runs with include_live). Returns one
    report per state file: {"run_id", "killed", "deleted"} or {"run_id", "skipped": why}."""
    states = load_states(directory)
    live_names = set()
    reports = []
    for path, st in states:
        if st is not None and not include_live and owner_alive(st):
            live_names |= {i["name"] for i in st.get("interfaces", [])}
    for path, st in states:
        if st is None:
            reports.append({"run_id": os.path.basename(path), "skipped": "unreadable state file"})
            continue
        if not include_live and owner_alive(st):
            reports.append({"run_id": st.get("run_id"), "skipped": "owner process still running",
                            "owner": st.get("owner")})
            continue
        reports.append(clean_state(st, protected=live_names))
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
    return reports
