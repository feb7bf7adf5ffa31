"""The switch process: the sans-I/O `Switch` driven on real frames and the monotonic clock.

    python -m dlcp_emu.emu.datapath.process --config FILE.json

One process per switch, one AF_PACKET socket per port, one loop: `select` on the sockets
with a timeout to the model's next event (select has microsecond resolution, poll/epoll only
milliseconds; timer slack is set to 1 ns so the kernel wakes us on time), drain the ready
sockets in bounded batches, parse each frame into a `Packet` (`frames.py`), hand it to the
model, then send what the model releases, with its rewrites applied. How late each frame
left against the model's schedule (`pkt.depart`) is recorded: the emulation's fidelity.

Mode `forward` skips the model (recv -> route -> send): the bare cost of the I/O, for the
benchmark. Broadcast and multicast frames are flooded on the loop-free tree ports the config
names; in model mode each copy is a Packet of its own, so it is paced and counted.

Config (JSON)::

    {"name": "s1", "mode": "model" | "forward", "pipeline": "dlcp" or a spec table,
     "seed": 0,
     "ports": [{"number": 1, "intf": "s1-eth1", "rate_bps": 1e8, "delay_ns": 0,
                "buffer_bytes": 262144, "peer_paced": false}, ...],
     "routes": {"00:00:00:00:00:01": [1], ...},      # dst MAC -> equal-cost egress ports
     "flood": [1, 2, 3],                               # ports on the flood tree
     "stats_path": "...json", "ready_path": "...", "pcap_dir": null,
     "stats_interval_s": 1.0, "late_threshold_ns": 1000000, "stall_limit_ns": 20000000,
     "batch": 64,
     "parent_pid": null, "cpu": null, "rx_ring": true, "drain_s": 2.0}

On SIGTERM/SIGINT the loop stops taking frames in, lets what the model holds leave on
schedule (at most drain_s), writes the final stats to `stats_path` and the process
exits 0. Stats are also written every `stats_interval_s` (by a thread), so a crash keeps
what was measured. The switch says it fell behind when its sockets dropped frames, its p99
lateness exceeds late_threshold_ns, or one packet left more than stall_limit_ns late (a p99
hides a single stall, which holds every packet the switch has).
"""
import argparse
import ctypes
import gc
import heapq
import itertools
import json
import os
import select
import signal
import socket
import struct
import sys
import time
from operator import itemgetter

from dlcp_emu.jsonio import CheckpointWriter, write_json_atomic

from dlcp_emu.emu.datapath.frames import apply_rewrite, copy_for, make_parser
from switch_models import HostNic, PortConfig, Switch

ETH_P_ALL = 3
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_STATISTICS = 6
PACKET_IGNORE_OUTGOING = 23
SO_SNDBUFFORCE = 32
SO_RCVBUFFORCE = 33
PR_SET_PDEATHSIG = 1
PR_SET_TIMERSLACK = 29

SOCKET_BUFFER = 4 << 20
MAX_SEND_AHEAD_NS = 200_000
SEND_AHEAD_STEP_NS = 1_000
RUNT_KEY = b"\x00" * 6      # route key of frames too short to carry a MAC: never routed

MODES = ("model", "forward")
CONFIG_KEYS = {"name", "mode", "pipeline", "seed", "ports", "routes", "flood", "stats_path",
               "ready_path", "pcap_dir", "stats_interval_s", "late_threshold_ns", "stall_limit_ns",
               "batch", "parent_pid", "cpu", "rx_ring", "drain_s", "rt_priority",
               "queue_sample_ns", "queue_samples_max"}
PORT_KEYS = {"number", "intf", "rate_bps", "delay_ns", "buffer_bytes", "peer_paced"}


class ConfigError(ValueError):
    """The switch config is missing something or has a bad value; the message says what."""


# -- config ------------------------------------------------------------------------------

def mac_bytes(text):
    parts = text.split(":")
    if len(parts) != 6 or not all(len(p) == 2 for p in parts):
        raise ConfigError(f"route key {text!r} is not a MAC like '00:00:00:00:00:01'")
    try:
        return bytes.fromhex("".join(parts))
    except ValueError:
        raise ConfigError(f"route key {text!r} is not a MAC like '00:00:00:00:00:01'") from None


def load_config(cfg):
    """Check a config mapping and fill defaults; raises ConfigError naming the bad field."""
    if not isinstance(cfg, dict):
        raise ConfigError("config must be a JSON object")
    out = dict(cfg)
    for key in ("name", "ports"):
        if key not in out:
            raise ConfigError(f"config needs {key!r}")
    out.setdefault("mode", "model")
    if out["mode"] not in MODES:
        raise ConfigError(f"mode must be one of {MODES}, got {out['mode']!r}")
    out.setdefault("pipeline", "fifo")
    out.setdefault("seed", 0)
    out.setdefault("routes", {})
    out.setdefault("flood", [])
    out.setdefault("stats_path", None)
    out.setdefault("ready_path", None)
    out.setdefault("pcap_dir", None)
    out.setdefault("stats_interval_s", 1.0)
    out.setdefault("late_threshold_ns", 1_000_000)
    out.setdefault("stall_limit_ns", 20_000_000)
    out.setdefault("batch", 64)
    out.setdefault("parent_pid", None)
    out.setdefault("cpu", None)
    out.setdefault("rx_ring", True)
    out.setdefault("drain_s", 2.0)
    out.setdefault("rt_priority", None)
    out.setdefault("queue_sample_ns", 1_000_000)
    out.setdefault("queue_samples_max", 200_000)
    unknown = sorted(set(out) - CONFIG_KEYS)
    if unknown:
        raise ConfigError(f"unknown config fields {unknown}; allowed: {sorted(CONFIG_KEYS)}")
    rt = out["rt_priority"]
    if rt is not None and not (isinstance(rt, int) and 1 <= rt <= 99):
        raise ConfigError(f"rt_priority must be null or an integer in 1..99, got {rt!r}")
    ports = out["ports"]
    if not isinstance(ports, list) or not ports:
        raise ConfigError("ports must be a non-empty list of {number, intf, rate_bps, ...}")
    numbers = set()
    for p in ports:
        if not isinstance(p, dict) or "number" not in p or "intf" not in p:
            raise ConfigError(f"each port needs 'number' and 'intf', got {p!r}")
        if not isinstance(p["number"], int) or p["number"] < 1 or p["number"] in numbers:
            raise ConfigError(f"port numbers must be distinct integers >= 1, got {p['number']!r}")
        numbers.add(p["number"])
        unknown = sorted(set(p) - PORT_KEYS)
        if unknown:
            raise ConfigError(f"port {p['number']}: unknown fields {unknown}; allowed: {sorted(PORT_KEYS)}")
        if not isinstance(p.get("peer_paced", False), bool):
            raise ConfigError(f"port {p['number']}: peer_paced must be true or false, got {p['peer_paced']!r}")
        if out["mode"] == "model" and "rate_bps" not in p:
            raise ConfigError(f"port {p['number']} needs rate_bps in model mode")
    for dst, nums in out["routes"].items():
        mac_bytes(dst)
        if not nums or any(n not in numbers for n in nums):
            raise ConfigError(f"route to {dst} names ports {nums}; ports are {sorted(numbers)}")
    bad = [n for n in out["flood"] if n not in numbers]
    if bad:
        raise ConfigError(f"flood ports {bad} are not ports of this switch ({sorted(numbers)})")
    if not isinstance(out["batch"], int) or out["batch"] < 1:
        raise ConfigError(f"batch must be an integer >= 1, got {out['batch']!r}")
    return out


def flood_table(port_numbers, flood_ports):
    """in port -> egress ports of a flooded frame: every tree port but the input one. A frame
    that arrives on a port off the tree is not flooded (it could only be looping)."""
    tree = [n for n in port_numbers if n in set(flood_ports)]
    return {n: (tuple(q for q in tree if q != n) if n in tree else ()) for n in port_numbers}


def build_switch(cfg):
    """The model for a config: routes keyed by destination MAC bytes, plus one key per port
    (its number) that routes a flood copy out of that port alone."""
    ports = {p["number"]: PortConfig(float(p["rate_bps"]), int(p.get("delay_ns", 0)),
                                     int(p.get("buffer_bytes", 256 * 1024)))
             for p in cfg["ports"]}
    routes = {mac_bytes(dst): tuple(nums) for dst, nums in cfg["routes"].items()}
    routes.update({n: (n,) for n in ports})
    return Switch(cfg["name"], ports, routes, cfg["pipeline"], seed=cfg["seed"])


# -- lateness ------------------------------------------------------------------------------

class Lateness:
    """How late frames left against the model's schedule, as a log-spaced histogram: values
    are appended to a plain list in the hot path and folded in with numpy now and then, so
    memory stays bounded and the per-packet cost is one list append."""

    PER_DECADE = 50

    def __init__(self):
        import numpy as np
        self.np = np
        # Bin 0 holds [0, 100 ns); then 50 bins a decade up to 1000 s.
        self.edges = np.concatenate(([0.0], np.logspace(2, 12, 10 * self.PER_DECADE + 1)))
        self.counts = np.zeros(len(self.edges) - 1, dtype=np.int64)
        self.pending = []
        self.n = 0
        self.total = 0
        self.max = 0
        self.above = 0          # packets later than the threshold
        self.threshold = 0

    def fold(self):
        if not self.pending:
            return
        np = self.np
        a = np.asarray(self.pending, dtype=np.int64)
        self.pending.clear()
        a = np.maximum(a, 0)
        self.n += len(a)
        self.total += int(a.sum())
        self.max = max(self.max, int(a.max()))
        self.above += int((a > self.threshold).sum())
        a = np.minimum(a, self.edges[-1] - 1)
        self.counts += np.histogram(a, bins=self.edges)[0]

    def percentile(self, q):
        """Upper edge of the bin holding the q-th percentile (within 5%), capped at the max."""
        if not self.n:
            return None
        rank = q / 100 * self.n
        cum = self.np.cumsum(self.counts)
        i = int(self.np.searchsorted(cum, rank, side="left"))
        i = min(i, len(self.counts) - 1)
        return int(min(self.edges[i + 1], self.max))

    def summary(self):
        self.fold()
        return {"count": self.n,
                "mean_ns": round(self.total / self.n) if self.n else None,
                "p50_ns": self.percentile(50), "p99_ns": self.percentile(99),
                "p999_ns": self.percentile(99.9), "max_ns": self.max if self.n else None,
                "above_threshold": self.above, "threshold_ns": self.threshold}


# -- pcap ------------------------------------------------------------------------------------

PCAP_NSEC_MAGIC = 0xA1B23C4D
LINKTYPE_ETHERNET = 1
_PCAP_HEADER = struct.Struct("<IHHiIII")
_PCAP_RECORD = struct.Struct("<IIII")


class PcapWriter:
    """libpcap with nanosecond timestamps, written with struct (scapy is far too slow per
    packet); readable by tcpdump -r and scapy's rdpcap."""

    def __init__(self, path, snaplen=65535):
        self.path = path
        self.f = open(path, "wb", buffering=1 << 20)
        self.f.write(_PCAP_HEADER.pack(PCAP_NSEC_MAGIC, 2, 4, 0, 0, snaplen, LINKTYPE_ETHERNET))
        self.pack = _PCAP_RECORD.pack
        self.write_ = self.f.write
        self.packets = 0

    def write(self, frame, t_ns=None):
        if t_ns is None:
            t_ns = time.time_ns()
        n = len(frame)
        self.write_(self.pack(t_ns // 1_000_000_000, t_ns % 1_000_000_000, n, n))
        self.write_(frame)
        self.packets += 1

    def flush(self):
        self.f.flush()

    def close(self):
        self.f.close()


# -- sockets -----------------------------------------------------------------------------------

def open_port_socket(intf):
    """A non-blocking AF_PACKET socket on one interface: all protocols, promiscuous, our own
    transmissions ignored, large buffers so bursts wait in the kernel rather than drop."""
    # Protocol 0 until bound: an ETH_P_ALL socket would see every interface's frames first.
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    try:
        s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        for force, plain in ((SO_RCVBUFFORCE, socket.SO_RCVBUF), (SO_SNDBUFFORCE, socket.SO_SNDBUF)):
            try:
                s.setsockopt(socket.SOL_SOCKET, force, SOCKET_BUFFER)
            except OSError:          # not CAP_NET_ADMIN: capped at net.core.*mem_max
                s.setsockopt(socket.SOL_SOCKET, plain, SOCKET_BUFFER)
        s.bind((intf, ETH_P_ALL))
        ifindex = socket.if_nametoindex(intf)
        s.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP,
                     struct.pack("iHH8s", ifindex, PACKET_MR_PROMISC, 0, b""))
        s.setblocking(False)
    except OSError as e:
        s.close()
        raise OSError(e.errno, f"cannot open AF_PACKET socket on {intf}: {e.strerror}") from None
    return s


PACKET_RX_RING = 5
PACKET_VERSION = 10
TPACKET_V2 = 1
TP_STATUS_USER = 1
# struct tpacket2_hdr: tp_status, tp_len, tp_snaplen, tp_mac, tp_net, tp_sec, tp_nsec (then
# vlan). tp_sec/tp_nsec: when the kernel delivered the frame (CLOCK_REALTIME).
_TP2_HDR = struct.Struct("=IIIHHII")
_ZERO32 = struct.Struct("=I")


class RxRing:
    """PACKET_RX_RING (TPACKET_V2) on a port socket: the kernel writes frames into a shared
    ring in the sender's context and we read them without a syscall per frame (recv costs
    about a microsecond a frame here, most of it the syscall). `drain(n)` returns up to n
    frames as bytes and hands their slots back."""

    def __init__(self, sock, frame_size=2048, block_size=1 << 16, block_nr=128):
        import mmap
        sock.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V2)
        sock.setsockopt(SOL_PACKET, PACKET_RX_RING,
                        struct.pack("IIII", block_size, block_nr, frame_size,
                                    block_size // frame_size * block_nr))
        self.frame_size = frame_size
        self.frames = block_size // frame_size * block_nr
        self.mm = mmap.mmap(sock.fileno(), block_size * block_nr, mmap.MAP_SHARED,
                            mmap.PROT_READ | mmap.PROT_WRITE)
        self.i = 0
        self.truncated = 0
        self.resyncs = 0

    def drain(self, n):
        mm = self.mm
        fs = self.frame_size
        total = self.frames
        unpack = _TP2_HDR.unpack_from
        clear = _ZERO32.pack_into
        i = self.i
        out = []
        append = out.append
        stamps = []
        stamp = stamps.append
        if not unpack(mm, i * fs)[0] & TP_STATUS_USER:
            # Called because select said frames wait, yet our next slot is empty: we lost
            # step with the kernel's head (seen after heavy overload), so find the frames.
            i = self._resync()
        while n:
            off = i * fs
            status, length, snap, mac, _net, sec, nsec = unpack(mm, off)
            if not status & TP_STATUS_USER:
                break
            if snap == length:
                append(mm[off + mac:off + mac + snap])
                stamp(sec * 1_000_000_000 + nsec)
            else:
                self.truncated += 1          # larger than a ring slot: cannot forward it
            clear(mm, off, 0)                # slot back to the kernel
            i += 1
            if i == total:
                i = 0
            n -= 1
        self.i = i
        return out, stamps

    def _resync(self):
        """Move to the first slot holding a frame after ours, wrapping (the oldest of the
        run of waiting frames); stay if none does (the kernel is still copying one in)."""
        mm, fs, total, i = self.mm, self.frame_size, self.frames, self.i
        status = _ZERO32.unpack_from
        for k in range(1, total):
            j = (i + k) % total
            if status(mm, j * fs)[0] & TP_STATUS_USER:
                self.resyncs += 1
                self.i = j
                return j
        return i

    def state(self):
        """Where we read and how many slots hold frames (a diagnostic: scans the ring)."""
        user = [k for k in range(self.frames)
                if _ZERO32.unpack_from(self.mm, k * self.frame_size)[0] & TP_STATUS_USER]
        return {"next": self.i, "slots": self.frames, "waiting": len(user),
                "first_waiting": user[0] if user else None, "truncated": self.truncated,
                "resyncs": self.resyncs}

    def ready(self):
        """A frame waits in the next slot (no syscall: one read of its status word)."""
        return _ZERO32.unpack_from(self.mm, self.i * self.frame_size)[0] & TP_STATUS_USER

    def close(self):
        self.mm.close()


def socket_drops(sock):
    """Frames the kernel dropped on this socket's receive queue since the last call."""
    try:
        _, drops = struct.unpack("II", sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
    except OSError:
        return 0
    return drops


def interface_mtu(intf):
    try:
        with open(f"/sys/class/net/{intf}/mtu") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 1500


def _prctl(option, value):
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


# -- the switch process ------------------------------------------------------------------

class Datapath:
    def __init__(self, cfg):
        self.cfg = cfg = load_config(cfg)
        self.name = cfg["name"]
        self.mode = cfg["mode"]
        self.ports = sorted(cfg["ports"], key=lambda p: p["number"])
        self.numbers = [p["number"] for p in self.ports]
        self.intf = {p["number"]: p["intf"] for p in self.ports}
        self.switch = build_switch(cfg) if self.mode == "model" else None
        self.queue_samples = []   # (t_ns, queued bytes of each port in self.numbers order)
        self.flood = flood_table(self.numbers, cfg["flood"])
        self.routes = {mac_bytes(d): tuple(n) for d, n in cfg["routes"].items()}
        self.lateness = Lateness()
        self.lateness.threshold = int(cfg["late_threshold_ns"])
        self.rx_wait = Lateness()              # how long frames waited in the rx rings
        self.rx_wait.threshold = int(cfg["late_threshold_ns"])
        self.clock_offset = time.time_ns() - time.monotonic_ns()   # ring times -> monotonic
        # Ports whose peer is a host paced by a token bucket (see _arrivals): the host's NIC
        # and link, as the simulator models them.
        self.ingress = {p["number"]: HostNic(float(p["rate_bps"]), int(p.get("delay_ns", 0)))
                        for p in self.ports if p.get("peer_paced")}
        self.arriving = []          # heap of (arrival ns, seq, port, frame) still on the wire
        self.arriving_seq = itertools.count()
        self.parse = make_parser()
        self.housekeeping_interval_ns = int(cfg["stats_interval_s"] * 1e9)
        self.housekeeping_max_ns = 0    # the longest the loop spent on its stats, once a second
        self.send_ahead = 0         # ns before a departure the loop wakes (see _send_due)
        self.stopping = False
        # Stats while running, written off the forwarding loop (no thread without a file).
        self.checkpoints = CheckpointWriter() if cfg["stats_path"] else None
        self.socks = {}
        self.pcaps = []
        zero = dict.fromkeys(self.numbers, 0)
        self.rx_frames = dict(zero)          # forward mode (model mode derives it)
        self.tx_frames = dict(zero)
        self.tx_errors = dict(zero)
        self.rx_errors = dict(zero)
        self.socket_drops = dict(zero)
        self.flood_frames = dict(zero)       # flooded frames given to the model
        self.flood_copies = dict(zero)       # the copies they became
        self.not_flooded = dict(zero)        # broadcast frames with no tree port to go to
        self.no_route = 0                    # forward mode
        self.rewrite_errors = 0
        self.started_ns = None
        self.started_wall = None
        self.loops = 0

    # -- set-up ------------------------------------------------------------------------
    def open(self):
        cfg = self.cfg
        if cfg["parent_pid"]:
            _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
            if os.getppid() != cfg["parent_pid"]:
                raise SystemExit(f"{self.name}: parent {cfg['parent_pid']} is gone")
        _prctl(PR_SET_TIMERSLACK, 1)
        if cfg["cpu"] is not None:
            os.sched_setaffinity(0, {int(cfg["cpu"])})
        if cfg["rt_priority"]:
            # A switch sleeps until its next departure; under the ordinary scheduler a busy
            # host process can hold the CPU for milliseconds past that time (lateness). As a
            # real-time task it runs as soon as it wakes; it sleeps between events, and the
            # kernel's RT throttling still bounds it if it ever spins.
            try:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(int(cfg["rt_priority"])))
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
        for s in socks.values():
            socket_drops(s)               # reset the kernel's counters
        self.attach(socks, max(interface_mtu(i) for i in self.intf.values()))
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)

    def attach(self, socks, mtu=1500):
        """Take the port sockets ({port number: socket}, any datagram socket will do: unit
        tests use socketpairs) and prepare capture and the wake-up pipe."""
        cfg = self.cfg
        self.socks = dict(socks)
        self.rings = {}
        if cfg["rx_ring"]:
            # A ring slot holds the frame after the kernel's tpacket header: the next power
            # of two above a full frame (2048 for 1500, 16384 for jumbo 9000).
            frame_size = 1 << (mtu + 18 + 128 - 1).bit_length()
            for n, sock in self.socks.items():
                if sock.family == socket.AF_PACKET:
                    self.rings[n] = RxRing(sock, frame_size=max(2048, frame_size))
                    # Frames queued before the ring existed would keep select reporting
                    # the socket readable; they arrived before we were ready: discard.
                    try:
                        while True:
                            sock.recv(65536)
                    except (BlockingIOError, InterruptedError):
                        pass
        # Room for the largest frame (Ethernet header and a VLAN tag on top of the MTU):
        # recv allocates this much per call, so not 64 KB.
        self.bufsize = mtu + 18 + 1
        if cfg["pcap_dir"]:
            os.makedirs(cfg["pcap_dir"], exist_ok=True)
            self.pcap_rx = {n: PcapWriter(os.path.join(cfg["pcap_dir"], f"{self.intf[n]}-rx.pcap"))
                            for n in self.numbers}
            self.pcap_tx = {n: PcapWriter(os.path.join(cfg["pcap_dir"], f"{self.intf[n]}-tx.pcap"))
                            for n in self.numbers}
            self.pcaps = [*self.pcap_rx.values(), *self.pcap_tx.values()]
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        self.started_ns = time.monotonic_ns()
        self.started_wall = time.time()

    def _on_signal(self, signum, frame):
        # The wakeup fd already made select return; the loop sees the flag next round.
        self.stopping = True

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
        if self.cfg["ready_path"]:
            write_json_atomic(self.cfg["ready_path"], info, indent=1, default=str)
        print(f"READY {self.name} pid={os.getpid()}", flush=True)

    def _senders(self):
        """port -> send function; with capture on, one that also writes the pcap."""
        sends = {}
        for n, s in self.socks.items():
            if self.pcaps:
                cap = self.pcap_tx[n].write
                raw = s.send

                def send(frame, raw=raw, cap=cap):
                    cap(frame)
                    return raw(frame)
                sends[n] = send
            else:
                sends[n] = s.send
        return sends

    def _peeks(self):
        """[(socket, ring.ready)] when every port has a ring, else None (select only)."""
        if self.rings and len(self.rings) == len(self.socks):
            return [(self.socks[n], self.rings[n].ready) for n in self.numbers]
        return None

    def _drains(self):
        """port -> drain(n): up to n received frames (a list) and the kernel's delivery time
        of each (CLOCK_REALTIME ns), from the ring if there is one; else by recv until the
        socket would block, with no times (None). With capture on, each is also written."""
        drains = {}
        bufsize = self.bufsize
        rx_errors = self.rx_errors
        for n, s in self.socks.items():
            ring = self.rings.get(n)
            if ring is not None:
                drain = ring.drain
            else:
                def drain(k, recv=s.recv, port=n):
                    out = []
                    append = out.append
                    while k:
                        try:
                            append(recv(bufsize))
                        except BlockingIOError:
                            break
                        except OSError:
                            rx_errors[port] += 1
                            break
                        k -= 1
                    return out, None
            if self.pcaps:
                def drain(k, raw=drain, cap=self.pcap_rx[n].write):
                    frames, stamps = raw(k)
                    for f, t in zip(frames, stamps or [None] * len(frames)):
                        cap(f, t)
                    return frames, stamps
            drains[n] = drain
        return drains

    # -- the loops -----------------------------------------------------------------------
    def run(self):
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
        return time.monotonic_ns() + int(self.cfg["stats_interval_s"] * 1e9)

    def _run_model(self):
        sw = self.switch
        next_event = sw.next_event_time
        clock = time.monotonic_ns
        sel = select.select
        batch = self.cfg["batch"]
        lat = self.lateness.pending
        lat_limit = 1 << 16
        waits = self.rx_wait.pending
        arriving = self.arriving
        drains = self._drains()
        by_sock = {self.socks[n]: (n, drains[n]) for n in self.numbers}
        rlist = [*by_sock, self.wake_r]
        peeks = self._peeks()
        sends = self._send_table()
        arrivals, take, send_due = self._arrivals, self._take, self._send_due
        housekeeping = self._housekeeping_due()
        idle = self.cfg["stats_interval_s"]
        samples = self.queue_samples
        sample_ports = [sw.ports[n] for n in self.numbers]
        sample_ns, max_samples = int(self.cfg["queue_sample_ns"]), int(self.cfg["queue_samples_max"])
        next_sample = 0
        floor = 0           # the model's clock so far: arrivals are never given one earlier
        loops = 0
        while not self.stopping:
            loops += 1
            t = next_event()
            if t is not None:
                t -= self.send_ahead
            if arriving and (t is None or arriving[0][0] < t):
                t = arriving[0][0]
            now = clock()
            if now >= housekeeping or len(lat) > lat_limit or len(waits) > lat_limit:
                self.loops = loops
                self.housekeeping()
                housekeeping = self._housekeeping_due()
                took = housekeeping - now - self.housekeeping_interval_ns
                if took > self.housekeeping_max_ns:
                    self.housekeeping_max_ns = took
            if t is None:
                timeout = idle
            else:
                timeout = (t - now) * 1e-9
                if timeout < 0:
                    timeout = 0
            # With rings, frames already waiting are seen without a syscall; select (and a
            # sleep, and the sender's wake-up of us) only when every ring is empty.
            ready = [s for s, peek in peeks if peek()] if peeks else None
            if not ready:
                ready = sel(rlist, (), (), timeout)[0]
            got = []
            for sock in ready:
                entry = by_sock.get(sock)
                if entry is None:
                    self._drain_wakeup()
                    continue
                port, drain = entry
                frames, stamps = drain(batch)
                if frames:
                    got.append((port, frames, stamps))
            if got or arriving:
                due = arrivals(got, clock(), floor)
                if due:
                    take(due)
            now = clock()
            if now >= next_sample and len(samples) < max_samples:
                # Queue occupancy over time, for the report's bottleneck plot.
                samples.append((now, *[p.bytes for p in sample_ports]))
                next_sample = now + sample_ns
            floor = now + self.send_ahead
            send_due(floor, sends)
        self.loops = loops
        self._drain_model(sends, floor)

    def _arrivals(self, got, now, floor):
        """[(arrival ns, port, frame)] due by `now`, in order of arrival, from the frames
        just read ([(port, frames, kernel times or None)]) and those still on an ingress
        link (`arriving`).

        A frame arrived when the kernel delivered it, not when we read it: a loop that was
        late (descheduled, busy sending) then only makes packets late by what exceeds their
        own slack (serialisation, queueing), and that shows as lateness instead of silently
        shifting the schedule. How long frames waited in the rings is kept (`rx_wait`).

        A port whose peer is a paced host (`peer_paced`) emulates the host's link: its token
        bucket hands a frame over when the frame's first bit would leave a real NIC, so the
        frame arrives whole one serialisation (plus the link's delay) later, after the frame
        before it. Without this every host-to-switch hop was one frame time early against
        the simulator's NIC (emulated runs 1-3% fast). Frames not yet arrived wait in a heap.

        The model's clock never runs back: a frame due before our last poll arrives at that
        poll (`floor`)."""
        wait = self.rx_wait.pending.append
        offset = self.clock_offset
        ingress, arriving = self.ingress, self.arriving
        out = []
        append = out.append
        sources = len(got)
        for port, frames, stamps in got:
            nic = ingress.get(port)
            ring = stamps is not None
            if not ring:                     # read time is all we know, and no wait to keep
                stamps = [now + offset] * len(frames)
            for f, st in zip(frames, stamps):
                t = st - offset
                if t > now:
                    t = now
                if ring:
                    wait(now - t)
                if nic is not None:
                    t = nic.transmit(len(f), t)
                    if t is None:
                        continue   # counted by the NIC (its drops are in the stats)
                    if t > now:
                        heapq.heappush(arriving, (t, next(self.arriving_seq), port, f))
                        continue
                append((t if t > floor else floor, port, f))
        if arriving and arriving[0][0] <= now:
            sources += 1
            pop = heapq.heappop
            while arriving and arriving[0][0] <= now:
                t, _, port, f = pop(arriving)
                append((t if t > floor else floor, port, f))
        if sources > 1:
            out.sort(key=itemgetter(0))
        return out

    def _take(self, due):
        """Hand frames to the model ([(arrival ns, port, frame)]); a broadcast becomes one
        packet per tree port it is flooded to."""
        parse, receive, copy = self.parse, self.switch.receive, copy_for
        flood = self.flood
        for t, port, frame in due:
            pkt = parse(frame)
            if frame[0] & 1:            # group bit of the destination MAC
                outs = flood[port]
                if not outs:
                    self.not_flooded[port] += 1
                    continue
                self.flood_frames[port] += 1
                self.flood_copies[port] += len(outs)
                for q in outs:
                    receive(copy(pkt, q), port, t)
            else:
                receive(pkt, port, t)

    def _send_table(self):
        """[send function], indexed by port number."""
        sends = [None] * (max(self.numbers) + 1)
        for n, f in self._senders().items():
            sends[n] = f
        return sends

    def _send_due(self, until, sends):
        """Send what the model releases by `until`, with its rewrites, and record how late
        each frame left against its scheduled departure.

        The loop wakes `send_ahead` ns before a departure: waking from select and sending
        takes tens of microseconds here (p50 55 us), and a frame that leaves late arrives late
        at the next hop, whose kernel time then carries the delay on (every switch on a path
        adds its own). send_ahead follows the median of that delay (a step up for each frame
        that left late, one down for each that left early, between 0 and MAX_SEND_AHEAD_NS),
        so that frames leave on schedule, half a little early, half a little late."""
        clock = time.monotonic_ns
        lat_append = self.lateness.pending.append
        tx_errors = self.tx_errors
        ahead = self.send_ahead
        for port, pkt in self.switch.poll(until):
            frame = pkt.frame
            if pkt.rewrite:
                try:
                    frame = apply_rewrite(pkt)
                except ValueError:
                    self.rewrite_errors += 1
            late = clock() - pkt.depart
            lat_append(late)
            if late > 0:
                if ahead < MAX_SEND_AHEAD_NS:
                    ahead += SEND_AHEAD_STEP_NS
            elif ahead > 0:
                ahead -= SEND_AHEAD_STEP_NS
            try:
                sends[port](frame)
            except OSError:
                tx_errors[port] += 1
        self.send_ahead = ahead

    def _drain_model(self, sends, floor):
        """After a stop request: read nothing more, but let what the model holds, and the
        frames still on an ingress link, go on on schedule (bounded by drain_s), so that a
        run's last packets are delivered and its stats end with empty queues. Frames still
        on a link at the deadline are given to the model then, so that they are counted."""
        sw = self.switch
        clock = time.monotonic_ns
        deadline = clock() + int(self.cfg["drain_s"] * 1e9)
        arriving = self.arriving
        while True:
            t = sw.next_event_time()
            if arriving and (t is None or arriving[0][0] < t):
                t = arriving[0][0]
            now = clock()
            if t is None or now > deadline:
                break
            if t > now:
                select.select((), (), (), min(t, deadline) / 1e9 - now / 1e9)
            now = clock()
            due = self._arrivals([], now, floor)
            if due:
                self._take(due)
            floor = now
            self._send_due(now, sends)
        if arriving:
            self._take([(max(t, floor), port, f) for t, _, port, f in sorted(arriving)])
            arriving.clear()

    def _run_forward(self):
        """No model: straight from the input socket to the output one."""
        sel = select.select
        batch = self.cfg["batch"]
        drains = self._drains()
        sends = self._senders()
        by_sock = {self.socks[n]: (n, drains[n]) for n in self.numbers}
        rlist = [*by_sock, self.wake_r]
        peeks = self._peeks()
        unicast = {dst: (ports[0], sends[ports[0]]) for dst, ports in self.routes.items()}
        flood = {n: tuple((q, sends[q]) for q in qs) for n, qs in self.flood.items()}
        rx, tx, tx_errors = self.rx_frames, self.tx_frames, self.tx_errors
        get = unicast.get
        housekeeping = self._housekeeping_due()
        idle = self.cfg["stats_interval_s"]
        clock = time.monotonic_ns
        loops = 0
        while not self.stopping:
            loops += 1
            if clock() >= housekeeping:
                self.loops = loops
                self.housekeeping()
                housekeeping = self._housekeeping_due()
            ready = [s for s, peek in peeks if peek()] if peeks else None
            if not ready:
                ready = sel(rlist, (), (), idle)[0]
            for sock in ready:
                entry = by_sock.get(sock)
                if entry is None:
                    self._drain_wakeup()
                    continue
                port, drain = entry
                for frame in drain(batch)[0]:
                    rx[port] += 1
                    if frame[0] & 1:
                        for q, send in flood[port]:
                            try:
                                send(frame)
                                tx[q] += 1
                            except OSError:
                                tx_errors[q] += 1
                        continue
                    hop = get(frame[:6])
                    if hop is None:
                        self.no_route += 1
                        continue
                    try:
                        hop[1](frame)
                        tx[hop[0]] += 1
                    except OSError:
                        tx_errors[hop[0]] += 1
        self.loops = loops

    def _drain_wakeup(self):
        try:
            while os.read(self.wake_r, 512):
                pass
        except BlockingIOError:
            pass

    # -- stats ----------------------------------------------------------------------------
    def housekeeping(self, final=False):
        self.lateness.fold()
        self.rx_wait.fold()
        self.clock_offset = time.time_ns() - time.monotonic_ns()   # follows a clock step
        for n, s in self.socks.items():
            self.socket_drops[n] += socket_drops(s)
        for p in self.pcaps:
            p.flush()
        if not self.cfg["stats_path"]:
            return
        if final:
            self.checkpoints.close()
            write_json_atomic(self.cfg["stats_path"], self.stats(True), indent=1, default=str)
        else:
            self.checkpoints.write(self.cfg["stats_path"], self.stats(False), indent=1, default=str)

    def stats(self, final=False):
        lat = self.lateness.summary()
        out = {
            "switch": self.name, "mode": self.mode, "pid": os.getpid(), "final": final,
            "started_wall": self.started_wall,
            "elapsed_s": round((time.monotonic_ns() - self.started_ns) / 1e9, 3)
            if self.started_ns else 0.0,
            "loops": self.loops,
            "ports": {n: self.intf[n] for n in self.numbers},
            "rx_socket_drops": dict(self.socket_drops),
            "rx_errors": dict(self.rx_errors), "tx_errors": dict(self.tx_errors),
            "rewrite_errors": self.rewrite_errors,
            "rx_truncated": sum(r.truncated for r in getattr(self, "rings", {}).values()),
            "rx_rings": {n: r.state() for n, r in getattr(self, "rings", {}).items()} if final else None,
            "rx_ring": bool(getattr(self, "rings", None)),
            "realtime": getattr(self, "realtime", False),
            "queue_samples": {"ports": list(self.numbers), "samples": self.queue_samples}
            if final else None,
            "lateness": lat,
            "send_ahead_ns": self.send_ahead,
            "housekeeping_max_ns": self.housekeeping_max_ns,
            "rx_wait": self.rx_wait.summary(),
        }
        sock_drops = sum(self.socket_drops.values())
        if self.switch is None:
            out.update(rx_frames=dict(self.rx_frames), tx_frames=dict(self.tx_frames),
                       no_route=self.no_route)
            out["fell_behind"] = sock_drops > 0
            return out
        sw = self.switch
        c = sw.counters()
        rx_frames = {n: c["rx_packets"][n] - self.flood_copies[n] + self.flood_frames[n]
                     + self.not_flooded[n] for n in self.numbers}
        tx_model = {n: c["ports"][n]["tx_packets"] for n in self.numbers}
        tx_frames = {n: tx_model[n] - self.tx_errors[n] for n in self.numbers}
        drops = {}
        for p in c["ports"].values():
            for reason, k in p["drops"].items():
                drops[reason] = drops.get(reason, 0) + k
        if c["no_route"]:
            drops["no_route"] = c["no_route"]
        # Frames the host's link could not hold (the NIC model's queue) never reach the model.
        link_drops = 0
        for n, nic in self.ingress.items():
            for reason, k in nic.drops.items():
                drops["host_link_" + reason] = drops.get("host_link_" + reason, 0) + k
                rx_frames[n] += k
                link_drops += k
        queued = sum(p["queued_packets"] + p["inflight_packets"] for p in c["ports"].values())
        taken, accounted = sw.conservation()
        out.update(
            pipeline=c["pipeline"], model=c, rx_frames=rx_frames, tx_frames=tx_frames,
            flood_frames=dict(self.flood_frames), flood_copies=dict(self.flood_copies),
            not_flooded=dict(self.not_flooded),
            conservation={
                "frames_in": sum(rx_frames.values()),
                "packets_in": taken,            # after flooding: one per copy
                "sent": sum(tx_model.values()),
                "dropped": drops,
                "queued": queued,
                "accounted": accounted,
                "ok": taken == accounted
                and taken + link_drops == sum(tx_model.values()) + sum(drops.values()) + queued,
            })
        p99, worst = lat["p99_ns"], lat.get("max_ns")
        out["fell_behind"] = bool(sock_drops > 0 or (p99 is not None and p99 > self.lateness.threshold)
                                  or (worst is not None and worst > self.cfg["stall_limit_ns"]))
        return out

    def close(self):
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


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m dlcp_emu.emu.datapath.process",
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
