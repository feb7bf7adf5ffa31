"""What a switch process reports: counters, lateness, and conservation (every frame taken
in is sent, dropped with a reason, or still held)."""
import os
import time


def datapath_stats(dp, final=False):
    lat = dp.lateness.summary()
    out = {
        "switch": dp.name, "mode": dp.mode, "pid": os.getpid(), "final": final,
        "started_wall": dp.started_wall,
        "elapsed_s": round((time.monotonic_ns() - dp.started_ns) / 1e9, 3)
        if dp.started_ns else 0.0,
        "loops": dp.loops,
        "ports": {n: dp.intf[n] for n in dp.numbers},
        "rx_socket_drops": dict(dp.socket_drops),
        "rx_errors": dict(dp.rx_errors), "tx_errors": dict(dp.tx_errors),
        "rewrite_errors": dp.rewrite_errors,
        "rx_truncated": sum(r.truncated for r in getattr(dp, "rings", {}).values()),
        "rx_rings": {n: r.state() for n, r in getattr(dp, "rings", {}).items()} if final else None,
        "rx_ring": bool(getattr(dp, "rings", None)),
        "realtime": getattr(dp, "realtime", False),
        "queue_samples": {"ports": list(dp.numbers), "samples": dp.queue_samples}
        if final else None,
        "lateness": lat,
        "send_ahead_ns": dp.send_ahead,
        "housekeeping_max_ns": dp.housekeeping_max_ns,
        "rx_wait": dp.rx_wait.summary(),
    }
    sock_drops = sum(dp.socket_drops.values())
    if dp.switch is None:
        out.update(rx_frames=dict(dp.rx_frames), tx_frames=dict(dp.tx_frames),
                   no_route=dp.no_route)
        out["fell_behind"] = sock_drops > 0
        return out
    sw = dp.switch
    c = sw.counters()
    rx_frames = {n: c["rx_packets"][n] - dp.flood_copies[n] + dp.flood_frames[n]
                 + dp.not_flooded[n] for n in dp.numbers}
    tx_model = {n: c["ports"][n]["tx_packets"] for n in dp.numbers}
    tx_frames = {n: tx_model[n] - dp.tx_errors[n] for n in dp.numbers}
    drops = {}
    for p in c["ports"].values():
        for reason, k in p["drops"].items():
            drops[reason] = drops.get(reason, 0) + k
    if c["no_route"]:
        drops["no_route"] = c["no_route"]
    # Frames the host's link could not hold (the NIC model's queue) never reach the model.
    link_drops = 0
    for n, nic in dp.ingress.links.items():
        for reason, k in nic.drops.items():
            drops["host_link_" + reason] = drops.get("host_link_" + reason, 0) + k
            rx_frames[n] += k
            link_drops += k
    queued = sum(p["queued_packets"] + p["inflight_packets"] for p in c["ports"].values())
    taken, accounted = sw.conservation()
    out.update(
        pipeline=c["pipeline"], model=c, rx_frames=rx_frames, tx_frames=tx_frames,
        flood_frames=dict(dp.flood_frames), flood_copies=dict(dp.flood_copies),
        not_flooded=dict(dp.not_flooded),
        conservation={
            "frames_in": sum(rx_frames.values()),
            "packets_in": taken,            # after flooding: one per copy
            "sent": sum(tx_model.values()),
            "dropped": drops,
            "queued": queued,
            "accounted": accounted,
            "ok": taken == accounted
            and taken + link_drops == sum(tx_model.values()) + sum(drops.values()) + queued,
        })
    p99, worst = lat["p99_ns"], lat.get("max_ns")
    out["fell_behind"] = bool(sock_drops > 0 or (p99 is not None and p99 > dp.lateness.threshold)
                              or (worst is not None and worst > dp.cfg["stall_limit_ns"]))
    return out
