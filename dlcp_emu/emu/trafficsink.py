"""The receiving side of the traffic generator: count DLCP frames per class and per sender,
their loss, reordering and one-way latency (raw AF_PACKET, for tests and benchmarks).

A frame's one-way latency ends when the kernel delivered it to this socket (SO_TIMESTAMPNS),
not when this process read it: the receiver's own wake-up is not the network's. On a 2-core
machine the receiver shares a core with the generator, and at a high rate waited for it for
milliseconds, which the benchmark had counted as the switch's latency. How long frames
waited in the socket is reported beside it (`rx_wait_*`).
"""
import os
import select
import socket
import struct
import time

from dlcp_emu.emu.datapath.sockets import socket_drops
from dlcp_emu.emu.traffic_socket import job_filter, open_socket, set_slack
from dlcp_emu.wire import DLCP_UDP_PORT, MAGIC, VERSION
from dlcp_emu.wire.layout import (
    OFF_CHUNK_INDEX, OFF_FLAGS, OFF_IP_SRC, OFF_JOB, OFF_MAG_CLASS, OFF_MAGIC, OFF_PRIORITY,
    OFF_SEND_TS_NS, OFF_UDP_DPORT, OFF_UDP_SPORT, OFF_VERSION, fields_at,
)

# What the receiver reads of a frame, each at its offset.
_RX = fields_at((OFF_UDP_DPORT, "H"), (OFF_MAGIC, "H"), (OFF_VERSION, "B"), (OFF_FLAGS, "B"),
                (OFF_PRIORITY, "B"), (OFF_MAG_CLASS, "B"), (OFF_JOB, "H"), (OFF_CHUNK_INDEX, "I"),
                (OFF_SEND_TS_NS, "Q"))


_SENDER = fields_at((OFF_IP_SRC, "4s"), (OFF_UDP_SPORT, "H"))    # IPv4 source address, UDP source port


_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
_TIMESPEC = struct.Struct("qq")
_ANCILLARY = socket.CMSG_SPACE(_TIMESPEC.size)


def _pct(sorted_vals, q):
    if not sorted_vals:
        return None
    k = min(len(sorted_vals) - 1, int(q / 100 * len(sorted_vals)))
    return sorted_vals[k]


class Tally:
    """What `receive` counts, frame by frame (sans-I/O: frames and receive times in, counts
    out). A flow is a sender's (IPv4 source address, UDP source port): two hosts sending
    from the same port are two flows, each with its own sequence, so a frame counts as
    reordered only against earlier frames of its own flow."""

    def __init__(self):
        self.classes = {}
        self.flows = {}
        self.max_seq = {}
        self.other = 0
        self.total = 0
        self.reordered = 0
        self.first = self.last = None

    def add(self, frame, t):
        """Count one frame received at t (ns); False if it is not a DLCP frame of ours."""
        if len(frame) < 90:
            self.other += 1
            return False
        dport, magic, version, flags, prio, mag, _job, seqno, ts = _RX.unpack_from(frame)
        if dport != DLCP_UDP_PORT or magic != MAGIC or version != VERSION:
            self.other += 1
            return False
        self.total += 1
        if self.first is None:
            self.first = t
        self.last = t
        key = (prio, mag, flags & 1)
        c = self.classes.get(key)
        if c is None:
            c = self.classes[key] = {"count": 0, "delays": [], "bytes": 0}
        c["count"] += 1
        c["bytes"] += len(frame)
        c["delays"].append(t - ts)
        flow = _SENDER.unpack_from(frame)
        self.flows[flow] = self.flows.get(flow, 0) + 1
        if seqno < self.max_seq.get(flow, -1):
            self.reordered += 1
        else:
            self.max_seq[flow] = seqno
        return True

    def result(self):
        out_classes = {}
        for (prio, mag, drop), c in sorted(self.classes.items()):
            d = sorted(c["delays"])
            out_classes[f"{prio}:{mag}:{drop}"] = {
                "prio": prio, "mag": mag, "droppable": bool(drop), "count": c["count"],
                "bytes": c["bytes"],
                "delay_p50_us": _us(_pct(d, 50)), "delay_p99_us": _us(_pct(d, 99)),
                "delay_max_us": _us(d[-1] if d else None),
                "delay_mean_us": _us(sum(d) / len(d) if d else None)}
        total, first, last = self.total, self.first, self.last
        return {"received": total, "other": self.other, "reordered": self.reordered,
                "span_s": round((last - first) / 1e9, 6) if total > 1 else 0.0,
                "classes": out_classes,
                "flows": {f"{socket.inet_ntoa(ip)}:{port}": n
                          for (ip, port), n in sorted(self.flows.items())}}


def receive(intf, duration_s, idle_s=0.5, expect=None, job=None, ready_path=None):
    """Receive DLCP frames until duration_s passes, `expect` frames came, or idle_s passed
    without one (after the first). Returns counts and one-way delay per class
    (prio, mag, droppable) and per flow (source address and UDP source port: see Tally),
    the frames the kernel dropped at this socket (`socket_drops`) and what ended the wait
    (`stopped_by`)."""
    set_slack()
    filt = job_filter(job) if job is not None else None
    sock = open_socket(intf, filt=filt)
    sock.setblocking(False)
    sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
    # The kernel stamps CLOCK_REALTIME; the sender stamped CLOCK_MONOTONIC.
    offset = time.time_ns() - time.monotonic_ns()
    if ready_path:
        with open(ready_path, "w") as f:
            f.write(str(os.getpid()))
    recvmsg = sock.recvmsg
    clock = time.monotonic_ns
    tally = Tally()
    add = tally.add
    waits = []
    last_read = None      # idle: since this process last read one of ours (arrivals may be older)
    t_end = clock() + int(duration_s * 1e9)
    drops = socket_drops(sock)      # zero: counts from bind; read to reset
    while True:
        now = clock()
        if now >= t_end:
            stopped_by = "duration"
            break
        if expect is not None and tally.total >= expect:
            stopped_by = "expect"
            break
        if last_read is not None and now - last_read > idle_s * 1e9:
            stopped_by = "idle"
            break
        wait = min(t_end - now, int(idle_s * 1e9)) / 1e9
        r = select.select([sock], (), (), max(wait, 0))[0]
        if not r:
            continue
        for _ in range(256):
            try:
                frame, anc, _, _ = recvmsg(9100, _ANCILLARY)
            except BlockingIOError:
                break
            arrived = _arrival(anc) - offset
            if add(frame, arrived):
                last_read = clock()
                waits.append(last_read - arrived)
    drops += socket_drops(sock)
    sock.close()
    waits.sort()
    return {**tally.result(), "socket_drops": drops, "stopped_by": stopped_by,
            "rx_wait_p50_us": _us(_pct(waits, 50)), "rx_wait_p99_us": _us(_pct(waits, 99))}


def _arrival(ancillary):
    """The kernel's delivery time of a frame (CLOCK_REALTIME ns) from recvmsg's ancillary data."""
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == _SO_TIMESTAMPNS:
            sec, nsec = _TIMESPEC.unpack_from(data)
            return sec * 1_000_000_000 + nsec
    raise RuntimeError("the kernel gave a frame no arrival time (SO_TIMESTAMPNS)")


def _us(ns):
    return None if ns is None else round(ns / 1000, 3)
