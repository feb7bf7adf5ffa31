"""The switch process's forwarding loop in Python (`Datapath` in process.py runs it when the
model is Python, or frames are captured; native_loop.py otherwise): `select` on the sockets
with a timeout to the model's next event, drain the ready sockets in bounded batches, hand
each frame to the model at its arrival time (`ingress.py`), send what the model releases
(`sendahead.py`). dlcp_native/src/datapath/datapath.cpp is the same loop compiled, step by step."""
import select
import time

from dlcp_emu.emu.datapath.frames import copy_for
from dlcp_emu.emu.datapath.sendahead import send_due


def run_model(dp):
    sw = dp.switch
    next_event = sw.next_event_time
    clock = time.monotonic_ns
    sel = select.select
    batch = dp.cfg.rx_batch
    lat = dp.lateness.pending
    lat_limit = 1 << 16
    waits = dp.rx_wait.pending
    next_arrival, on_link = dp.ingress.next_arrival, dp.ingress.on_link
    drains = dp._drains()
    by_sock = {dp.socks[n]: (n, drains[n]) for n in dp.numbers}
    rlist = [*by_sock, dp.wake_r]
    peeks = dp._peeks()
    sends = [None] * (max(dp.numbers) + 1)   # indexed by port number
    for n, f in dp._senders().items():
        sends[n] = f
    arrivals = dp.ingress.arrivals
    rx_frames = dp.rx_frames
    waits_append = waits.append
    housekeeping = dp._housekeeping_due()
    idle = dp.cfg.stats_interval_s
    samples = dp.queues.rows if dp.queues is not None else None
    queued_bytes = sw.queued_bytes     # per port, in port number order (dp.numbers)
    sample_ns, next_sample = int(dp.cfg.queue_sample_ns), 0
    floor = 0           # the model's clock so far: arrivals are never given one earlier
    loops = 0
    period = dp.cfg.wake_period_ns
    acted = -period     # when the loop last acted: it acts at most once a period (config.py)
    while not dp.stopping:
        if period:
            wait = acted + period - clock()   # read once: the clock moves between two reads
            if wait > 0:
                time.sleep(wait * 1e-9)
                continue
        loops += 1
        t = next_event()
        if t is not None:
            t -= dp.send_ahead
        a = next_arrival()
        if a is not None and (t is None or a < t):
            t = a
        now = clock()
        if (now >= housekeeping or dp.report_now or len(lat) > lat_limit
                or len(waits) > lat_limit):
            dp.loops = loops
            dp.housekeeping()
            housekeeping = dp._housekeeping_due()
            took = housekeeping - now - dp.housekeeping_interval_ns
            if took > dp.housekeeping_max_ns:
                dp.housekeeping_max_ns = took
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
        acted = clock()
        got = []
        for sock in ready:
            entry = by_sock.get(sock)
            if entry is None:
                dp._drain_wakeup()
                continue
            port, drain = entry
            frames, stamps = drain(batch)
            if frames:
                rx_frames[port] += len(frames)
                got.append((port, frames, stamps))
        if got or on_link():
            due = arrivals(got, clock(), floor, dp.clock_offset, waits_append)
            if due:
                take(dp, due)
        now = clock()
        if now >= next_sample and samples is not None:
            samples.append((now, *queued_bytes()))
            next_sample = now + sample_ns
        floor = now + dp.send_ahead
        send_due(dp, floor, sends)
    dp.loops = loops
    drain_model(dp, sends, floor)


def take(dp, due):
    """Hand frames to the model ([(arrival ns, port, frame)]); a broadcast becomes one
    packet per tree port it is flooded to."""
    parse, receive, copy = dp.parse, dp.switch.receive, copy_for
    flood = dp.flood
    for t, port, frame in due:
        pkt = parse(frame)
        if pkt.__class__ is str:    # refused: MALFORMED or INVALID_DLCP
            dp.refused[pkt] += 1
            continue
        if frame[0] & 1:            # group bit of the destination MAC
            outs = flood[port]
            if not outs:
                dp.not_flooded[port] += 1
                continue
            dp.flood_frames[port] += 1
            dp.flood_copies[port] += len(outs)
            for q in outs:
                receive(copy(pkt, q), port, t)
        else:
            receive(pkt, port, t)


def drain_model(dp, sends, floor):
    """After a stop request: read nothing more, but let what the model holds, and the
    frames still on an ingress link, go on on schedule (bounded by drain_s), so that a
    run's last packets are delivered and its stats end with empty queues. Frames still
    on a link at the deadline are given to the model then, so that they are counted."""
    sw = dp.switch
    clock = time.monotonic_ns
    deadline = clock() + int(dp.cfg.drain_s * 1e9)
    next_arrival = dp.ingress.next_arrival
    while True:
        t = sw.next_event_time()
        a = next_arrival()
        if a is not None and (t is None or a < t):
            t = a
        now = clock()
        if t is None or now > deadline:
            break
        if t > now:
            select.select((), (), (), min(t, deadline) / 1e9 - now / 1e9)
        now = clock()
        due = dp.arrivals([], now, floor)
        if due:
            take(dp, due)
        floor = now
        send_due(dp, now, sends)
    if dp.ingress.on_link():
        take(dp, dp.ingress.remaining(floor))


class PythonReceive:
    """What the stats read of the Python loop's receive side (its rings, the paced hosts'
    links); `NativeLoop` answers the same for the compiled loop."""

    def __init__(self, dp):
        self.dp = dp

    def has_rings(self):
        return bool(getattr(self.dp, "rings", None))

    def ring_states(self):
        return {n: r.state() for n, r in getattr(self.dp, "rings", {}).items()}

    def truncated_frames(self):
        """{port: frames larger than a ring slot} (read, unusable)."""
        rings = getattr(self.dp, "rings", {})
        return {n: rings[n].truncated if n in rings else 0 for n in self.dp.numbers}

    def host_link_drops(self):
        """{reason: frames} the paced hosts' link models dropped (they never reach the model)."""
        drops = {}
        for nic in self.dp.ingress.links.values():
            for reason, k in nic.drops.items():
                drops[reason] = drops.get(reason, 0) + k
        return drops

    def on_link(self):
        """Frames read, still on a paced host's emulated link."""
        return self.dp.ingress.on_link()
