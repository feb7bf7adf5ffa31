"""The same spec emulated (Mininet, real packets, wall clock) and simulated (virtual time):
one model, two clocks, so mean iteration times agree. The cases: ResNet-50 with a parameter
server on a star, where the PS link is the bottleneck (incast); and a ring across a
non-blocking leaf-spine, where ECMP puts two flows on one uplink and spraying does not.
(`dlcp-emu validate` runs the same comparison for any spec, over seeds.)

Time dilation sets how much the emulation's own costs weigh: a host takes ~0.1-0.3 ms of
wall clock per packet (Python) and a switch hop tens of microseconds, fixed, while frame
times grow with dilation; the emulated-minus-simulated gap shrinks as 1/dilation (ring of
one-packet messages, spray: +11% at 4, +5.8% at 8, +3.0% at 16; PS: +3.3% at 4, +0.7% at 8).
Each case runs at a dilation where that gap is well inside the 5% asserted."""
import os

import pytest

from dlcp_emu.emulate import run_emulation
from dlcp_emu.simulate import run_simulation
from dlcp_emu.spec import parse_spec

pytestmark = [pytest.mark.root, pytest.mark.slow]

SPEC = {
    "name": "validate-ps", "seed": 1, "time_dilation": 8.0, "byte_scale": 0.002, "time_limit_s": 60,
    "topology": {"kind": "star", "hosts": 5, "rate_bps": 10e9},
    "workload": {"model": "resnet50", "pattern": "ps", "workers": 4, "ps": 1, "iterations": 4},
    "transport": {"kind": "reliable"},
}


def faithful_emulation(spec, pipeline, path, attempts=3):
    """An emulated run that did not flag itself: one that says its switches or hosts fell
    behind is run again (up to `attempts` in all). If every try fell behind while the
    hypervisor took CPU time (1% or more: a CI run here lost 6.6 s in three minutes, every
    switch's p99 in the ms), the machine cannot emulate now and the test is skipped, saying
    so; behind without stolen CPU is the emulator's fault, and the caller's assertions fail."""
    steals = []
    for k in range(attempts):
        emu, frames = run_emulation(spec, pipeline, path / f"try-{k}", log=lambda m: None)
        fid = emu["fidelity"]
        if not fid["fell_behind"] and not fid["hosts_behind"]:
            return emu, frames
        steals.append(fid.get("cpu_steal_share") or 0.0)
    if min(steals) >= 0.01:
        pytest.skip(f"every emulation fell behind while the hypervisor took "
                    f"{', '.join(f'{x:.0%}' for x in steals)} of the CPU")
    return emu, frames


def both(spec, pipeline, tmp_path, name):
    """(emulated, simulated) mean iteration time, and what to read when they differ."""
    emu, frames = faithful_emulation(spec, pipeline, tmp_path / f"emu-{name}")
    sim, sim_frames = run_simulation(spec, pipeline, tmp_path / f"sim-{name}", log=lambda m: None)
    assert emu["completed"] and sim["completed"]
    assert not emu["fidelity"]["fell_behind"], emu["fidelity"]
    assert 0 <= emu["fidelity"]["host_compute_stretch"] < 0.05, emu["fidelity"]
    assert 0 < emu["fidelity"]["host_rx_lag_p50_us"] and not emu["fidelity"]["hosts_behind"], emu["fidelity"]
    # Every packet the hosts sent and nobody received was dropped by a switch, with a reason:
    # none vanished in a host's own queue.
    assert sum(emu["host_queue_drops"].values()) == 0, emu["host_queue_drops"]
    assert emu["packets"].get("lost", 0) == frames["ports"]["dropped"].sum(), emu["packets"]
    assert emu["fidelity"]["host_stall_max_ms"] > 0      # measured: a checkpoint at least
    per_it = [f"{w}: " + str((f["iterations"].groupby("iteration")["total_s"].mean() * 1e3).round(1).tolist())
              for w, f in (("emulated", frames), ("simulated", sim_frames))]
    why = f"{name}: {'; '.join(per_it)} ms; emulation fidelity {emu['fidelity']}"
    return emu["iteration_time_mean_s"], sim["iteration_time_mean_s"], why


def test_emulated_and_simulated_iteration_times_agree_within_5_percent(tmp_path):
    e, s, why = both(parse_spec(SPEC), "fifo", tmp_path, "ps")
    # The network costs something here (so agreement is not just agreeing on compute time).
    assert s > 1.5 * 0.12809
    assert abs(e - s) / s < 0.05, f"emulated {e * 1e3:.1f} ms, simulated {s * 1e3:.1f} ms; {why}"


RING = {
    # Seed 2: ECMP's hash puts two of the ring's cross-leaf flows on one uplink. Buffers deep
    # enough that the collision costs bandwidth, not drops: with drops, whether a tail loss
    # waits for a timeout decides a run, and single emulated runs spread over 0-6 %.
    "name": "validate-spray", "seed": 2, "time_dilation": 20.0, "byte_scale": 0.002, "time_limit_s": 60,
    "topology": {"kind": "leaf-spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2,
                 "host_rate_bps": 10e9, "oversubscription": 1.0, "buffer_bytes": 64_000_000},
    "workload": {"model": "resnet50", "pattern": "ring", "workers": 4, "iterations": 4},
    "transport": {"kind": "reliable"},
}


def test_spray_and_ecmp_agree_emulated_and_simulated(tmp_path):
    spec = parse_spec(RING)
    ecmp = both(spec, "fifo", tmp_path, "ecmp")
    spray = both(spec, {"preset": "fifo", "load_balancer": "spray"}, tmp_path, "spray")
    for e, s, why in (ecmp, spray):
        assert abs(e - s) / s < 0.05, f"emulated {e * 1e3:.1f} ms, simulated {s * 1e3:.1f} ms; {why}"
    # Both worlds see what the comparison is about: the collision costs ECMP over 20%.
    assert ecmp[0] > 1.2 * spray[0] and ecmp[1] > 1.2 * spray[1], (ecmp, spray)


def test_compressed_parameter_server_agrees_emulated_and_simulated(tmp_path):
    """Top-k at a fixed 10%: the same gradients give the same sparse messages in both worlds
    (bytes sent equal to the byte), and the iteration times agree. Buffers deep enough for
    the incast: with drops the run turns on when a loss is noticed. (This case once ran 2.5%
    faster emulated than simulated: the switches took a host's frame as arrived when its
    first bit left the host's token bucket, one serialisation early; now +2.4% at dilation 8.)"""
    spec = parse_spec({**SPEC, "topology": {**SPEC["topology"], "buffer_bytes": 64_000_000},
                       "compression": {"mode": "fixed", "ratio": 0.1}})
    emu, _ = faithful_emulation(spec, "fifo", tmp_path / "emu")
    sim, _ = run_simulation(spec, "fifo", tmp_path / "sim", log=lambda m: None)
    assert emu["completed"] and sim["completed"] and not emu["fidelity"]["hosts_behind"]
    ce, cs = emu["compression"], sim["compression"]
    same = ("mode", "ratio_mean", "ratio_min", "wire_fraction", "energy_kept")
    assert {k: ce[k] for k in same} == {k: cs[k] for k in same}, (ce, cs)
    assert cs["wire_fraction"] < 0.25 and 0.5 < cs["energy_kept"] < 1
    e, s = emu["iteration_time_mean_s"], sim["iteration_time_mean_s"]
    assert abs(e - s) / s < 0.05, f"emulated {e * 1e3:.1f} ms, simulated {s * 1e3:.1f} ms"
