"""Background traffic over kernel TCP, one process per emulated host.

    python -m dlcp_emu.emu.background_tcp --config FILE.json

The process serves a sink (accept, read to EOF, close) on the host's address and opens the
flows this host sources at their start times: connect, write the flow's bytes, half-close,
wait for the sink's close. Flow completion time = sink's close seen - flow start. One
selector loop, non-blocking sockets; bounded by the flow list and a deadline. Flows go to
out_path as JSON lines (`flow`): each ended one within a second of its end, then those still
under way when the process stops (SIGTERM too), and the bytes the sink read (`sink`).

Config: `host_configs.BackgroundTcpConfig`.
"""
import selectors
import socket
import sys
import time

from dlcp_emu.emu.host_configs import BackgroundTcpConfig
from dlcp_emu.emu.host_process import config_and_stop_flag, wait_for_start
from dlcp_emu.emu.streams import JsonLinesWriter, process_row

CHUNK = 64 * 1024
ZEROS = memoryview(bytes(CHUNK))


class Flow:
    __slots__ = ("start_ns", "dst", "size", "sent", "sock", "state", "done_ns", "error")

    def __init__(self, start_ns, dst, size):
        self.start_ns, self.dst, self.size = start_ns, dst, size
        self.sent, self.sock, self.state, self.done_ns, self.error = 0, None, "waiting", None, None


def run(cfg, stopping):
    sel = selectors.DefaultSelector()
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((cfg.bind, cfg.port))
    srv.listen(256)
    srv.setblocking(False)
    sel.register(srv, selectors.EVENT_READ, ("accept", None))
    start = wait_for_start(cfg, stopping)
    if start is None:
        return 0
    flows = [Flow(start + int(s * 1e9), dst, int(n)) for s, dst, n in cfg.flows]
    pending = list(reversed(flows))        # next to start at the end
    deadline = start + int(cfg.deadline_s * 1e9)
    received = 0
    next_write = 0
    clock = time.monotonic_ns
    out = JsonLinesWriter(cfg.out_path)
    ended = []                             # flows ended since the last write
    while not stopping:
        now = clock()
        if now >= deadline:
            break
        while pending and pending[-1].start_ns <= now:
            f = pending.pop()
            try:
                f.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                f.sock.setblocking(False)
                f.sock.connect_ex((f.dst, cfg.port))
                f.state = "sending"
                sel.register(f.sock, selectors.EVENT_WRITE, ("flow", f))
            except OSError as e:
                f.state, f.error = "failed", str(e)
                ended.append(f)
        timeout = 0.05
        if pending:
            timeout = min(timeout, max(0.0, (pending[-1].start_ns - clock()) / 1e9))
        for key, events in sel.select(timeout):
            kind, f = key.data
            if kind == "accept":
                try:
                    conn, _ = srv.accept()
                    conn.setblocking(False)
                    sel.register(conn, selectors.EVENT_READ, ("sink", None))
                except OSError:
                    pass
            elif kind == "sink":
                try:
                    data = key.fileobj.recv(CHUNK)
                except OSError:
                    data = b""
                if data:
                    received += len(data)
                else:
                    sel.unregister(key.fileobj)
                    key.fileobj.close()
            elif f.state == "sending":
                try:
                    f.sent += f.sock.send(ZEROS[:min(CHUNK, f.size - f.sent)])
                except BlockingIOError:
                    continue
                except OSError as e:
                    _end(sel, f, "failed", clock(), str(e))
                    ended.append(f)
                    continue
                if f.sent >= f.size:
                    f.sock.shutdown(socket.SHUT_WR)
                    f.state = "closing"
                    sel.modify(f.sock, selectors.EVENT_READ, ("flow", f))
            elif f.state == "closing":
                try:
                    data = f.sock.recv(CHUNK)
                except OSError:
                    data = b""
                if not data:   # the sink read everything and closed
                    _end(sel, f, "done", clock())
                    ended.append(f)
        if clock() >= next_write:
            out.append(_rows(ended, start))
            ended.clear()
            next_write = clock() + 1_000_000_000
    out.append(_rows(ended + [f for f in flows if f.state in ("sending", "closing")], start))
    out.append([("sink", {"bytes": received}), process_row()])
    out.close()
    for f in flows:
        if f.sock is not None and f.state in ("sending", "closing"):
            f.sock.close()


def _end(sel, f, state, now, error=None):
    sel.unregister(f.sock)
    f.sock.close()
    f.state, f.done_ns, f.error = state, now, error


def _rows(flows, start):
    return [("flow", {"start_ns": f.start_ns - start, "dst": f.dst, "bytes": f.size,
                      "state": f.state, "fct_ns": (f.done_ns - f.start_ns) if f.done_ns else None,
                      "error": f.error}) for f in flows]


def main(argv=None):
    cfg, stopping = config_and_stop_flag(BackgroundTcpConfig, argv)
    run(cfg, stopping)
    return 0


if __name__ == "__main__":
    sys.exit(main())
