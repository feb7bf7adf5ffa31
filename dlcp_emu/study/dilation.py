"""`time_dilation = "auto"`: the smallest dilation this machine keeps up with, chosen before
the runs (`study.compare.dilations`: emulated, and simulated alike so that both draw the
same) from the spec's packet demand and the machine's measured costs.

A dilation D runs every link D times slower and every timer D times longer, so the emulator's
work per wall second is the spec's packet hops per real-world second over D. Two conditions,
the two a run's own fidelity checks afterwards (`experiment.fidelity`):

- CPU: that work, at this machine's cost of a packet hop, keeps the cores at most BUSY_LIMIT
  busy. The README's validation went off where the machine was busier (byte scale 0.1,
  dilation 8: 79-93% busy, dlcp +32%) and agreed within 5% where it was not (dilation 16,
  45-66%).
- Wake-ups: a host asleep in poll waits for the machine to wake it; that wait must stay
  within HOST_LAG_LIMIT of a full frame's time on a host link (where the fidelity estimate's
  wait terms stay small: docs/fidelity.md).

Demand: the simulator runs the spec (at most DEMAND_ITERATIONS iterations) and counts packet
hops per real-world second; the same models as the emulation, so the same packets. Costs:
the native core's probe (dlcp_native `probe_*`) measures how late a blocked thread wakes for a
datagram, and the CPU one datagram exchange between two threads takes; a packet hop of the
emulation costs HOP_CPU_PER_EXCHANGE of such an exchange (calibrated where the README's
default figures were measured, see that constant). Dilations are powers of two, the ladder the
validation tables measured.

And the spec must accept the dilation: what it checks depends on it (background flows drawn
for time_limit_s, wall-clock seconds, so fewer at a higher dilation; the slowest link's rate
divided by it), so the choice is the smallest dilation meeting both conditions that the spec's
own checks pass, and it says what ruled out the one below. A faster machine must never pick a
dilation the spec then refuses.
"""
import os
import tempfile
from dataclasses import asdict, dataclass

import numpy as np

from dlcp_emu.experiment.fidelity import HOST_LAG_LIMIT
from dlcp_emu.experiment.topology import host_frame_ns, scaled_topology
from dlcp_emu.experiment.spec import SpecError

LADDER = tuple(2 ** k for k in range(11))   # 1 .. 1024
BUSY_LIMIT = 0.75   # between the validation's good (<= 66% busy) and bad (>= 79%) runs
# The emulation's CPU per packet hop (switches, hosts' data planes, background senders, the
# kernel between them) over the probe's CPU per datagram exchange. Calibrated on the machine
# kind the README measured: the default spec at byte scale 0.1 and dilation 16 moves 1.46M
# packet hops per real-world second (simulated), and its four presets kept the 2 cores 52-61%
# busy (`sudo make emulate`, cpu N%): 12.4 us a hop; the probe measured 17.5-22.4 us an
# exchange there (median 20).
HOP_CPU_PER_EXCHANGE = 0.62
PROBE_WAKE_SAMPLES = 1000
PROBE_WAKE_GAP_NS = 200_000
PROBE_ROUND_TRIPS = 5000
PROBE_REPEATS = 3
DEMAND_ITERATIONS = 3
DEMAND_SECONDS = 5.0   # real-world seconds the demand's simulation may cover: a rate needs no more


class DilationError(ValueError):
    """No dilation of the ladder fits this machine; the message names time_dilation."""


@dataclass(frozen=True)
class Machine:
    cores: int
    wake_lag_p50_ns: float     # a blocked thread's wake-up for a datagram, median
    exchange_cpu_ns: float     # CPU of one datagram sent, woken for and received

    @property
    def hop_cpu_ns(self):
        return HOP_CPU_PER_EXCHANGE * self.exchange_cpu_ns


def measure_machine():
    """This machine's costs, measured now (about a second): PROBE_REPEATS short probes, the
    least wake-up median of them (a probe lasts 0.2 s, so one other process's burst decides
    a single median: 12-27 us were seen here) and the median exchange cost."""
    from dlcp_native.datapath import probe_round_trips, probe_wake_lag
    wakes, exchanges = [], []
    for _ in range(PROBE_REPEATS):
        lags = probe_wake_lag(PROBE_WAKE_SAMPLES, PROBE_WAKE_GAP_NS)
        count, cpu_ns, _ = probe_round_trips(PROBE_ROUND_TRIPS)
        if len(lags) < PROBE_WAKE_SAMPLES // 2 or count < PROBE_ROUND_TRIPS // 2:
            raise RuntimeError(f"machine probe: {len(lags)} of {PROBE_WAKE_SAMPLES} datagrams and "
                               f"{count} of {PROBE_ROUND_TRIPS} round trips came back on loopback")
        wakes.append(float(np.median(lags)))
        exchanges.append(cpu_ns / count / 2)
    return Machine(cores=len(os.sched_getaffinity(0)), wake_lag_p50_ns=min(wakes),
                   exchange_cpu_ns=float(np.median(exchanges)))


def spec_demand(spec, preset):
    """Packet hops per real-world second the spec (time_dilation "auto") moves under
    `preset`, simulated (the simulator counts a hop at every switch and NIC a packet passes)."""
    from dlcp_emu.experiment.run import run
    from dlcp_emu.sim.run import SimBackend
    # Still "auto", so dilation 1 (the simulator's results do not depend on it) and the
    # background drawn for DEMAND_SECONDS, not for the emulation's wall-clock limit.
    short = spec.with_field("packet_records", False).with_field(
        "time_limit_s", min(spec.time_limit_s, DEMAND_SECONDS))
    short = short.with_field("workload.iterations", min(spec.workload["iterations"], DEMAND_ITERATIONS))
    with tempfile.TemporaryDirectory(prefix="dlcp-demand-") as d:
        s, _ = run(short, SimBackend(), preset, d, log=lambda m: None)
    if not s.get("duration_s"):
        raise RuntimeError("time_dilation auto: the simulated run that measures the demand moved nothing")
    return s["packet_hops"] / s["duration_s"]


def choose(demand_hops_per_s, frame_ns, machine, refuses=lambda d: None):
    """The smallest dilation of the ladder that meets both conditions and that the spec accepts
    (`refuses(d)`: None, or the spec's problems at d: its background flows, its slowest link's
    rate, ...), and the figures that decided it: {"dilation", "busy_share", "wake_share",
    "bound", "bound_by"}, where bound names what ruled out the next dilation down ("cpu",
    "wake-up", "spec"; None at 1) and bound_by says it in words. DilationError if none does."""
    below, refused = None, []   # refused: (d, problem) where the machine kept up
    for d in LADDER:
        busy = demand_hops_per_s / d * machine.hop_cpu_ns * 1e-9 / machine.cores
        wake = machine.wake_lag_p50_ns / (frame_ns * d)
        reasons = []
        if busy > BUSY_LIMIT:
            reasons.append(("cpu", f"{busy:.0%} busy at {d}, limit {BUSY_LIMIT:.0%}"))
        if wake > HOST_LAG_LIMIT:
            reasons.append(("wake-up", f"a host's wake-up is {wake:.0%} of a frame at {d}, "
                                       f"limit {HOST_LAG_LIMIT:.0%}"))
        if not reasons:
            problem = refuses(d)
            if problem is None:
                return {"dilation": d, "busy_share": busy, "wake_share": wake,
                        "bound": below and below[0][0], "bound_by": below and "; ".join(r for _, r in below)}
            refused.append((d, problem))
            reasons.append(("spec", f"the spec refuses {d}: {problem}"))
        below = reasons
    if not refused:
        raise DilationError(
            f"time_dilation: \"auto\" found no dilation up to {LADDER[-1]} this machine keeps up with "
            f"({demand_hops_per_s:,.0f} packet hops per real-world second at {machine.hop_cpu_ns / 1e3:.1f} us "
            f"of CPU a hop on {machine.cores} core(s); a wake-up takes {machine.wake_lag_p50_ns / 1e3:.0f} us "
            f"against a {frame_ns:.0f} ns frame): lower byte_scale, or set time_dilation")
    raise DilationError(
        f"time_dilation: \"auto\" found no dilation that both this machine keeps up with (from "
        f"{refused[0][0]} on) and the spec accepts: at {refused[0][0]}, {refused[0][1]}")


def spec_refusal(spec, d):
    """None if the spec accepts time_dilation d, else its problems there, in one line."""
    try:
        spec.with_field("time_dilation", float(d))
    except SpecError as e:
        return "; ".join(e.problems)
    return None


def resolve(spec, preset, log=print, machine=None):
    """(spec, choice): the spec with its dilation chosen if it asked for "auto" (else as it
    is, and None), and what decided it, for the summary. Logs one line saying so."""
    if not spec.dilation_auto:
        return spec, None
    machine = machine or measure_machine()
    demand = spec_demand(spec, preset)
    frame_ns = host_frame_ns(scaled_topology(spec), spec.mtu)   # "auto" scales at dilation 1
    pick = choose(demand, frame_ns, machine, refuses=lambda d: spec_refusal(spec, d))
    d = pick["dilation"]
    choice = {**pick, "demand_hops_per_s": demand, "frame_ns_at_1": frame_ns,
              "hop_cpu_us": machine.hop_cpu_ns / 1e3, "busy_limit": BUSY_LIMIT,
              "wake_limit": HOST_LAG_LIMIT, "machine": asdict(machine)}
    log(f"time_dilation auto: {d} (the spec moves {demand / 1e6:.2f}M packet hops per real-world "
        f"second, simulated; this machine spends {machine.hop_cpu_ns / 1e3:.1f} us of CPU a hop on "
        f"{machine.cores} core(s): {pick['busy_share']:.0%} busy at {d}, limit {BUSY_LIMIT:.0%}; it "
        f"wakes a host in {machine.wake_lag_p50_ns / 1e3:.0f} us, {pick['wake_share']:.0%} of a "
        f"{frame_ns * d / 1e3:.0f} us frame, limit {HOST_LAG_LIMIT:.0%}"
        + (f"; not {d // 2}: {pick['bound_by']}" if pick["bound"] else "") + ")")
    return spec.with_field("time_dilation", float(d)), choice
