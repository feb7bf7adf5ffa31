"""The same spec emulated (Mininet, real packets, wall clock) and simulated (virtual time):
one model, two clocks. The cases: ResNet-50 with a parameter server on a star, where the PS
link is the bottleneck (incast), here with ECN marking; a ring across a non-blocking
leaf-spine, where ECMP puts two flows on one uplink and spraying does not; and the parameter
server with top-k compression.

What a noisy machine cannot change is asserted exactly: the same bytes synchronised per
tensor, the same packets sent per tensor, every lost packet dropped by a switch with a
reason, every CE mark delivered. Iteration times are held to a sanity bound only, in shares
of the simulated network time (iteration less compute): emulated at most half of it slower
(the emulation's own costs only add) and a quarter faster. Switches pacing at half the rate
would add all of it, at double the rate take half of it away. How closely the two backends
agree is a figure, not a test: `sudo make validate` prints it (`dlcp-emu validate` on
examples/validate-*.toml).

An emulated run outside the bound that flagged itself (switches or hosts behind: a loaded
machine) is run again, up to three times in all; the last one decides."""
from collections import Counter

import pytest

from dlcp_emu.emu.run import EmuBackend
from dlcp_emu.experiment.run import run
from dlcp_emu.sim.run import SimBackend
from dlcp_emu.experiment.spec import parse_spec
from dlcp_emu.wire import Flags, PacketType

pytestmark = [pytest.mark.root, pytest.mark.slow]

ATTEMPTS = 3
SLOWER, FASTER = 0.5, 0.25    # the bounds, in shares of the simulated network time

SPEC = {
    "name": "validate-ps", "seed": 1, "time_dilation": 8.0, "byte_scale": 0.002, "time_limit_s": 60,
    "topology": {"kind": "star", "hosts": 5, "host_rate_bps": 10e9},
    "workload": {"model": "resnet50", "pattern": "ps", "workers": 4, "ps": 1, "iterations": 4},
    "transport": {"kind": "reliable"},
}
ECN = {"preset": "fifo", "queue_manager": {"name": "ecn", "mark_fraction": 0.2}}


def first_transmissions(packets):
    """Data packets sent per tensor, retransmissions left out: {(src, dst, iteration,
    tensor): count}."""
    data = packets[(packets["type"] == PacketType.DATA)
                   & ((packets["flags"] & int(Flags.RETRANSMISSION)) == 0)]
    return Counter(data[["src", "dst", "iteration", "tensor_id"]].itertuples(index=False, name=None))


def synchronised(frames):
    """What the agents synchronised: each tensor's bytes at each rank, each delivery's size
    and loss."""
    t = frames["tensors"][["rank", "iteration", "bucket", "nbytes", "sent_bytes", "lost_bytes"]]
    d = frames["deliveries"][["src", "dst", "iteration", "tensor_id", "nbytes", "lost_bytes"]]
    return (sorted(t.itertuples(index=False, name=None)), sorted(d.itertuples(index=False, name=None)))


def assert_same_work(emu, emu_frames, sim, sim_frames):
    """What holds whatever the machine's load: both complete and synchronise the same bytes
    with the same packets; every packet the hosts sent and nobody received was dropped by a
    switch, with a reason (none vanished in a host's own queue); every CE mark a switch set
    reached its receiver."""
    assert emu["completed"] and sim["completed"]
    assert emu["switch_conservation_ok"] and sim["switch_conservation_ok"]
    assert emu["links_ok"] and emu["network_drained"], emu["links_unbalanced"]
    assert synchronised(emu_frames) == synchronised(sim_frames)
    assert first_transmissions(emu_frames["packets"]) == first_transmissions(sim_frames["packets"])
    assert sum(emu["host_queue_drops"].values()) == 0, emu["host_queue_drops"]
    for s, f in ((emu, emu_frames), (sim, sim_frames)):
        assert s["packets"].get("lost", 0) == f["ports"]["dropped"].sum(), s["packets"]
        assert (f["packets"]["ce"] == True).sum() == f["ports"]["marked"].sum()  # noqa: E712
    fid = emu["fidelity"]
    # Measured, not assumed: datagrams waited in the hosts' sockets, a checkpoint stalled.
    assert fid["host_rx_lag_p50_us"] > 0 and fid["host_stall_max_ms"] > 0, fid


def network_time_agrees(emu, sim, compute_s):
    e, s = emu["iteration_time_mean_s"], sim["iteration_time_mean_s"]
    return -FASTER < (e - s) / (s - compute_s) < SLOWER


def emulated_and_simulated(spec, pipeline, path):
    """(emulated summary, its tables, simulated summary, its tables), the emulation checked
    against the simulation on every try (see the module's docstring)."""
    sim, sim_frames = run(spec, SimBackend(), pipeline, path / "sim", log=lambda m: None)
    compute_s = float(sim_frames["iterations"]["compute_s"].mean())
    # The network costs something here, so the bound is not just agreeing on compute.
    assert sim["iteration_time_mean_s"] > 1.3 * compute_s, sim["iteration_time_mean_s"]
    for k in range(ATTEMPTS):
        emu, emu_frames = run(spec, EmuBackend(), pipeline, path / f"emu-{k}", log=lambda m: None)
        assert_same_work(emu, emu_frames, sim, sim_frames)
        agrees = network_time_agrees(emu, sim, compute_s)
        fid = emu["fidelity"]
        if agrees or not (fid["fell_behind"] or fid["estimate_flagged"]):
            break
    per_it = [f"{w}: " + str((f["iterations"].groupby("iteration")["total_s"].mean() * 1e3).round(1).tolist())
              for w, f in (("emulated", emu_frames), ("simulated", sim_frames))]
    assert agrees, (f"emulated {emu['iteration_time_mean_s'] * 1e3:.1f} ms, simulated "
                    f"{sim['iteration_time_mean_s'] * 1e3:.1f} ms, compute {compute_s * 1e3:.1f} ms "
                    f"({'; '.join(per_it)} ms); emulation fidelity {fid}")
    return emu, emu_frames, sim, sim_frames


def test_parameter_server_incast_with_ecn_marks(tmp_path):
    """The incast queues at the PS port: the `ecn` queue manager marks data packets in both
    backends (the hosts send them ECT(0)), and every mark reaches the PS."""
    emu, emu_frames, sim, sim_frames = emulated_and_simulated(parse_spec(SPEC), ECN, tmp_path)
    for f in (emu_frames, sim_frames):
        assert f["ports"]["marked"].sum() > 0
        marked = f["packets"][f["packets"]["ce"] == True]  # noqa: E712
        assert set(marked["type"]) == {PacketType.DATA}
        assert set(marked["dst"]) == {4}          # the parameter server's rank


RING = {
    # Seed 2: ECMP's hash puts two of the ring's cross-leaf flows on one uplink. Buffers deep
    # enough that the collision costs bandwidth, not drops: with drops, whether a tail loss
    # waits for a timeout decides a run.
    "name": "validate-spray", "seed": 2, "time_dilation": 8.0, "byte_scale": 0.002, "time_limit_s": 60,
    "topology": {"kind": "leaf-spine", "leaves": 2, "spines": 2, "hosts_per_leaf": 2,
                 "host_rate_bps": 10e9, "oversubscription": 1.0, "buffer_bytes": 64_000_000},
    "workload": {"model": "resnet50", "pattern": "ring", "workers": 4, "iterations": 3},
    "transport": {"kind": "reliable"},
}


def test_spray_and_ecmp_emulated_and_simulated(tmp_path):
    spec = parse_spec(RING)
    ecmp = emulated_and_simulated(spec, "fifo", tmp_path / "ecmp")
    spray = emulated_and_simulated(spec, {"preset": "fifo", "load_balancer": "spray"}, tmp_path / "spray")
    # Both worlds see what the comparison is about: the collision costs ECMP over 20%.
    e = {name: (r[0]["iteration_time_mean_s"], r[2]["iteration_time_mean_s"])
         for name, r in (("ecmp", ecmp), ("spray", spray))}
    assert e["ecmp"][0] > 1.2 * e["spray"][0] and e["ecmp"][1] > 1.2 * e["spray"][1], e
    # The same paths in both worlds. ECMP hashes the same 5-tuples onto the same ports: every
    # switch port sent the same bytes, give or take a few control frames. Spraying deals each
    # leaf's packets to the spines in turn: the two uplinks' counts differ by one at most
    # (which bytes go where depends on the order data and ACKs meet, so not those).
    emu_tx, sim_tx = port_bytes(ecmp[1]), port_bytes(ecmp[3])
    assert emu_tx.keys() == sim_tx.keys()
    off = {k: (emu_tx[k], sim_tx[k]) for k in sim_tx if abs(emu_tx[k] - sim_tx[k]) > 0.01 * sim_tx[k] + 3000}
    assert not off, off
    for frames in (spray[1], spray[3]):
        p = frames["ports"]
        for leaf in ("l1", "l2"):
            up = p[(p["switch"] == leaf) & p["port"].isin([3, 4])]["tx_packets"].tolist()
            assert len(up) == 2 and abs(up[0] - up[1]) <= 1 and min(up) > 1000, (leaf, up)


def port_bytes(frames):
    """{(switch, port): bytes it sent}."""
    p = frames["ports"]
    return {(sw, port): b for sw, port, b in p[["switch", "port", "tx_bytes"]].itertuples(index=False, name=None)}


def test_compressed_parameter_server_emulated_and_simulated(tmp_path):
    """Top-k at a fixed 10%: the same gradients give the same sparse messages in both worlds
    (bytes sent equal to the byte, the same compression figures). Buffers deep enough for the
    incast: with drops the run turns on when a loss is noticed."""
    spec = parse_spec({**SPEC, "topology": {**SPEC["topology"], "buffer_bytes": 64_000_000},
                       "compression": {"mode": "fixed", "ratio": 0.1}})
    emu, _, sim, _ = emulated_and_simulated(spec, "fifo", tmp_path)
    ce, cs = emu["compression"], sim["compression"]
    same = ("mode", "ratio_mean", "ratio_min", "wire_fraction", "energy_kept")
    assert {k: ce[k] for k in same} == {k: cs[k] for k in same}, (ce, cs)
    assert cs["wire_fraction"] < 0.25 and 0.5 < cs["energy_kept"] < 1
