"""The switch process: the sans-I/O `Switch` driven on real frames and the monotonic clock.

    python -m dlcp_emu.emu.datapath --config FILE.json

One process per switch, one AF_PACKET socket per port, one loop: wait on the sockets with a
timeout to the model's next event (microsecond resolution; timer slack is set to 1 ns so the
kernel wakes us on time), drain the ready sockets in bounded batches, parse each frame into a
`Packet` (`frames.py`), hand it to the model, then send what the model releases, with its
rewrites applied. How late each frame left against the model's schedule (`pkt.depart`) is
recorded: the emulation's fidelity. The loop is compiled (`native_loop.py`) when the model
is and nothing is captured, else Python's (`python_loop.py`); the stats say which (`loop`).

Mode `forward` skips the model (recv -> route -> send): the bare cost of the I/O, for the
benchmark. Broadcast and multicast frames are flooded on the loop-free tree ports the config
names; in model mode each copy is a Packet of its own, so it is paced and counted.

The config is a `config.SwitchProcessConfig`.

On SIGTERM/SIGINT the loop stops taking frames in, lets what the model holds leave on
schedule (at most drain_s), writes the final stats to `stats_path` and the process
exits 0. Stats are also written every `stats_interval_s` (by a thread), so a crash keeps
what was measured, and at once on SIGUSR1 (`snapshot` counts them: how a run draining its
network polls the switches' counters, see `emu/links.py`). The switch says it fell behind when its sockets dropped frames, its p99
lateness exceeds late_threshold_ns, or one packet left more than stall_limit_ns late (a p99
hides a single stall, which holds every packet the switch has).
"""
import gc
import os
import signal
import socket
import time

from switch_models import PipelineSpec

from dlcp_emu.jsonio import CheckpointWriter, write_json_atomic

from dlcp_emu.emu.datapath.config import SwitchProcessConfig, build_switch, flood_table, mac_bytes
from dlcp_emu.emu.datapath.forward import run_forward
from dlcp_emu.emu.datapath.frames import INVALID_DLCP, MALFORMED, make_parser
from dlcp_emu.emu.datapath.ingress import Ingress
from dlcp_emu.emu.datapath.lateness import Lateness
from dlcp_emu.emu.datapath.native_loop import NativeForwarder, NativeLoop, choose_loop
from dlcp_emu.emu.datapath.pcap import open_captures
from dlcp_emu.emu.datapath.queues import QueueSamples
from dlcp_emu.emu.datapath.python_loop import PythonReceive, run_model
from dlcp_emu.emu.datapath.sockets import (
    PR_SET_TIMERSLACK, RxRing, _prctl, drain_functions, interface_counters, interface_mtu,
    open_port_socket, send_functions, socket_stats,
)
from dlcp_emu.emu.datapath.stats import datapath_stats
from dlcp_emu.emu.lifeline import follow_parent


class Datapath:
    def __init__(self, cfg):
        if not isinstance(cfg, SwitchProcessConfig):
            raise TypeError(f"Datapath takes a SwitchProcessConfig, got {type(cfg).__name__}")
        self.cfg = cfg
        self.name = cfg.name
        self.mode = cfg.mode
        self.ports = sorted(cfg.ports, key=lambda p: p["number"])
        self.numbers = [p["number"] for p in self.ports]
        self.intf = {p["number"]: p["intf"] for p in self.ports}
        self.switch, self.engine, self.engine_note = build_switch(cfg) if self.mode == "model" else (None, None, None)
        self.queues = QueueSamples(cfg.queue_path, self.numbers) if cfg.queue_path and self.mode == "model" else None
        self.flood = flood_table(self.numbers, cfg.flood)
        self.routes = {mac_bytes(d): tuple(n) for d, n in cfg.routes.items()}
        self.lateness = Lateness()
        self.lateness.threshold = int(cfg.late_threshold_ns)
        self.rx_wait = Lateness()              # how long frames waited in the rx rings
        self.rx_wait.threshold = int(cfg.late_threshold_ns)
        self.clock_offset = time.time_ns() - time.monotonic_ns()   # ring times -> monotonic
        # The hosts' NIC queue, which a paced host's link replays (`ingress`).
        self.host_queue = PipelineSpec.parse(cfg.pipeline).host_queue if self.mode == "model" else "fifo"
        self.ingress = Ingress(self.ports, self.host_queue)
        self.parse = make_parser()
        self.housekeeping_interval_ns = int(cfg.stats_interval_s * 1e9)
        self.housekeeping_max_ns = 0    # the longest the loop spent on its stats, once a second
        self.send_ahead = 0         # ns before a departure the loop wakes (see _send_due)
        self.stopping = False
        self.report_now = False     # SIGUSR1: write the stats at once (a drain's poll)
        self.snapshots = 0          # stats written so far: tells a reader a fresh one
        # Stats while running, written off the forwarding loop (no thread without a file).
        self.checkpoints = CheckpointWriter() if cfg.stats_path else None
        self.socks = {}
        self.pcaps = []
        zero = dict.fromkeys(self.numbers, 0)
        self.rx_frames = dict(zero)          # frames read from each port
        self.tx_frames = dict(zero)          # forward mode (model mode derives it)
        self.tx_errors = dict(zero)
        self.rx_errors = dict(zero)
        self.socket_drops = dict(zero)       # frames the kernel dropped at a socket: ring full
        self.socket_frames = dict(zero)      # frames that reached its socket (those included)
        self.kernel_base = {}                # port -> interface_counters when we were ready
        self.kernel_now = {}                 # and at the last housekeeping
        self.flood_frames = dict(zero)       # flooded frames given to the model
        self.flood_copies = dict(zero)       # the copies they became
        self.not_flooded = dict(zero)        # broadcast frames with no tree port to go to
        self.refused = {MALFORMED: 0, INVALID_DLCP: 0}   # frames the parser refused, by reason
        self.no_route = 0                    # forward mode
        self.rewrite_errors = 0
        self.started_ns = None
        self.started_wall = None
        self.loops = 0
        self.loop, self.loop_note = None, None     # which forwarding loop runs, and why
        self.native_loop = None
        self.receive_side = PythonReceive(self)    # what the stats read of rings and links

    # -- set-up ------------------------------------------------------------------------
    def open(self):
        cfg = self.cfg
        if cfg.parent_pid:
            follow_parent(cfg.parent_pid, self.name)
        if cfg.cpu is not None:
            os.sched_setaffinity(0, {int(c) for c in cfg.cpu})
        if cfg.rt_priority:
            # A switch sleeps until its next departure; under the ordinary scheduler a busy
            # host process can hold the CPU for milliseconds past that time (lateness). As a
            # real-time task it runs as soon as it wakes; it sleeps between events, and the
            # kernel's RT throttling still bounds it if it ever spins.
            try:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(int(cfg.rt_priority)))
                self.realtime = True
            except OSError:
                self.realtime = False
        socks = {}
        try:
            for n in self.numbers:
                socks[n] = open_port_socket(self.intf[n])
        except OSError:
            for s in socks.values():
                s.close()
            raise
        self.attach(socks, max(interface_mtu(i) for i in self.intf.values()))
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGUSR1, self._on_report)

    def attach(self, socks, mtu=1500):
        """Take the port sockets ({port number: socket}, any datagram socket will do: unit
        tests use socketpairs) and prepare capture and the wake-up pipe."""
        cfg = self.cfg
        self.socks = dict(socks)
        self.rings = {}
        self.loop, self.loop_note = choose_loop(self.mode, self.engine or cfg.engine, cfg.pcap_dir)
        # A ring slot holds the frame after the kernel's tpacket header: the next power of
        # two above a full frame (2048 for 1500, 16384 for jumbo 9000).
        frame_size = max(2048, 1 << (mtu + 18 + 128 - 1).bit_length()) if cfg.rx_ring else 0
        if frame_size and self.loop != "native":
            for n, sock in self.socks.items():
                if sock.family == socket.AF_PACKET:
                    self.rings[n] = RxRing(sock, frame_size=frame_size)
        # Room for the largest frame (Ethernet header and a VLAN tag on top of the MTU):
        # recv allocates this much per call, so not 64 KB.
        self.bufsize = mtu + 18 + 1
        if cfg.pcap_dir:
            self.pcap_rx, self.pcap_tx = open_captures(cfg, self.intf)
            self.pcaps = [*self.pcap_rx.values(), *self.pcap_tx.values()]
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        if self.loop == "native":
            native = NativeLoop if self.mode == "model" else NativeForwarder
            self.native_loop = self.receive_side = native(self, frame_size)
        if frame_size:
            # Frames queued before a ring existed would keep the socket readable; they
            # arrived before we were ready: discard.
            for sock in self.socks.values():
                if sock.family == socket.AF_PACKET:
                    try:
                        while True:
                            sock.recv(65536)
                    except (BlockingIOError, InterruptedError):
                        pass
        for n, sock in self.socks.items():
            socket_stats(sock)            # the kernel's counts from here on (zeroed as read),
            if sock.family == socket.AF_PACKET:   # then the interface's (see count_kernel)
                k = interface_counters(self.intf[n])
                if k is not None:
                    self.kernel_base[n] = self.kernel_now[n] = k
        self.started_ns = time.monotonic_ns()
        self.started_wall = time.time()

    def _on_signal(self, signum, frame):
        # The wakeup fd already made select return; the loop sees the flag next round.
        self.stopping = True

    def _on_report(self, signum, frame):
        self.report_now = True

    def request_stop(self):
        """Stop the loop from another thread (tests): set the flag, wake the select."""
        self.stopping = True
        try:
            os.write(self.wake_w, b"x")
        except OSError:
            pass

    def ready(self):
        info = {"pid": os.getpid(), "name": self.name, "mode": self.mode,
                "ports": {n: self.intf[n] for n in self.numbers}}
        if self.cfg.ready_path:
            write_json_atomic(self.cfg.ready_path, info, indent=1, default=str)
        print(f"READY {self.name} pid={os.getpid()}", flush=True)

    def _senders(self):
        return send_functions(self.socks, self.pcap_tx if self.pcaps else None)

    def _peeks(self):
        """[(socket, ring.ready)] when every port has a ring, else None (select only)."""
        if self.rings and len(self.rings) == len(self.socks):
            return [(self.socks[n], self.rings[n].ready) for n in self.numbers]
        return None

    def _drains(self):
        return drain_functions(self.socks, self.rings, self.bufsize, self.rx_errors,
                               self.pcap_rx if self.pcaps else None)

    # -- the loops -----------------------------------------------------------------------
    def run(self):
        # Timed waits end when asked, not up to 50 us later (the default slack); the slack
        # is the calling thread's, so it is set by the thread that loops.
        _prctl(PR_SET_TIMERSLACK, 1)
        gc.collect()
        gc.freeze()
        # Packets form no cycles; the cyclic collector would only add pauses (lateness).
        gc.disable()
        try:
            if self.mode == "model":
                self._run_model()
            else:
                self._run_forward()
        finally:
            gc.enable()

    def _housekeeping_due(self):
        return time.monotonic_ns() + int(self.cfg.stats_interval_s * 1e9)

    def _run_model(self):
        if self.native_loop is not None:
            self.native_loop.run(self)
        else:
            run_model(self)

    def arrivals(self, got, now, floor):
        """[(arrival ns, port, frame)] due by `now` (see `Ingress.arrivals`)."""
        return self.ingress.arrivals(got, now, floor, self.clock_offset, self.rx_wait.pending.append)

    def _run_forward(self):
        if self.native_loop is not None:
            self.native_loop.run(self)
        else:
            run_forward(self)

    def _drain_wakeup(self):
        try:
            while os.read(self.wake_r, 512):
                pass
        except BlockingIOError:
            pass

    # -- stats ----------------------------------------------------------------------------
    def housekeeping(self, final=False):
        """Once a stats interval, and at the end: the kernel's counters, the queue samples'
        file, the stats' checkpoint. The compiled loop runs `snapshot` on its thread and the
        rest on a `Housekeeper`'s."""
        self.count_kernel()
        self.record(self.snapshot(final))

    def snapshot(self, final=False):
        """What only the loop's thread may read (the model's state, the loop's measurements),
        as a job for `record`: (final, queue rows, stats or None)."""
        self.report_now = False
        self.snapshots += 1
        self.lateness.fold()
        self.rx_wait.fold()
        self.clock_offset = time.time_ns() - time.monotonic_ns()   # follows a clock step
        for p in self.pcaps:
            p.flush()
        rows = self.queues.take() if self.queues is not None else None
        return final, rows, self.stats(final) if self.cfg.stats_path else None

    def record(self, job):
        """Write what `snapshot` took; reads none of the loop's state."""
        final, rows, stats = job
        if self.queues is not None:
            self.queues.write(rows, final)
        if stats is None:
            return
        if final:
            self.checkpoints.close()
            write_json_atomic(self.cfg.stats_path, stats, indent=1, default=str)
        else:
            # No indent: the indenting encoder leaves closure cycles the disabled gc keeps.
            self.checkpoints.write(self.cfg.stats_path, stats, default=str)

    def count_kernel(self):
        """Each port's counts: the interface's first, then its socket's, so that a frame that
        arrives between the two reads shows as missing (see `kernel_discarded`), never as
        discarded by the kernel."""
        for n, s in self.socks.items():
            k = interface_counters(self.intf[n]) if n in self.kernel_base else None
            packets, drops = socket_stats(s)
            self.socket_frames[n] += packets
            self.socket_drops[n] += drops
            if k is not None:
                self.kernel_now[n] = k

    def kernel_discarded(self):
        """{port: frames the kernel received on the port and discarded before any socket saw
        them}: its receive count less what reached our socket. The case known: an 802.1Q or
        802.1ad frame of 14 to 19 bytes, too short for its tag, which the kernel frees
        uncounted while it takes the tag out (skb_vlan_untag)."""
        return {n: now[0] - self.kernel_base[n][0] - self.socket_frames[n]
                for n, now in self.kernel_now.items()}

    def kernel_tx_dropped(self):
        """{port: frames the kernel could not hand to the link's other end}: a veth refuses a
        frame whose receiver's backlog is full (the send fails: `tx_refused`), and the
        receiving kernel counts it among its own drops (links.py)."""
        return {n: now[1] - self.kernel_base[n][1] for n, now in self.kernel_now.items()}

    def stats(self, final=False):
        return datapath_stats(self, final)

    def close(self):
        self.native_loop = None         # unmaps its rings
        for r in getattr(self, "rings", {}).values():
            r.close()
        for s in self.socks.values():
            s.close()
        for p in self.pcaps:
            p.close()
        for fd in (getattr(self, "wake_r", None), getattr(self, "wake_w", None)):
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.wake_r = self.wake_w = None
