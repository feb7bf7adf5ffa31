"""The `tcp` transport: an agent's messages over kernel TCP, what Horovod or Gloo over TCP
would do. One connection per ordered pair of ranks (the lower rank connects), each message
framed as (iteration u32, tensor_id u32, nbytes u32) + float32 payload. Non-blocking
sockets in the caller's select loop; no loss is possible, so nothing is ever zero-filled.
"""
import socket
import struct
import time
from collections import deque

import numpy as np

FRAME = struct.Struct("!III")
CHUNK = 256 * 1024


class _Peer:
    def __init__(self, rank, sock):
        self.rank, self.sock = rank, sock
        self.out = deque()           # memoryviews still to write
        self.inbuf = bytearray()
        self.connected = False


class TcpMessenger:
    """Drives one agent over TCP. `fileno`-able peers for select; `read()` / `flush()`."""

    def __init__(self, rank, agent, peers, bind, clock=time.monotonic_ns):
        """peers: {rank: (ip, port)} of every rank (this one included); bind: (ip, port)."""
        self.rank, self.agent, self.clock = rank, agent, clock
        self.deliveries = []   # (src, iteration, tensor_id, nbytes, 0, first_ns, done_ns, {})
        self.completions = []
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(tuple(bind))
        self.listener.listen(64)
        self.listener.setblocking(False)
        self.addrs = {int(r): tuple(a) for r, a in peers.items()}
        self.peers = {}
        self.pending_accept = []

    def _peer(self, rank):
        p = self.peers.get(rank)
        if p is None and rank > self.rank:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            s.setblocking(False)
            s.connect_ex(self.addrs[rank])
            p = self.peers[rank] = _Peer(rank, s)
            # Announce ourselves: the acceptor learns our rank from the first 4 bytes.
            p.out.append(memoryview(struct.pack("!I", self.rank)))
        return p

    def start(self, now):
        # Connect to every higher rank up front: a lower rank that never sends to us must
        # still have connected before we can send to it.
        for rank in self.addrs:
            if rank > self.rank:
                self._peer(rank)
        self.agent.start(now)
        self._pump(now)

    @property
    def done(self):
        return self.agent.done and not any(p.out for p in self.peers.values())

    def next_timeout(self):
        return self.agent.next_timer()

    def sockets(self):
        return [self.listener, *(p.sock for p in self.peers.values() if p.sock), *self.pending_accept]

    def writers(self):
        return [p.sock for p in self.peers.values() if p.out and p.sock]

    def on_readable(self, sock, now):
        if sock is self.listener:
            try:
                conn, _ = sock.accept()
                conn.setblocking(False)
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.pending_accept.append(conn)
            except BlockingIOError:
                pass
            return
        if sock in self.pending_accept:
            try:
                head = sock.recv(4, socket.MSG_PEEK)
            except BlockingIOError:
                return
            if len(head) < 4:
                return
            sock.recv(4)
            self.pending_accept.remove(sock)
            rank = struct.unpack("!I", head)[0]
            peer = _Peer(rank, sock)
            waiting = self.peers.get(rank)
            if waiting is not None:          # messages queued before it connected
                peer.out = waiting.out
            self.peers[rank] = peer
            return
        peer = next(p for p in self.peers.values() if p.sock is sock)
        try:
            data = sock.recv(CHUNK)
        except BlockingIOError:
            return
        if not data:
            return
        peer.inbuf += data
        while len(peer.inbuf) >= FRAME.size:
            it, tid, n = FRAME.unpack_from(peer.inbuf)
            if len(peer.inbuf) < FRAME.size + n:
                break
            payload = np.frombuffer(bytes(peer.inbuf[FRAME.size:FRAME.size + n]), dtype="<f4").astype(np.float32)
            del peer.inbuf[:FRAME.size + n]
            self.deliveries.append((peer.rank, it, tid, n, 0, now, now, {}))
            self.agent.on_message(peer.rank, it, tid, payload, [], now)
        self._pump(now)

    def on_writable(self, sock):
        peer = next(p for p in self.peers.values() if p.sock is sock)
        while peer.out:
            buf = peer.out[0]
            try:
                sent = sock.send(buf)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return   # not connected yet
            if sent < len(buf):
                peer.out[0] = buf[sent:]
                return
            peer.out.popleft()

    def on_timer(self, now):
        t = self.agent.next_timer()
        if t is not None and t <= now:
            self.agent.on_timer(now)
        self._pump(now)

    def _pump(self, now):
        for m in self.agent.take_sends():
            peer = self._peer(m.dst)
            if peer is None:   # a lower rank connects to us: queue until it has
                peer = self.peers[m.dst] = _Peer(m.dst, None)
            data = np.ascontiguousarray(m.data, dtype="<f4")
            peer.out.append(memoryview(FRAME.pack(m.iteration, m.tensor_id, data.nbytes)))
            peer.out.append(memoryview(data.tobytes()))
