"""`dlcp-emu bench host`: packets per second of a host's data plane, compiled and Python, in
one run: one host moves one message (100 MB by default) to another over real UDP sockets
on loopback, with the `dlcp` and the `reliable` transport at MTU 1500.

- `native`: each host's `emu.native_host.NativeUdpHost` (the receiver's in a thread of its
  own; the loops release the GIL, as two host processes would run side by side);
- `python`: each host's `UdpDriver` with the Python endpoints, both driven by one select
  loop (`udp_driver.run`), as hostd drives one.

The figure is packets both ways (data and feedback) per wall second from the first send to
the sender learning the message arrived; the message's bytes are checked at the receiver.
No switch sits between the hosts (loopback): this is the hosts' cost alone, the figure the
switch benchmark's cannot show.
"""
import socket
import threading
import time

import numpy as np

from dlcp_emu.emu.native_host import NativeUdpHost
from dlcp_emu.emu.udp_driver import UdpDriver, run as run_drivers
from dlcp_emu.host.agent import Outgoing
from dlcp_emu.host.stack import HostStack

MB = 1_000_000
TIMEOUT_S = 300


class _Agent:
    """Sends its messages at start; keeps what arrives."""

    def __init__(self, sends=()):
        self.sends, self.got = list(sends), {}

    def start(self, now):
        pass

    def next_timer(self):
        return None

    def on_timer(self, now):
        pass

    def on_message(self, src, iteration, tensor_id, data, lost_ranges, now):
        self.got[tensor_id] = (data, lost_ranges)

    def take_sends(self):
        out, self.sends = self.sends, []
        return out

    done = property(lambda self: not self.sends)


def _sockets():
    socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    return socks


def _transfer(engine, transport, data):
    a, b = _sockets()
    tx = HostStack(0, _Agent([Outgoing(1, 1, 0, data, 0)]), transport, endpoints=engine)
    rx = HostStack(1, _Agent(), transport, endpoints=engine)
    try:
        if engine == "native":
            host = NativeUdpHost(tx, a, {1: b.getsockname()}, job=0, agent_reads=True, signals=False)
            peer = NativeUdpHost(rx, b, {}, job=0, agent_reads=True, signals=False)
            stop = []

            def serve_peer():
                while not stop:
                    peer.serve(time.monotonic_ns() + 50_000_000, stop)

            thread = threading.Thread(target=serve_peer)
            thread.start()
            t0 = time.perf_counter()
            tx.start(time.monotonic_ns())
            deadline = time.monotonic_ns() + TIMEOUT_S * 1_000_000_000
            while not tx.done and time.monotonic_ns() < deadline:
                host.serve(deadline, [], leave=lambda: tx.done)
            elapsed = time.perf_counter() - t0
            stop.append(1)
            peer.wake()
            thread.join()
            packets = host.sent + peer.sent
            host.close()
            peer.close()
        else:
            drivers = [UdpDriver(tx, a, {1: b.getsockname()}, ecn=True), UdpDriver(rx, b, ecn=True)]
            t0 = time.perf_counter()
            tx.start(time.monotonic_ns())
            run_drivers(drivers, lambda: tx.done, timeout_s=TIMEOUT_S)
            elapsed = time.perf_counter() - t0
            packets = drivers[0].sent + drivers[1].sent
    finally:
        a.close()
        b.close()
    if not tx.done:
        raise TimeoutError(f"{engine} {transport}: the message did not arrive in {TIMEOUT_S} s")
    got, lost = rx.agent.got[0]
    want = data.copy().view(np.uint8)
    for lo, hi in lost:
        want[lo:hi] = 0
    return {"pps": round(packets / elapsed), "seconds": round(elapsed, 3), "packets": packets,
            "intact": bool(np.array_equal(np.asarray(got).view(np.uint8), want)),
            "lost_bytes": sum(hi - lo for lo, hi in lost)}


def run(megabytes=100, transports=("dlcp", "reliable"), seed=0):
    """{transport: {"pps", "python_pps", "ratio", ...}} measured in this run."""
    data = np.random.default_rng(seed).standard_normal(int(megabytes * MB) // 4).astype(np.float32)
    out = {"megabytes": megabytes, "mtu": 1500, "path": "loopback, no switch"}
    for t in transports:
        native = _transfer("native", t, data)
        python = _transfer("python", t, data)
        out[t] = {"pps": native["pps"], "python_pps": python["pps"],
                  "ratio": round(native["pps"] / python["pps"], 1),
                  "seconds": native["seconds"], "python_seconds": python["seconds"],
                  "packets": native["packets"], "python_packets": python["packets"],
                  "intact": native["intact"] and python["intact"]}
    return out
