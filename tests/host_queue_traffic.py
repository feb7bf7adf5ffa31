"""A host's data backlog and its control packets, for tests/test_emulation_host_queue.py: run
in an emulated host's namespace.

    send --dst IP --data N [--driver socket|udp_driver] [--sndbuf BYTES] [--control-first]
    recv --bind IP --count N --ready FILE --timeout S      (prints the arrival order, JSON)
    stack --rank R --bind IP --peer IP --nbytes N --ready FILE --go FILE [--window W]
          [--sndbuf BYTES] [--control-first] [--native]  (rank 1 prints what rank 0 sent it)

`send` hands N DLCP DATA packets (1400 bytes of payload each) and then one control packet of
every kind (an ACK, a probe, a bitmap and a DATA packet without payload) to one UDP socket,
as fast as it can: through the socket itself (`socket`: the kernel's queue holds the whole
backlog) or a `UdpDriver` (its own backlog holds what a send buffer of --sndbuf bytes
refuses). Each packet's chunk_index is its number in the order handed over. `recv` prints
[[kind, number], ...] in the order they arrived.

`stack`: a rank's HostStack (the `reliable` transport) sending one message of N bytes to the
other rank from the moment --go exists, until its message is acknowledged and the other's
has arrived; rank 0 over the compiled data plane (`NativeUdpHost`) or a `UdpDriver`, its
first window W packets, its send buffer --sndbuf bytes. Rank 1 then prints the types of the
packets rank 0 sent it, in the order they arrived.
"""
import argparse
import json
import os
import select
import socket
import sys
import time

import numpy as np

from dlcp_emu.emu.native_host import NativeUdpHost
from dlcp_emu.emu.udp_driver import UdpDriver
from dlcp_emu.host.agent import Outgoing
from dlcp_emu.host.packet_log import PacketLog
from dlcp_emu.host.stack import HostStack
from dlcp_emu.transport.settings import TransportSettings
from dlcp_emu.wire import DLCP_UDP_PORT, DlcpHeader, PacketType

PAYLOAD = 1400
CONTROLS = ((PacketType.ACK, 16), (PacketType.PROBE, 0), (PacketType.BITMAP, 16), (PacketType.DATA, 0))


def packets(n):
    """[(kind, header, payload)]: n data packets, then the control packets."""
    kinds = [("data", PacketType.DATA, PAYLOAD)] * n + [(f"{t.name.lower()}{size}", t, size) for t, size in CONTROLS]
    return [(kind, DlcpHeader(type=t, payload_len=size, chunk_index=i), bytes(size))
            for i, (kind, t, size) in enumerate(kinds)]


class Burst:
    """An endpoint that puts out all its packets at its first poll."""

    def __init__(self, pkts):
        self.pkts = pkts

    def poll(self, now):
        out, self.pkts = [(h, payload) for _, h, payload in self.pkts], []
        return out

    def next_timeout(self):
        return None

    def receive(self, *a):
        pass


def send(args):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    to = (args.dst, DLCP_UDP_PORT)
    pkts = packets(args.data)
    if args.driver == "socket":
        # As the data planes set it: the kernel's queue, not the socket, holds the backlog.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        for _, h, payload in pkts:
            sock.sendto(h.pack() + payload, to)
        return
    driver = UdpDriver(Burst(pkts), sock, {0: to}, control_first=args.control_first)
    if args.sndbuf:   # after the driver's own setting: a small buffer keeps the backlog ours
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, args.sndbuf)
    deadline = time.monotonic() + 30
    driver.flush(time.monotonic_ns())
    while driver.backlogged and time.monotonic() < deadline:
        select.select([], [driver], [], 0.1)
        driver.flush(time.monotonic_ns())
    if driver.backlogged:
        sys.exit("the socket took nothing for 30 s")


def recv(args):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((args.bind, DLCP_UDP_PORT))
    sock.settimeout(args.timeout)
    open(args.ready, "w").close()
    kinds = {i: kind for i, (kind, _, _) in enumerate(packets(args.count - len(CONTROLS)))}
    order = []
    try:
        while len(order) < args.count:
            h = DlcpHeader.unpack(sock.recv(65536))
            order.append([kinds[h.chunk_index], h.chunk_index])
    except socket.timeout:
        pass
    print(json.dumps(order))


class Agent:
    """Sends one message at start, keeps what arrives."""

    def __init__(self, msg):
        self.sends, self.got = [msg], {}

    def start(self, now):
        pass

    def next_timer(self):
        return None

    def on_message(self, src, iteration, tensor_id, data, lost_ranges, now):
        self.got[src] = len(data)

    def take_sends(self):
        out, self.sends = self.sends, []
        return out

    done = property(lambda self: not self.sends)


def stack(args):
    other = 1 - args.rank
    msg = Outgoing(other, 1, args.rank, np.ones(args.nbytes // 4, dtype=np.float32), 0)
    st = HostStack(args.rank, Agent(msg), "reliable", endpoints="native" if args.native else "python",
                   settings=TransportSettings(initial_window=args.window))
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((args.bind, DLCP_UDP_PORT))
    peers = {other: (args.peer, DLCP_UDP_PORT)}
    log = None
    if args.native:
        driver = NativeUdpHost(st, sock, peers, job=0, agent_reads=True, signals=False,
                               control_first=args.control_first)
    else:
        log = PacketLog(st)
        driver = UdpDriver(log, sock, peers, control_first=args.control_first)
    if args.sndbuf:   # after the driver's own setting: a small buffer keeps the backlog ours
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, args.sndbuf)
    open(args.ready, "w").close()
    deadline = time.monotonic() + 30
    while not os.path.exists(args.go):
        if time.monotonic() > deadline:
            sys.exit("no go")
        time.sleep(0.001)
    st.start(time.monotonic_ns())
    done = lambda: st.done and other in st.agent.got   # noqa: E731
    end = time.monotonic_ns() + 30_000_000_000
    while not done() and time.monotonic_ns() < end:
        driver.serve(min(end, time.monotonic_ns() + 50_000_000), [], leave=done)
    # Feedback the other still needs (an ACK lost, a probe): answer for a little longer.
    driver.serve(time.monotonic_ns() + 300_000_000, [])
    if not done():
        sys.exit(f"rank {args.rank}: not done in 30 s")
    if log is not None:
        got = log.records()["received"]
        order = np.argsort(got["recv_ns"], kind="stable")
        print(json.dumps([int(t) for t in got["type"][order][got["src"][order] == other]]))


def main(argv=None):
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("send")
    s.add_argument("--dst", required=True)
    s.add_argument("--data", type=int, required=True)
    s.add_argument("--driver", choices=("socket", "udp_driver"), default="socket")
    s.add_argument("--sndbuf", type=int, default=0)
    s.add_argument("--control-first", action="store_true")
    r = sub.add_parser("recv")
    r.add_argument("--bind", required=True)
    r.add_argument("--count", type=int, required=True)
    r.add_argument("--ready", required=True)
    r.add_argument("--timeout", type=float, default=5.0)
    k = sub.add_parser("stack")
    k.add_argument("--rank", type=int, choices=(0, 1), required=True)
    k.add_argument("--bind", required=True)
    k.add_argument("--peer", required=True)
    k.add_argument("--nbytes", type=int, required=True)
    k.add_argument("--ready", required=True)
    k.add_argument("--go", required=True)
    k.add_argument("--window", type=float, default=10)
    k.add_argument("--sndbuf", type=int, default=0)
    k.add_argument("--control-first", action="store_true")
    k.add_argument("--native", action="store_true")
    args = ap.parse_args(argv)
    {"send": send, "recv": recv, "stack": stack}[args.cmd](args)


if __name__ == "__main__":
    main()
