"""Sending what the model releases, on time: the loop wakes `send_ahead` ns before a departure
and follows the median of its own lateness."""
import time

from dlcp_emu.emu.datapath.frames import apply_rewrite

MAX_SEND_AHEAD_NS = 200_000
SEND_AHEAD_STEP_NS = 1_000


def send_due(dp, until, sends):
    """Send what the model releases by `until`, with its rewrites, and record how late
    each frame left against its scheduled departure.

    The loop wakes `send_ahead` ns before a departure: waking from select and sending
    takes tens of microseconds here (p50 55 us), and a frame that leaves late arrives late
    at the next hop, whose kernel time then carries the delay on (every switch on a path
    adds its own). send_ahead follows the median of that delay (a step up for each frame
    that left late, one down for each that left early, between 0 and MAX_SEND_AHEAD_NS),
    so that frames leave on schedule, half a little early, half a little late."""
    clock = time.monotonic_ns
    lat_append = dp.lateness.pending.append
    tx_errors = dp.tx_errors
    ahead = dp.send_ahead
    for port, pkt in dp.switch.poll(until):
        frame = pkt.frame
        if pkt.rewrite:
            try:
                frame = apply_rewrite(pkt)
            except ValueError:
                dp.rewrite_errors += 1
        late = clock() - pkt.depart
        lat_append(late)
        if late > 0:
            if ahead < MAX_SEND_AHEAD_NS:
                ahead += SEND_AHEAD_STEP_NS
        elif ahead > 0:
            ahead -= SEND_AHEAD_STEP_NS
        try:
            sends[port](frame)
        except OSError:
            tx_errors[port] += 1
    dp.send_ahead = ahead
