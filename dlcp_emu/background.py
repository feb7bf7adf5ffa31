"""Background flows over the `reliable` packet transport: one endpoint per host, the same
object in both worlds. The emulator runs it over UDP in each host's namespace (`main`, one
process per host, port BACKGROUND_UDP_PORT); the simulator drives it in virtual time. Each
flow is one message of job 1 at the lowest priority; its completion time is when the sender
learns the last byte arrived.

    python -m dlcp_emu.background --config FILE.json

Config: {"index", "bind": [ip, port], "peers": {index: [ip, port]}, "flows": [[start_ns
(emulated, after the common start), dst index, nbytes, flow id], ...], "mtu", "link_rate_bps",
"ready_file", "start_file", "deadline_s", "out_path"}; records as `bgtraffic` writes them (every second,
and on SIGTERM).
"""
import select
import socket
import sys
import time

import numpy as np

from .hostproc import config_and_stop_flag, wait_for_start
from .jsonio import CheckpointWriter, write_json_atomic
from .transport import Message, ReliableReceiver, ReliableSender, RttEstimator
from .transport.udp_driver import UdpDriver

JOB = 1
BACKGROUND_UDP_PORT = 9798


class BackgroundEndpoint:
    def __init__(self, index, flows, mtu=1500, link_rate_bps=None):
        """flows: [(start_ns, dst index, nbytes, flow id)] sourced by this host."""
        self.index, self.mtu, self.link_rate_bps = index, mtu, link_rate_bps
        self.receiver = ReliableReceiver(index, mtu=mtu)
        self.senders = {}
        self.pending = sorted(flows, reverse=True)     # next to start at the end
        self.started = {}
        self.finished = []                             # (flow id, dst, nbytes, start_ns, done_ns)

    def receive(self, h, payload, now, ce=False):
        if h.type == 0:
            self.receiver.receive(h, payload, now, ce)
            self.receiver.take_delivered()
        else:
            sender = self.senders.get(h.src_rank)
            if sender is not None:
                sender.receive(h, payload, now, ce)

    def poll(self, now):
        while self.pending and self.pending[-1][0] <= now:
            start, dst, nbytes, fid = self.pending.pop()
            sender = self.senders.get(dst)
            if sender is None:
                rtt = None if self.link_rate_bps is None else RttEstimator.for_link(self.link_rate_bps, self.mtu)
                sender = self.senders[dst] = ReliableSender(self.index, dst, job=JOB, mtu=self.mtu, rtt=rtt)
            sender.send(Message(np.zeros(max(1, -(-nbytes // 4)), np.float32), tensor_id=fid,
                                priority=7, job=JOB, src_rank=self.index, dst_rank=dst), now)
            self.started[fid] = (dst, nbytes, start)
        out = self.receiver.poll(now)
        for sender in self.senders.values():
            out.extend(sender.poll(now))
            for r in sender.take_completed():
                dst, nbytes, start = self.started.pop(r.tensor_id)
                self.finished.append((r.tensor_id, dst, nbytes, start, r.done_ns))
        return out

    def next_timeout(self):
        times = [self.pending[-1][0] if self.pending else None, self.receiver.next_timeout()]
        times += [s.next_timeout() for s in self.senders.values()]
        return min((t for t in times if t is not None), default=None)


def records(ep, t0, ip_of):
    """Flows started so far, as `bgtraffic` writes them (start times from t0)."""
    rows = [{"start_ns": start - t0, "dst": ip_of[dst], "bytes": n, "state": "done",
             "fct_ns": done - start, "error": None} for _, dst, n, start, done in ep.finished]
    rows += [{"start_ns": start - t0, "dst": ip_of[dst], "bytes": n, "state": "sending",
              "fct_ns": None, "error": None} for dst, n, start in ep.started.values()]
    return {"flows": rows}


def main(argv=None):
    cfg, stopping = config_and_stop_flag("dlcp_emu.background", argv)
    clock = time.monotonic_ns
    peers = {int(i): tuple(a) for i, a in cfg["peers"].items()}
    ip_of = {i: a[0] for i, a in peers.items()}
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(tuple(cfg["bind"]))
    start = wait_for_start(cfg, stopping)
    if start is None:
        return 0
    # Flow start times are relative to the common start; the endpoint runs on the clock.
    flows = [(start + int(t), int(dst), int(n), int(fid)) for t, dst, n, fid in cfg["flows"]]
    ep = BackgroundEndpoint(cfg["index"], flows, cfg["mtu"], cfg["link_rate_bps"])
    driver = UdpDriver(ep, sock, peers, ecn=True)
    deadline = start + int(cfg["deadline_s"] * 1e9)
    next_write = start + 1_000_000_000

    checkpoints = CheckpointWriter()
    while not stopping and clock() < deadline:
        driver.read()
        now = clock()
        driver.flush(now)
        if now >= next_write:
            checkpoints.write(cfg["out_path"], records(ep, start, ip_of))
            next_write = now + 1_000_000_000
        wake = driver.timeout()
        wait = 0.002 if wake is None else min(max(wake - now, 0) / 1e9, 0.002)
        select.select([driver], [driver] if driver.backlogged else [], [], wait)
    checkpoints.close()
    write_json_atomic(cfg["out_path"], records(ep, start, ip_of))
    return 0


if __name__ == "__main__":
    sys.exit(main())
