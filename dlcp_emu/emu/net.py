"""`EmulationRun`: a Mininet network of DlcpSwitch processes that cleans up after itself.

    with EmulationRun(topology, "dlcp") as run:
        h1, h2 = run.host("h1"), run.host("h2")
        h1.cmd("ping -c1", h2.IP())
        srv = run.popen("h2", ["iperf3", "-s", "-1"])      # recorded, ended at exit
    run.stats["l1"]                                        # final stats of each switch

Every exit path (normal, exception, KeyboardInterrupt, SIGTERM) ends the processes started
with `popen`, then stops the switch processes and keeps their stats, stops the net, and
removes the state file; what is recorded there is what `dlcp-emu clean` would remove after a
crash. A runner that dies without doing so (SIGKILL, a crash of the interpreter) is cleaned
up after all the same: every program it started follows its death (`lifeline`), and the
run's reaper (`reaper`) removes the rest by the state file. A start first cleans up after
earlier runs whose owner is dead (`cleanup.clean`), should their reaper have died too.
"""
import os
import signal
import subprocess
import tempfile
import threading

from dlcp_emu.emu import cleanup, links, reaper
from dlcp_emu.emu.lifeline import PARENT_ENV
from dlcp_emu.emu.mnswitch import DlcpSwitch, configure_host, switch_class
from dlcp_emu.emu.host_egress import egress_commands
from switch_models import ETHERNET_OVERHEAD
from switch_models.pipeline import PipelineSpec

from dlcp_emu.wire.layout import ETH_LEN

HOST_BURST_FRAMES = 3   # frames a host's token bucket lets out back to back (see _pace_hosts)
DRAIN_TIMEOUT_S = 10.0  # the longest a stop waits for the network to go quiet (links.drain)


class RunTerminated(BaseException):
    """SIGTERM arrived while the run was up (a BaseException, like KeyboardInterrupt, so
    ordinary `except Exception` blocks do not swallow it)."""


def root_interfaces(topology):
    """Interfaces a net of this topology creates in the root namespace: every switch port
    (host-side ends live in the host namespaces and go with them)."""
    return [topology.intf_name(s, n) for s, ports in topology.port_map().items()
            for n, _, _ in ports]


class EmulationRun:
    def __init__(self, topology, pipeline="fifo", *, seed=0, pcap=False, pcap_max_bytes=None,
                 static_arp=False,
                 mode="model", run_dir=None, runtime_dir=None, switch_opts=None,
                 switch=None, late_threshold_ns=1_000_000, configure_hosts=True, mtu=1500,
                 pace_hosts=True):
        """topology: a topologies.Topology; pipeline: preset name or spec for every switch;
        switch: another Mininet switch class (e.g. LinuxBridge, for comparisons) instead of
        DlcpSwitch; switch_opts: more DlcpSwitch options (cpu=, rx_batch=, ...); run_dir: where
        configs, stats and pcaps go (a new temporary directory by default); pcap: capture
        every switch port (True) or the ports of these interface names, each file bounded by
        pcap_max_bytes (the newest frames kept; None: unbounded); pace_hosts: each
        host's uplink serialises at its rate and has its delay, as in the simulator (False
        hands a host's frames to its switch as fast as the host makes them: for raw
        line-rate senders that test a switch alone)."""
        self.topology = topology
        self.pipeline = pipeline
        self.seed = seed
        self.pcap = pcap
        self.pcap_max_bytes = pcap_max_bytes
        self.static_arp = static_arp
        self.mode = mode
        self.run_dir = run_dir
        self.runtime_dir = runtime_dir
        self.switch_opts = dict(switch_opts or {})
        self.switch_override = switch
        self.late_threshold_ns = late_threshold_ns
        self.configure_hosts = configure_hosts
        self.mtu = mtu
        self.pace_hosts = pace_hosts
        self.paced = False
        self.host_drops = {}     # host -> packets its pacing queue dropped (read at stop)
        self.host_muted = {}     # host -> frames its kernel tried to send once muted at stop
        self.net = None
        self.state = None
        self.stats = {}
        self.procs = []
        self.stale_runs = []     # earlier runs' leftovers this start removed (cleanup.clean)
        self.links = None        # links.link_balance at stop: every link's frames accounted
        self.drained = None      # whether the network went quiet before the switches stopped
        self._host_base = None   # the hosts' interface counters once the switches were ready
        self._reaper = None
        self._reaper_pipe = None
        self._old_handler = None
        self._stopped = False

    # -- context manager ------------------------------------------------------------------
    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def _on_sigterm(self, signum, frame):
        raise RunTerminated(f"SIGTERM during emulation run {self.state.run_id if self.state else ''}")

    def start(self):
        from mininet.link import Link
        from mininet.net import Mininet
        from mininet.node import Host

        if self.run_dir is None:
            self.run_dir = tempfile.mkdtemp(prefix="dlcp-emu-run-")
        os.makedirs(self.run_dir, exist_ok=True)
        if threading.current_thread() is threading.main_thread():
            self._old_handler = signal.signal(signal.SIGTERM, self._on_sigterm)
        # What dead runs left (their reaper should have removed it, unless it died too).
        self.stale_runs = [r for r in cleanup.clean(self.runtime_dir)
                           if r.get("killed") or r.get("deleted")]
        self.state = cleanup.RunState(directory=self.runtime_dir, run_dir=self.run_dir,
                                      topology=self.topology.name)
        state = self.state
        self._start_reaper()
        names = root_interfaces(self.topology)
        taken = [n for n in names if os.path.exists(f"/sys/class/net/{n}")]
        if taken:
            # Mininet would fail later with "RTNETLINK answers: File exists".
            raise RuntimeError(f"interface {taken[0]} already exists: another emulation is running, "
                               "or a killed one left it behind (`dlcp-emu clean` removes those); "
                               "one emulation at a time per machine")
        if self.switch_override is not None:
            # Kernel bridges (LinuxBridge) are interfaces named after their switch.
            names += self.topology.switches()
        state.add_interfaces(names)

        class RecordedLink(Link):
            def __init__(self, node1, node2, **params):
                super().__init__(node1, node2, **params)
                # Each root-namespace end by its ifindex, as soon as it exists: `clean`
                # deletes only an interface whose name and ifindex are both this run's.
                state.confirm_interfaces([i.name for i in (self.intf1, self.intf2)
                                          if not i.node.inNamespace])

        class RecordedHost(Host):
            def startShell(self, *a, **kw):
                super().startShell(*a, **kw)
                state.add_process("host", self.name, self.pid, netns=cleanup.netns_inode(self.pid))

        def on_spawn(sw, pid, start):
            state.add_process("switch", sw.name, pid, start)

        if self.switch_override is not None:
            cls = self.switch_override
            sw_name = getattr(cls, "__name__", str(cls))
        else:
            cls = switch_class(topology=self.topology, pipeline=self.pipeline, seed=self.seed,
                               stats_dir=self.run_dir, pcap=self.pcap,
                               pcap_max_bytes=self.pcap_max_bytes, mode=self.mode,
                               late_threshold_ns=self.late_threshold_ns, on_spawn=on_spawn,
                               paced_hosts=self.pace_hosts, **self.switch_opts)
            sw_name = "DlcpSwitch"
        state.data["info"]["switch"] = sw_name
        state.save()
        self.net = Mininet(self.topology.to_mininet_topo(), switch=cls, host=RecordedHost,
                           link=RecordedLink, controller=None, autoSetMacs=False, build=True)
        state.confirm_interfaces()
        if self.configure_hosts:
            for h in self.net.hosts:
                configure_host(h)
        if self.static_arp:
            self.net.staticArp()
        if self.mtu != 1500:
            self._set_mtu()
        if self.pace_hosts:
            self._pace_hosts()
        self.net.start()
        state.confirm_interfaces()      # a kernel bridge's interface exists from its start
        if self._checks_links():
            self._host_base = links.hosts_counters(self.net, self.topology)
        return self

    def _start_reaper(self):
        self._reaper, self._reaper_pipe = reaper.start(self.state.path)

    def _end_reaper(self):
        """After the state file is gone: the reaper reads EOF, finds nothing to do, exits."""
        if self._reaper_pipe is not None:
            os.close(self._reaper_pipe)
            self._reaper_pipe = None
        if self._reaper is not None:
            try:
                self._reaper.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            self._reaper = None

    def _pace_hosts(self):
        """A host's NIC serialises at its link rate. Two parts emulate it: a token bucket on the
        host's egress, counting the same Ethernet overhead per frame (preamble, gap, FCS) as the switch
        ports, keeps the host from handing a whole window to its veth at once; and the switch
        port facing the host (`peer_paced`) serialises each frame on arrival, after the one
        before it, and adds the link's delay, as the simulator's NIC does. The bucket holds
        HOST_BURST_FRAMES frames: with one, each release the kernel's timer made late was lost
        for good (the host sent below its rate); the switch's serialisation keeps the frames
        of a burst apart, so none reaches a priority queue early. The queue holds what the
        simulator's NIC holds (the transport's window bounds it): a 64-frame limit dropped a
        PS's bursts to four workers, 1.5% of its packets, out of sight of the switches. A
        `priority` host queue (the pipeline's `host_queue`) is an HTB shaper of the same rate
        and burst over two queues, control packets first (`host_egress`)."""
        frame = self.mtu + ETH_LEN + ETHERNET_OVERHEAD
        host_queue = PipelineSpec.parse(self.pipeline).host_queue   # the NIC's queue (host_egress)
        self.paced = True
        for h in self.net.hosts:
            (port,) = self.topology.ports(h.name)
            for intf in h.intfList():
                if intf.name == "lo":
                    continue
                for cmd in egress_commands(intf.name, port.link.rate_bps, HOST_BURST_FRAMES * frame, host_queue,
                                           frame):
                    out = h.cmd(cmd)
                    if out.strip():
                        raise RuntimeError(f"pacing {h.name} {intf.name} failed: {cmd}: {out.strip()}")

    def _set_mtu(self):
        """Jumbo frames: every interface of the run, host ends in their namespaces, switch
        ends in the root one, before the switch processes size their buffers."""
        import subprocess
        for h in self.net.hosts:
            for intf in h.intfList():
                h.cmd(f"ip link set dev {intf.name} mtu {self.mtu}")
        for name in root_interfaces(self.topology):
            subprocess.run(["ip", "link", "set", "dev", name, "mtu", str(self.mtu)], check=True)

    # -- use ------------------------------------------------------------------------------
    def host(self, name):
        return self.net.get(name)

    def switch(self, name):
        return self.net.get(name)

    def popen(self, host, cmd, output=None, **kwargs):
        """host.popen(cmd) in the host's namespace, recorded so that it is ended at exit and
        by `dlcp-emu clean` after a crash. output: a file for its stdout and stderr (else
        pipes, which the caller must read: a process writing into a full one blocks)."""
        node = self.host(host) if isinstance(host, str) else host
        # Our programs follow this process's death (`lifeline`); Popen forks from this
        # thread, whose end the kernel takes for the parent's.
        kwargs["env"] = {**(kwargs.get("env") or os.environ), PARENT_ENV: str(os.getpid())}
        if output is not None:
            with open(output, "wb") as f:
                p = node.popen(cmd, stdout=f, stderr=subprocess.STDOUT, **kwargs)
        else:
            kwargs.setdefault("stdout", subprocess.PIPE)
            kwargs.setdefault("stderr", subprocess.PIPE)
            p = node.popen(cmd, **kwargs)
        self.procs.append(p)
        self.state.add_process("traffic", f"{node.name}:{cmd if isinstance(cmd, str) else cmd[0]}",
                               p.pid)
        return p

    def switch_exits(self):
        """{name: how it ended} of every switch process that ended while the run went on."""
        ended = {s.name: s.exited() for s in self.net.switches if isinstance(s, DlcpSwitch)}
        return {name: e for name, e in ended.items() if e is not None}

    def switch_stats(self):
        """Latest stats of every switch: final ones once stopped, else the periodic ones."""
        return {s.name: s.stats() for s in self.net.switches if isinstance(s, DlcpSwitch)}

    def interrupt_commands(self, wait_s=3.0):
        """Interrupt (Ctrl-C, as Mininet's CLI does) what a node's shell still runs, e.g. a CLI
        command cut short: a busy shell cannot be asked anything at stop. Bounded."""
        import time
        for node in self.net.values() if self.net is not None else ():
            if getattr(node, "waiting", False) and node.shell:
                node.sendInt()
                deadline = time.monotonic() + wait_s
                while node.waiting and time.monotonic() < deadline:
                    node.monitor(timeoutms=100)

    def host_queue_drops(self):
        """{host: packets its egress queue dropped}: losses no switch saw (the pacing tbf's
        during a run; once muted, the frames its kernel sent after the network went quiet).
        None for a host whose shell is still busy: unknown, not zero."""
        import re
        drops = {}
        for h in self.net.hosts if self.net is not None else ():
            if h.waiting:
                drops[h.name] = None
                continue
            for intf in h.intfList():
                if intf.name != "lo":
                    m = re.search(r"dropped (\d+)", h.cmd(f"tc -s qdisc show dev {intf.name}"))
                    drops[h.name] = drops.get(h.name, 0) + (int(m.group(1)) if m else 0)
        return drops

    def mute_hosts(self):
        """Once the network is quiet at stop: every host's egress becomes a queue that holds
        nothing (pfifo, limit 0), so that a frame its kernel sends later (a TCP FIN or ACK
        retransmitted after a backed-off timeout, seconds on) is dropped and counted there
        rather than leaving a link unbalanced after its switch has stopped reading."""
        for h in self.net.hosts:
            for intf in h.intfList():
                if intf.name != "lo":
                    out = h.cmd(f"tc qdisc replace dev {intf.name} root pfifo limit 0")
                    if out.strip():
                        raise RuntimeError(f"muting {h.name} {intf.name} failed: {out.strip()}")

    # -- teardown ---------------------------------------------------------------------------
    def _checks_links(self):
        return self.switch_override is None and self.mode == "model"

    def stop_switches(self):
        """Stop every switch process and keep its final stats. Once the hosts have stopped
        (`stop` ends them first) the switches go on until the network is quiet
        (`links.drain`), so that no frame is on its way when they stop; then every link's
        balance is taken (`self.links`)."""
        if self.net is None:
            return self.stats
        switches = [s for s in self.net.switches if isinstance(s, DlcpSwitch)]
        if self._checks_links() and switches and all(s._alive() for s in switches):
            self.drained = links.drain(self.net, self.topology, switches, self._host_base,
                                       DRAIN_TIMEOUT_S, paced=self.paced)
            if self.paced:
                self.host_drops = self.host_queue_drops()
            if self.drained:
                # Hosts muted, what their kernels sent until then is forwarded: a short quiet
                # then suffices, as no host can add a frame.
                self.mute_hosts()
                self.drained = links.drain(self.net, self.topology, switches, self._host_base,
                                           DRAIN_TIMEOUT_S, quiet_s=links.MUTED_QUIET_S)
        for s in switches:
            s._signal(signal.SIGTERM)
        for s in switches:
            self.stats[s.name] = s.stop_process()
        if self._checks_links() and self._host_base is not None:
            self.links = links.link_balance(self.topology, dict(self.stats),
                                            links.hosts_counters(self.net, self.topology),
                                            self._host_base)
            if self.drained:
                self.host_muted = self.host_queue_drops()
        return self.stats

    def stop(self):
        if self._stopped:
            return self.stats
        self._stopped = True
        # A second SIGTERM must not cut the teardown short.
        if self._old_handler is not None:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            try:
                # The hosts first, so that no frame enters the network while it drains.
                self.interrupt_commands()
                self.stop_programs()
                self.stop_switches()
            finally:
                self.stop_programs()
                if self.net is not None:
                    try:
                        self.net.stop()
                    except Exception:
                        pass
        finally:
            if self.state is not None:
                # Whatever net.stop did not remove (or a failed start left): by the record.
                cleanup.clean_state(self.state.data, wait_s=2.0)
                self.state.remove()
            self._end_reaper()
            if self._old_handler is not None:
                signal.signal(signal.SIGTERM, self._old_handler)
                self._old_handler = None
        return self.stats

    def stop_programs(self):
        """End what `popen` started: SIGTERM, a bounded wait, SIGKILL."""
        for p in self.procs:
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=3)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=3)
