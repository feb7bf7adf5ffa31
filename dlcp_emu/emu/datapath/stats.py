"""What a switch process reports: counters, lateness, and conservation: every frame read
from a port (or cut by its ring) is sent (the kernel took it), dropped with a reason, or
still held (queued, or on a paced host's emulated link). Reasons besides the model's:
`host_link_*` (the host NIC model's queue), `rx_truncated` (larger than a ring slot),
`malformed` and `invalid_dlcp` (refused by the parser), `off_flood_tree` (a broadcast on a
port off the flood tree) and `tx_refused` (the kernel refused the send)."""
import os
import time

from dlcp_emu.emu.streams import process_cpu_s, process_cpus


def datapath_stats(dp, final=False):
    lat = dp.lateness.summary()
    out = {
        "switch": dp.name, "mode": dp.mode, "pid": os.getpid(), "final": final,
        "started_wall": dp.started_wall,
        "elapsed_s": round((time.monotonic_ns() - dp.started_ns) / 1e9, 3)
        if dp.started_ns else 0.0,
        "loops": dp.loops,
        "cpu_s": process_cpu_s(), "cpus": process_cpus(),
        "snapshot": dp.snapshots,
        "ports": {n: dp.intf[n] for n in dp.numbers},
        "rx_socket_drops": dict(dp.socket_drops),
        # Lost before our sockets, at the kernel (links.py puts them on their links).
        "rx_kernel_discarded": dp.kernel_discarded(), "tx_kernel_dropped": dp.kernel_tx_dropped(),
        "rx_errors": dict(dp.rx_errors), "tx_errors": dict(dp.tx_errors),
        "rewrite_errors": dp.rewrite_errors,
        "rx_rings": dp.receive_side.ring_states() if final else None,
        "rx_ring": dp.receive_side.has_rings(),
        "loop": dp.loop, "loop_note": dp.loop_note,
        "realtime": getattr(dp, "realtime", False),
        "queue_samples": dp.queues.stats() if dp.queues is not None else None,
        "lateness": lat,
        "send_ahead_ns": dp.send_ahead,
        "wake_period_ns": dp.cfg.wake_period_ns,
        "housekeeping_max_ns": dp.housekeeping_max_ns,
        "rx_wait": dp.rx_wait.summary(),
        # Each capture file: frames written, kept (a bounded capture keeps the newest), bytes.
        "captures": [p.summary() for p in dp.pcaps],
    }
    sock_drops = sum(dp.socket_drops.values())
    if dp.switch is None:
        out.update(rx_frames=dict(dp.rx_frames), tx_frames=dict(dp.tx_frames),
                   no_route=dp.no_route)
        out["fell_behind"] = sock_drops > 0
        return out
    sw = dp.switch
    c = sw.counters()
    truncated = dp.receive_side.truncated_frames()
    # Frames in: every frame read from a port, and those its ring cut (read, unusable).
    rx_frames = {n: dp.rx_frames[n] + truncated[n] for n in dp.numbers}
    tx_model = {n: c["ports"][n]["tx_packets"] for n in dp.numbers}
    # Sent is what the kernel took: a send it refused is a drop (tx_refused).
    tx_frames = {n: tx_model[n] - dp.tx_errors[n] for n in dp.numbers}
    drops = {}
    for p in c["ports"].values():
        for reason, k in p["drops"].items():
            drops[reason] = drops.get(reason, 0) + k
    if c["no_route"]:
        drops["no_route"] = c["no_route"]
    # Frames the host's link could not hold (the NIC model's queue) never reach the model.
    for reason, k in dp.receive_side.host_link_drops().items():
        drops["host_link_" + reason] = drops.get("host_link_" + reason, 0) + k
    before_model = {"rx_truncated": sum(truncated.values()), **dp.refused,
                    "off_flood_tree": sum(dp.not_flooded.values())}
    for reason, k in (*before_model.items(), ("tx_refused", sum(dp.tx_errors.values()))):
        if k:
            drops[reason] = drops.get(reason, 0) + k
    queued = sum(p["queued_packets"] + p["inflight_packets"] for p in c["ports"].values())
    on_link = dp.receive_side.on_link()            # read, still on a paced host's emulated link
    copies = sum(dp.flood_copies.values()) - sum(dp.flood_frames.values())
    taken, accounted = sw.conservation()
    frames_in = sum(rx_frames.values())
    sent = sum(tx_frames.values())
    out.update(
        pipeline=c["pipeline"], model=c, rx_frames=rx_frames, tx_frames=tx_frames,
        port_buffer_bytes=sw.buffer_bytes(), engine=dp.engine, engine_note=dp.engine_note,
        rx_truncated=truncated,
        flood_frames=dict(dp.flood_frames), flood_copies=dict(dp.flood_copies),
        not_flooded=dict(dp.not_flooded),
        conservation={
            "frames_in": frames_in,
            "packets_in": taken,            # after flooding: one per copy
            "sent": sent,                   # the kernel took them
            "dropped": drops,
            "queued": queued,
            "on_link": on_link,
            "accounted": accounted,
            "ok": taken == accounted
            and frames_in + copies == sent + sum(drops.values()) + queued + on_link,
        })
    p99, worst = lat["p99_ns"], lat.get("max_ns")
    out["fell_behind"] = bool(sock_drops > 0 or (p99 is not None and p99 > dp.lateness.threshold)
                              or (worst is not None and worst > dp.cfg.stall_limit_ns))
    return out

