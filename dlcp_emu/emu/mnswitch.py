"""`DlcpSwitch`: a Mininet switch whose data path is our switch process.

In the idiom of Mininet's `nodelib.LinuxBridge` and p4lang's `P4Switch`: `start` writes the
process's config (ports from the switch's interfaces, each port's rate, delay and buffer from
its link's params, routes from the topology's equal-cost next hops keyed by host MAC, the
flood tree), turns offloads off on its interfaces, starts `python -m dlcp_emu.emu.datapath`
in the root namespace and waits until it is ready; `stop` ends it by pid and keeps its stats.

    net = Mininet(topology.to_mininet_topo(), switch=switch_class(topology=t, pipeline="dlcp"),
                  controller=None, autoSetMacs=False)

Hosts need `configure_host(host)` (offloads and IPv6 off) before traffic.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque

from mininet.node import Switch

from dlcp_emu.emu import PROJECT_ROOT
from dlcp_emu.emu.datapath.config import SwitchProcessConfig
from dlcp_emu.emu.streams import tail_text

READY_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 5.0
# Off on every veth a switch process touches: with checksum offload a veth hands over TCP
# with a partial checksum (our re-sent copy then fails the receiver's check); with TSO/GSO/GRO
# it hands over 64 KB super-frames that no port could serialise as one packet.
OFFLOADS = ("tx", "rx", "tso", "gso", "gro")
# The switch process's config fields the switch fills in from its interfaces, its topology and
# its stats_dir; every other field is an option of the switch, by the same name.
DERIVED = ("name", "ports", "routes", "flood", "stats_path", "ready_path", "queue_path", "pcap_dir",
           "pcap_ports", "parent_pid")
OPTIONS = tuple(n for n in SwitchProcessConfig.field_names() if n not in DERIVED)


def _run(cmd):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def disable_offloads(intf_names, runner=None):
    """ethtool -K tx/rx/tso/gso/gro off on each interface (runner: a node's cmd for those in
    a namespace). Raises RuntimeError if ethtool refuses."""
    for name in intf_names:
        args = ["ethtool", "-K", name] + [w for o in OFFLOADS for w in (o, "off")]
        if runner is not None:
            out = runner(" ".join(args) + "; echo rc=$?")
            ok = out.strip().endswith("rc=0")
        else:
            r = _run(args)
            out, ok = r.stdout, r.returncode == 0
        if not ok:
            raise RuntimeError(f"ethtool -K {name} ... off failed: {out.strip()}")


def _disable_ipv6_root(intf):
    # The root namespace's kernel would otherwise send router solicitations and MLD reports
    # out of switch ports, and the next switch would flood them.
    try:
        with open(f"/proc/sys/net/ipv6/conf/{intf}/disable_ipv6", "w") as f:
            f.write("1")
    except OSError:
        pass


def configure_host(host):
    """Make a Mininet host fit to talk through our switches: offloads off on its interfaces
    (else TCP carries bad checksums and giant GSO frames) and IPv6 off (no solicitation
    chatter flooded through the network)."""
    host.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1")
    names = [i.name for i in host.intfList() if i.name != "lo"]
    disable_offloads(names, runner=host.cmd)


def flood_ports(topology):
    """switch -> ports on a loop-free flood tree: every host port, plus the switch links of a
    BFS tree from the first switch (one link per tree edge, the lowest-numbered of parallel
    ones). Broadcasts (ARP requests) then reach every host exactly once."""
    switches = topology.switches()
    if not switches:
        return {}
    hosts = set(topology.hosts())
    tree = {s: [] for s in switches}
    for s in switches:
        tree[s] += [p.number for p in topology.ports(s) if p.peer in hosts]
    root = switches[0]
    seen = {root}
    q = deque([root])
    while q:
        u = q.popleft()
        for p in topology.ports(u):
            v = p.peer
            if v in hosts or v in seen:
                continue
            seen.add(v)
            tree[u].append(p.number)
            tree[v].append(p.peer_port)
            q.append(v)
    return {s: sorted(ports) for s, ports in tree.items()}


def switch_routes(topology, switch):
    """Route table for the switch process: host MAC -> equal-cost egress ports."""
    return {topology.host_mac(h): list(ports)
            for h, ports in topology.equal_cost_next_hops(switch).items()}


def _proc_start_time(pid):
    """Start time of a process in clock ticks since boot (field 22 of /proc/<pid>/stat), or
    None: with the pid it names one process, whatever reuse the pid sees later."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return None
    return int(data[data.rindex(")") + 2:].split()[19])


def stop_kind(returncode, final):
    """How a switch process ended: "clean" (exit 0 with its final stats written), else its
    exit status or the signal that ended it, and whether its final stats are missing."""
    if returncode == 0 and final:
        return "clean"
    how = f"killed by signal {-returncode}" if returncode < 0 else f"exit status {returncode}"
    return how if final else f"{how}, no final stats"


class DlcpSwitch(Switch):
    """A Mininet switch run by our switch process (one per switch, root namespace)."""

    python = sys.executable      # the interpreter of the switch processes

    def __init__(self, name, topology=None, stats_dir=None, pcap=False, paced_hosts=False,
                 on_spawn=None, ready_timeout=READY_TIMEOUT_S, **params):
        """Options of the switch process are its config's fields, by name (`OPTIONS`:
        pipeline=, seed=, mode=, engine=, rx_batch=, cpu=, ...; datapath/config.py); the rest
        go to Mininet's Switch. pcap: capture every port (True), none (False), or the ports
        whose interface names are given (a collection, e.g. {"l1-eth3"}), each file bounded by
        the pcap_max_bytes option (the newest frames kept, `datapath.pcap`)."""
        # Mininet passes batch=True when the class has batchStartup, which then waits.
        self.batch_startup = params.pop("batch", False)
        self.options = {k: params.pop(k) for k in OPTIONS if k in params}
        self.topology = topology
        self.stats_dir = stats_dir
        self.pcap = pcap
        self.paced_hosts = paced_hosts
        self.on_spawn = on_spawn
        self.ready_timeout = ready_timeout
        self.proc = None
        self.proc_start = None
        self.final_stats = None
        self._stderr = None
        Switch.__init__(self, name, **params)

    @property
    def mode(self):
        return self.options.get("mode", SwitchProcessConfig.mode)

    # -- config ---------------------------------------------------------------------------
    def port_list(self):
        """[{number, intf, rate_bps, delay_ns, buffer_bytes, peer_paced}] from our interfaces,
        with the link params Mininet handed each interface (the topology's as a fallback).
        peer_paced: the port faces a host whose egress a token bucket paces (`paced_hosts`),
        so the switch emulates that link's serialisation and delay on arrival."""
        by_port, peers, hosts = {}, {}, set()
        if self.topology is not None:
            entries = self.topology.port_map().get(self.name, [])
            by_port = {n: link for n, _, link in entries}
            peers = {n: peer for n, peer, _ in entries}
            hosts = set(self.topology.hosts())
        ports = []
        for intf in self.intfList():
            number = self.ports.get(intf)
            if intf.name == "lo" or not number:
                continue
            p = dict(intf.params)
            link = by_port.get(number)
            for key in ("rate_bps", "delay_ns", "buffer_bytes"):
                if p.get(key) is None and link is not None:
                    p[key] = getattr(link, key)
            if p.get("rate_bps") is None and self.mode == "model":
                raise ValueError(f"{self.name}: interface {intf.name} has no rate_bps link param "
                                 "(build the net from Topology.to_mininet_topo())")
            if self.topology is not None:
                want = self.topology.intf_name(self.name, number)
                if want != intf.name:
                    raise ValueError(f"{self.name}: port {number} is {intf.name}, the topology "
                                     f"expects {want}")
            ports.append({"number": number, "intf": intf.name,
                          "rate_bps": p.get("rate_bps"), "delay_ns": int(p.get("delay_ns") or 0),
                          "buffer_bytes": int(p.get("buffer_bytes") or 256 * 1024),
                          "peer_paced": bool(self.paced_hosts and peers.get(number) in hosts)})
        return ports

    def _paths(self):
        if self.stats_dir is None:
            self.stats_dir = tempfile.mkdtemp(prefix=f"dlcp-emu-{self.name}-")
        os.makedirs(self.stats_dir, exist_ok=True)
        d = os.path.abspath(self.stats_dir)   # the process starts in the project root
        return {k: os.path.join(d, f"{self.name}.{k}") for k in
                ("config.json", "stats.json", "ready", "stderr", "stdout", "queues.i64")}

    def build_config(self):
        """The SwitchProcessConfig of this switch: the fields in DERIVED from its interfaces,
        topology and stats_dir, the others its options (their defaults the config's)."""
        if self.topology is None:
            raise ValueError(f"{self.name}: DlcpSwitch needs topology= (routes and the flood tree "
                             "come from it)")
        paths = self._paths()
        ports = self.port_list()
        captured = None if self.pcap is True else \
            [p["number"] for p in ports if self.pcap and p["intf"] in self.pcap]
        # A server's fabric runs its own pipeline, whatever the run's (`pipeline_of`).
        options = dict(self.options, pipeline=self.topology.pipeline_of(
            self.name, self.options.get("pipeline", SwitchProcessConfig.pipeline)))
        return SwitchProcessConfig(
            name=self.name, ports=ports, routes=switch_routes(self.topology, self.name),
            flood=flood_ports(self.topology)[self.name],
            stats_path=paths["stats.json"], ready_path=paths["ready"],
            queue_path=paths["queues.i64"] if self.mode == "model" else None,
            pcap_dir=os.path.join(self.stats_dir, "pcap") if captured is None or captured else None,
            pcap_ports=captured, parent_pid=os.getpid(), **options)

    # -- life cycle -------------------------------------------------------------------------
    def start(self, controllers=None):
        if self.proc is not None and self.proc.poll() is None:
            return
        cfg = self.build_config()
        paths = self._paths()
        for k in ("ready", "stats.json"):
            if os.path.exists(paths[k]):
                os.unlink(paths[k])
        cfg.write(paths["config.json"])
        names = [p["intf"] for p in cfg.ports]
        disable_offloads(names)
        for n in names:
            _disable_ipv6_root(n)
        env = dict(os.environ, PYTHONHASHSEED="0", PYTHONUNBUFFERED="1")
        self._stderr = open(paths["stderr"], "wb")
        stdout = open(paths["stdout"], "wb")
        # Own session: a Ctrl-C at the runner's terminal must not kill the switch before the
        # runner has stopped it and collected its stats.
        self.proc = subprocess.Popen(
            [self.python, "-m", cfg.program, "--config", paths["config.json"]],
            stdin=subprocess.DEVNULL, stdout=stdout, stderr=self._stderr, env=env,
            start_new_session=True, cwd=PROJECT_ROOT)
        stdout.close()
        self.proc_start = _proc_start_time(self.proc.pid)
        self.final_stats = None
        if self.on_spawn is not None:
            self.on_spawn(self, self.proc.pid, self.proc_start)
        if not self.batch_startup:
            self.wait_ready()

    def wait_ready(self, timeout=None):
        """Wait (bounded) for the ready file; raise with the process's stderr if it dies."""
        paths = self._paths()
        deadline = time.monotonic() + (timeout or self.ready_timeout)
        delay = 0.005
        while True:
            if os.path.exists(paths["ready"]):
                return True
            rc = self.proc.poll()
            if rc is not None:
                raise RuntimeError(f"switch process {self.name} exited with {rc} before it was "
                                   f"ready:\n{tail_text(paths['stderr'], 4000)}")
            if time.monotonic() > deadline:
                self._kill()
                raise RuntimeError(f"switch process {self.name} not ready after "
                                   f"{timeout or self.ready_timeout:.0f} s:\n"
                                   f"{tail_text(paths['stderr'], 4000)}")
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    @classmethod
    def batchStartup(cls, switches, **_kwargs):
        for s in switches:
            s.wait_ready()
        return switches

    @classmethod
    def batchShutdown(cls, switches, **_kwargs):
        # Signal all first, then wait: the processes finish their stats in parallel.
        for s in switches:
            s._signal(signal.SIGTERM)
        for s in switches:
            s.stop(deleteIntfs=True)
        return switches

    def exited(self):
        """None while the switch process runs (or before it started), else {"returncode",
        "stderr_tail"}: a switch that ends before it is stopped has failed."""
        rc = self.proc.poll() if self.proc is not None else None
        if rc is None:
            return None
        return {"returncode": rc, "stderr_tail": tail_text(self._paths()["stderr"])}

    def _alive(self):
        return (self.proc is not None and self.proc.poll() is None
                and _proc_start_time(self.proc.pid) == self.proc_start)

    def _signal(self, sig):
        if self._alive():
            try:
                os.kill(self.proc.pid, sig)
            except ProcessLookupError:
                pass

    def _kill(self):
        self._signal(signal.SIGKILL)
        if self.proc is not None:
            try:
                self.proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                pass

    def stop_process(self, timeout=STOP_TIMEOUT_S):
        """SIGTERM by pid, a bounded wait, SIGKILL if it did not go; then read the stats.
        Idempotent; returns the final stats (or the last periodic ones after a SIGKILL)."""
        if self.proc is None:
            return self.final_stats
        if self.proc.returncode is None:
            self._signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self._kill()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        if self.final_stats is None:
            self.final_stats = self.read_stats()
            if self.final_stats is not None:
                rc = self.proc.returncode
                self.final_stats["returncode"] = rc
                self.final_stats["stop"] = stop_kind(rc, self.final_stats.get("final"))
        return self.final_stats

    def stop(self, deleteIntfs=True):
        self.stop_process()
        super().stop(deleteIntfs)

    def read_stats(self):
        try:
            with open(self._paths()["stats.json"]) as f:
                return json.load(f)
        except (OSError, ValueError):
            return None

    def stats(self):
        """Final stats once stopped, else the latest periodic ones (None before the first)."""
        if self.final_stats is not None:
            return self.final_stats
        return self.read_stats()

    @property
    def process_pid(self):
        return self.proc.pid if self.proc is not None else None

    def connected(self):
        return self._alive()


def switch_class(**opts):
    """A DlcpSwitch subclass with these options bound (pipeline=, topology=, ...). A subclass
    rather than functools.partial so that Mininet sees batchStartup/batchShutdown and starts
    every switch before waiting for any."""
    class ConfiguredDlcpSwitch(DlcpSwitch):
        def __init__(self, name, **params):
            super().__init__(name, **{**opts, **params})
    return ConfiguredDlcpSwitch

