"""Mode `forward`: no model, straight from the input socket to the output one: the bare
cost of the I/O, for the benchmark."""
import select
import time


def run_forward(dp):
    """No model: straight from the input socket to the output one."""
    sel = select.select
    batch = dp.cfg.rx_batch
    drains = dp._drains()
    sends = dp._senders()
    by_sock = {dp.socks[n]: (n, drains[n]) for n in dp.numbers}
    rlist = [*by_sock, dp.wake_r]
    peeks = dp._peeks()
    unicast = {dst: (ports[0], sends[ports[0]]) for dst, ports in dp.routes.items()}
    flood = {n: tuple((q, sends[q]) for q in qs) for n, qs in dp.flood.items()}
    rx, tx, tx_errors = dp.rx_frames, dp.tx_frames, dp.tx_errors
    get = unicast.get
    housekeeping = dp._housekeeping_due()
    idle = dp.cfg.stats_interval_s
    clock = time.monotonic_ns
    loops = 0
    while not dp.stopping:
        loops += 1
        if clock() >= housekeeping or dp.report_now:
            dp.loops = loops
            dp.housekeeping()
            housekeeping = dp._housekeeping_due()
        ready = [s for s, peek in peeks if peek()] if peeks else None
        if not ready:
            ready = sel(rlist, (), (), idle)[0]
        for sock in ready:
            entry = by_sock.get(sock)
            if entry is None:
                dp._drain_wakeup()
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
                    dp.no_route += 1
                    continue
                try:
                    hop[1](frame)
                    tx[hop[0]] += 1
                except OSError:
                    tx_errors[hop[0]] += 1
    dp.loops = loops
