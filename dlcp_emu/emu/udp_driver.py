"""Runs sans-I/O endpoints over real UDP sockets: the DLCP header + payload is the UDP
payload (the kernel adds IP and UDP). Non-blocking sockets, one select loop for any number
of drivers, timeouts from the endpoints' next_timeout(), time from time.monotonic_ns().

Outgoing packets go to the address of their dst_rank: given in `peers`, or learnt from the
source address of packets received from that rank.

Not done here: the DSCP per packet (the switch reads the DLCP header). With ecn=True the
packets `transport.ecn.ecn_capable` names leave ECT(0) (an IP_TOS control message on their
sendmsg, so one socket carries both ECT data and Not-ECT feedback), and a CE mark on
arrival (IP_RECVTOS) reaches the endpoint.
"""

from __future__ import annotations

import select
import socket
import struct
import time
from collections import deque
from typing import Callable, Iterable

from dlcp_emu.emu.host_egress import is_control
from dlcp_emu.wire import HEADER_LEN, DlcpHeader, Ecn, WireError
from dlcp_emu.transport.ecn import ECN_CAPABLE_TYPES
from dlcp_emu.transport.endpoint import Endpoint

RECV_BUFFER = 1 << 16
MAX_WAIT_S = 0.05  # wake up at least this often, so `until` and the deadline are checked
_IP_RECVTOS = getattr(socket, "IP_RECVTOS", 13)
_SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)
_TIMESPEC = struct.Struct("qq")
LAG_SAMPLES = 10_000
_ECT0 = [(socket.IPPROTO_IP, socket.IP_TOS, struct.pack("i", Ecn.ECT0))]   # sendmsg ancillary


class UdpDriver:
    """One endpoint (sender or receiver) on one UDP socket: an `emu.driver.HostDriver`."""

    def __init__(self, endpoint: Endpoint, sock: socket.socket, peers: dict[int, tuple[str, int]] | None = None,
                 *, ecn: bool = False, clock: Callable[[], int] = time.monotonic_ns,
                 measure_lag: bool = False, control_first: bool = False):
        """control_first: a `priority` host queue (`emu.host_egress`): control packets the
        socket has yet to take go ahead of data, as the kernel's queue under them sends them."""
        self.endpoint = endpoint
        self.sock = sock
        self.peers = dict(peers or {})
        self.clock = clock
        self.ecn = ecn
        sock.setblocking(False)
        for opt in (socket.SO_RCVBUF, socket.SO_SNDBUF):
            try:
                sock.setsockopt(socket.SOL_SOCKET, opt, 4 << 20)
            except OSError:
                pass  # the kernel caps it; losses are recovered anyway
        if ecn:
            sock.setsockopt(socket.IPPROTO_IP, _IP_RECVTOS, 1)
        # The kernel's arrival time of every datagram, so the host's own lag (arrival to
        # handling: a busy or descheduled process) is measured, not guessed. (On a machine
        # where no socket asked before, the kernel turns arrival stamps on a little later,
        # from a workqueue; the first datagrams are stamped when read, their lag ~0.)
        self.rx_lag_ns: deque = deque(maxlen=LAG_SAMPLES)   # the latest ones
        self._stamps = measure_lag
        if measure_lag:
            sock.setsockopt(socket.SOL_SOCKET, _SO_TIMESTAMPNS, 1)
        self._backlog: deque = deque()  # packets the socket refused (EAGAIN), in order
        self._control: deque = deque()  # of those, a `priority` queue's control packets: first
        self.control_first = control_first
        self._buf = bytearray(RECV_BUFFER)
        self._view = memoryview(self._buf)
        self.sent = self.received = self.malformed = self.unroutable = 0

    def fileno(self) -> int:
        return self.sock.fileno()

    @property
    def backlogged(self) -> bool:
        return bool(self._backlog or self._control)

    def flush(self, now: int) -> None:
        """Ask the endpoint what to send now and hand it to the socket."""
        backlog, control, first = self._backlog, self._control, self.control_first
        ect = ECN_CAPABLE_TYPES if self.ecn else ()
        for h, payload in self.endpoint.poll(now):
            addr = self.peers.get(h.dst_rank)
            if addr is None:
                self.unroutable += 1
                continue
            (control if first and is_control(h.type, h.payload_len) else backlog).append(
                ([h.pack(), payload], _ECT0 if h.type in ect else (), addr))
        sock = self.sock
        for queue in (control, backlog):
            while queue:
                buffers, ancillary, addr = queue[0]
                try:
                    sock.sendmsg(buffers, ancillary, 0, addr)
                except BlockingIOError:
                    return
                except OSError:
                    pass  # e.g. ECONNREFUSED from an ICMP error: the packet is lost, as on a network
                queue.popleft()
                self.sent += 1

    def read(self) -> None:
        """Feed every datagram waiting in the socket to the endpoint, each stamped with the
        clock when read (one timestamp for a whole burst would make every RTT sample equal)."""
        sock, buf, view, ep, clock = self.sock, self._buf, self._view, self.endpoint, self.clock
        ancillary = socket.CMSG_SPACE(1) + (socket.CMSG_SPACE(_TIMESPEC.size) if self._stamps else 0)
        lags = self.rx_lag_ns
        while True:
            try:
                if self.ecn or self._stamps:
                    n, anc, _, addr = sock.recvmsg_into([buf], ancillary)
                    ce = False
                    for level, kind, data in anc:
                        if level == socket.IPPROTO_IP:
                            ce = bool(data) and data[0] & 3 == Ecn.CE
                        elif kind == _SO_TIMESTAMPNS:
                            sec, nsec = _TIMESPEC.unpack_from(data)
                            lags.append(time.time_ns() - (sec * 1_000_000_000 + nsec))
                else:
                    n, addr = sock.recvfrom_into(buf)
                    ce = False
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                continue  # an ICMP error reported on this socket; nothing to read in it
            try:
                h = DlcpHeader.unpack(buf)
            except WireError:
                self.malformed += 1
                continue
            self.received += 1
            self.peers.setdefault(h.src_rank, addr)
            # The payload is a view of the receive buffer: endpoints copy what they keep.
            ep.receive(h, view[HEADER_LEN:n], clock(), ce)

    def timeout(self) -> int | None:
        return self.endpoint.next_timeout()

    def serve(self, until: int, stopping, leave: Callable[[], bool] | None = None,
              max_wait_s: float = 0.002) -> None:
        """A host process's loop (hostd, background_udp): read, flush at one `now`, wait for
        the socket or the endpoint's next timeout (at most max_wait_s), until `until`
        (monotonic ns), a stop or `leave()`. (`emu.native_host` is the same, compiled.)"""
        while not stopping:
            self.read()
            now = self.clock()
            self.flush(now)
            if now >= until or (leave is not None and leave()):
                return
            wake = self.timeout()
            wait = min(max_wait_s, (until - now) / 1e9)
            if wake is not None:
                wait = min(wait, max(wake - now, 0) / 1e9)
            select.select([self], [self] if self.backlogged else [], [], wait)


def run(drivers: Iterable[UdpDriver], until: Callable[[], bool], timeout_s: float,
        clock: Callable[[], int] = time.monotonic_ns) -> None:
    """Drive until `until()` is true; raise TimeoutError after timeout_s."""
    drivers = list(drivers)
    deadline = clock() + int(timeout_s * 1e9)
    while True:
        # Read before polling: an ACK waiting in a socket must not lose a race with a timer.
        for d in drivers:
            d.read()
        now = clock()
        for d in drivers:
            d.flush(now)
        if until():
            return
        if now >= deadline:
            raise TimeoutError(f"UDP transfer not done after {timeout_s} s")
        wake = min([t for t in (d.timeout() for d in drivers) if t is not None], default=None)
        wait = MAX_WAIT_S if wake is None else min(max(wake - now, 0) / 1e9, MAX_WAIT_S)
        select.select(drivers, [d for d in drivers if d.backlogged], [], wait)
