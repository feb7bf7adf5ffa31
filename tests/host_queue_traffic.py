"""A host's data backlog and its control packets, for tests/test_emulation_host_queue.py: run
in an emulated host's namespace.

    send --dst IP --data N [--driver socket|udp_driver] [--sndbuf BYTES] [--control-first]
    recv --bind IP --count N --ready FILE --timeout S      (prints the arrival order, JSON)

`send` hands N DLCP DATA packets (1400 bytes of payload each) and then one control packet of
every kind (an ACK, a probe, a bitmap and a DATA packet without payload) to one UDP socket,
as fast as it can: through the socket itself (`socket`: the kernel's queue holds the whole
backlog) or a `UdpDriver` (its own backlog holds what a send buffer of --sndbuf bytes
refuses). Each packet's chunk_index is its number in the order handed over. `recv` prints
[[kind, number], ...] in the order they arrived.
"""
import argparse
import json
import select
import socket
import sys
import time

from dlcp_emu.emu.udp_driver import UdpDriver
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
    args = ap.parse_args(argv)
    (send if args.cmd == "send" else recv)(args)


if __name__ == "__main__":
    main()
