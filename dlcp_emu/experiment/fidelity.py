"""How faithfully an emulated run kept the model's schedule, from what its switches and
hosts measured; the figures and flags of the summary's `fidelity`.

A run is judged by its fidelity estimate (experiment/fidelity_estimate.py: how far its mean
iteration and p99 tensor completion are from the model's, in percent), flagged when that
exceeds the spec's fidelity_tolerance. Fixed rules remain only where no estimate reaches:
frames a switch's socket dropped (lost, not late) and one stall longer than the tolerance of
an iteration (a p99 hides a single stall, which holds every packet the switch has)."""
import numpy as np

from dlcp_emu.experiment import results
from dlcp_emu.experiment.fidelity_estimate import estimate, flagged

# The median wait of a host's received packet, in host-link frame times, that the choice of
# `time_dilation = "auto"` allows for a host's wake-up (study/dilation.py); a run itself is
# judged by its estimate.
HOST_LAG_LIMIT = 0.10


def switch_fidelity(stats):
    """Worst p99 and worst single lateness of any switch port against its schedule, the
    frames their sockets dropped, and whether any switch flagged itself (`switch_fell_behind`:
    its own rule, datapath/stats.py)."""
    lat = [st["lateness"] for st in stats.values() if st and st.get("lateness")]
    p99 = [x["p99_ns"] for x in lat if x.get("p99_ns") is not None]
    worst = [x["max_ns"] for x in lat if x.get("max_ns") is not None]
    # How long frames waited in the switches' rings before the loop took them (arrivals are
    # the kernel's times, so a wait costs only what exceeds a packet's slack: lateness).
    wait = [st["rx_wait"]["p99_ns"] for st in stats.values()
            if st and (st.get("rx_wait") or {}).get("p99_ns") is not None]
    return {"p99_lateness_us": max(p99) / 1e3 if p99 else None,
            "max_lateness_ms": max(worst) / 1e6 if worst else None,
            "switch_rx_wait_p99_us": max(wait) / 1e3 if wait else None,
            "socket_drops": sum(sum((st.get("rx_socket_drops") or {}).values()) for st in stats.values() if st),
            "switch_fell_behind": any(bool(st.get("fell_behind")) for st in stats.values() if st),
            "switches": len(stats)}


def host_fidelity(records, compute_ns, frame_ns):
    """The hosts' side, from their records (hostd's format): `compute_ns` is one iteration's
    planned compute, or {job: its} for records of several jobs (their `job`), `frame_ns` the
    time a full frame takes on a host link (emulated ns)."""
    plan = compute_ns.get if isinstance(compute_ns, dict) else lambda _job: compute_ns
    out = {}
    late = [x for r in records for x in r.get("timer_lateness_ns", [])]
    # How late the agents' compute timers fired (scheduling, Python), wall-clock us like the
    # switches' figure.
    out["host_timer_p99_lateness_us"] = results.percentile(late, 99) / 1e3 if late else None
    # A late timer delays the rest of that iteration's forward pass (each layer's timer is
    # set when the previous one fires), so what stretches compute is the lateness summed
    # over an iteration: its mean per worker and iteration, as a fraction of the compute.
    stretch = [r["timer_lateness_sum_ns"] / len(r["iterations"]) / plan(r.get("job"))
               for r in records if r.get("iterations") and "timer_lateness_sum_ns" in r]
    out["host_compute_stretch"] = float(sum(stretch) / len(stretch)) if stretch else None
    # How long datagrams waited in the hosts' sockets before their agent took them (kernel
    # arrival stamp to handling), wall-clock us.
    lag = [x for r in records for x in r.get("rx_lag_ns", [])]
    out["host_rx_lag_p50_us"] = results.percentile(lag, 50) / 1e3 if lag else None
    out["host_rx_lag_p99_us"] = results.percentile(lag, 99) / 1e3 if lag else None
    out["host_rx_lag_mean_us"] = float(np.mean(lag)) / 1e3 if lag else None
    out["host_timer_mean_lateness_us"] = float(np.mean(late)) / 1e3 if late else None
    # The median and mean wait in host-link frame times (the estimate's unit).
    out["host_rx_lag_frame_share"] = out["host_rx_lag_p50_us"] * 1e3 / frame_ns if lag else None
    out["host_rx_lag_mean_frames"] = out["host_rx_lag_mean_us"] * 1e3 / frame_ns if lag else None
    # The longest a host stopped serving packets for its own sake (a garbage collection, a
    # record checkpoint), wall-clock ms: on a synchronous ring one rank's stall is everyone's.
    stalls = [r.get("stalls") or {} for r in records]
    out["host_stall_max_ms"] = max(
        (max(st.get("gc_max_ns", 0), st.get("write_max_ns", 0)) / 1e6 for st in stalls), default=None)
    return out


def judge(fig, *, frame_ns, compute_share, iteration_s, dilation, tolerance, steps=0):
    """The verdict on a run from its figures (switch_fidelity and host_fidelity's keys):
    its estimate, whether that exceeds `tolerance` (a fraction), and the fixed rules
    (`fell_behind`, with `behind_because`). frame_ns: a host-link frame, wall-clock;
    iteration_s: the mean iteration, real-world; compute_share: planned compute over it;
    steps: the collective's steps an iteration (fidelity_estimate.critical_steps)."""
    est = estimate(fig, frame_ns=frame_ns, compute_share=compute_share or 0.0, steps=steps,
                   dilation=dilation, iteration_s=iteration_s)
    because = []
    if fig.get("socket_drops"):
        because.append(f"switch sockets dropped {fig['socket_drops']} frame(s)")
    stall_ms = max((x for x in (fig.get("max_lateness_ms"), fig.get("host_stall_max_ms")) if x is not None),
                   default=None)
    if stall_ms is not None and iteration_s and stall_ms / 1e3 / dilation > tolerance * iteration_s:
        because.append(f"a stall of {stall_ms:.0f} ms wall-clock, over {tolerance:.0%} of an iteration")
    return {"estimate": est, "tolerance": tolerance, "estimate_flagged": flagged(est, tolerance),
            "fell_behind": bool(because), "behind_because": because}
