"""Baselines held to htsim: the scenarios of `tests/reference/htsim/` (htsim's reference
figures, and the connection-matrix files both simulators read) built for this project's
simulator, run, and set side by side with htsim's figures.

A scenario is a topology and a set of flows of 737 full frames each (1538 bytes on the wire:
a 1500-byte IP packet, 14 of Ethernet header, 24 of preamble, gap and FCS), all starting at 0,
over 100 Gbit/s links with 1 us of delay, at byte scale 1 and time dilation 1 (virtual time:
no scaling at all). A flow's completion time is when its sender learns the last byte arrived,
as htsim prints it. Transports, each over the switch queue it was made for:

- `ndp`: htsim's NDP over trimming queues; here the `reliable` transport with NDP's
  receiver-paced pulls (`transport.congestion = "ndp"`) over the `ndp` preset (per-packet
  spray, each flow over its paths in turn as htsim's sources, `NDP_SPRAY`; trim once
  `buffer_frames` data packets are queued, control packets and headers first and whole; the
  hosts' control packets ahead of their data), its senders' first window one BDP as htsim's
  (`NDP_INITIAL_WINDOW`);
- `tcp`: drop-tail FIFO (htsim's TCP NewReno: no reference at the commit used, README.md);
- `dctcp`: FIFO marking CE above `DCTCP_MARK_FRAMES` queued frames (htsim's DCTCP: likewise).
"""
from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from topologies import build

from dlcp_emu.host.background import BACKGROUND_UDP_PORT, JOB, BackgroundEndpoint
from dlcp_emu.sim.core_hosts import CoreHosts
from dlcp_emu.sim.engines import make_network
from dlcp_emu.sim.hosts import SimHosts
from dlcp_emu.transport.message import transport_payload_size
from dlcp_emu.transport.settings import TransportSettings

REFERENCE_DIR = Path(__file__).resolve().parents[2] / "tests" / "reference" / "htsim"
RATE_BPS = 100e9
DELAY_NS = 1000
MTU = 1500
FRAME_BYTES = 1514            # what a full frame weighs in a switch buffer (no preamble, gap, FCS)
WIRE_FRAME_BYTES = 1538       # what it takes on the wire: htsim's packet size (-mtu 1538)
FRAMES_PER_FLOW = 737
FLOW_BYTES = FRAMES_PER_FLOW * transport_payload_size(MTU)   # 737 full frames of payload
BUFFER_FRAMES = (32, 64, 170, 1000, 10000)
# Where DCTCP's queues mark: htsim's ECN queue in its fat tree marks above 15 packets
# (fat_tree_topology.cpp, ECNQueue(..., memFromPkt(15))); the same here, as a fraction of each
# buffer (at 32 frames: 0.47 of it).
DCTCP_MARK_FRAMES = 15
# NDP's queue keeps headers apart, up to twice the data's bytes (compositequeue.cpp): here one
# buffer of three times the data's, trimming at the data's frames, so headers fit as there.
NDP_HEADER_ROOM = 2
# htsim's NDP sources spray each flow over its own paths in turn (`-strat perm`); the `ndp`
# preset's one turn a switch for all flows pins two flows that reach a switch alternately each
# to one path (permutation-16: core queues of up to 101 frames; mean 123.9 us against 114.5
# us with a turn per flow at every buffer).
NDP_SPRAY = "flow-round-robin"
TRANSPORTS = ("tcp", "dctcp", "ndp")
# NDP starts every flow at one bandwidth-delay product: htsim's `-cwnd` (run_htsim.sh), 35
# packets on one switch (RTT 4.3 us), 104 on the k=4 fat tree (12.8 us); ours starts there too.
NDP_INITIAL_WINDOW = {"incast": 35, "permutation": 104}
UNTIL_NS = 2_000_000_000      # virtual time a run may take at most (a stalled run ends here)
SCENARIOS = {
    "incast-8": "incast_8.cm", "incast-16": "incast_16.cm", "incast-32": "incast_32.cm",
    "permutation-16": "permutation_16.cm",
}
_PAIR = re.compile(r"^(\d+)->(\d+)\b", re.M)
_NODES = re.compile(r"^Nodes (\d+)$", re.M)


@dataclass(frozen=True)
class Run:
    """One run's figures, as htsim's reference rows have them (seconds, packets)."""
    scenario: str
    transport: str
    buffer_frames: int
    fct_s: tuple           # per flow, in flow order (the .cm file's), None if it never finished
    drops: int
    trims: int
    timeouts: int
    delivered: tuple = ()  # per host index: packets its switch port sent it (data, or ACKs)

    @property
    def finished(self):
        return [t for t in self.fct_s if t is not None]

    def summary(self):
        done = self.finished
        return {"scenario": self.scenario, "transport": self.transport, "buffer_frames": self.buffer_frames,
                "flows": len(self.fct_s), "finished": len(done), "mean_fct_s": float(np.mean(done)),
                "p99_fct_s": float(np.percentile(done, 99)), "max_fct_s": max(done),
                "drops": self.drops, "trims": self.trims, "timeouts": self.timeouts}


def flows_of(scenario, reference_dir=REFERENCE_DIR):
    """(hosts, [(src, dst)]) of a scenario, read from the connection-matrix file htsim read:
    host i there is host index i here (h{i+1}), the same position in the same topology."""
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario must be one of {', '.join(SCENARIOS)}, got {scenario!r}")
    path = Path(reference_dir) / SCENARIOS[scenario]
    if not path.is_file():
        raise ValueError(f"scenario {scenario}: its connection matrix is not at {path} (the source "
                         "tree's tests/reference/htsim)")
    text = path.read_text()
    return int(_NODES.search(text)[1]), [(int(s), int(d)) for s, d in _PAIR.findall(text)]


def topology(scenario, buffer_bytes, hosts):
    """Incast: one switch (a star) with every host on it; permutation: a k=4 fat tree."""
    if scenario.startswith("incast"):
        return build("star", hosts=hosts, host_rate_bps=RATE_BPS, delay_ns=DELAY_NS, buffer_bytes=buffer_bytes)
    return build("fat-tree", k=4, host_rate_bps=RATE_BPS, delay_ns=DELAY_NS, buffer_bytes=buffer_bytes)


def pipeline(transport, buffer_frames):
    """(switch pipeline, buffer bytes a port) for a transport at a buffer of so many frames."""
    if transport == "tcp":
        return {"preset": "fifo"}, buffer_frames * FRAME_BYTES
    if transport == "dctcp":
        return ({"preset": "fifo", "queue_manager": {"name": "ecn",
                                                     "mark_fraction": DCTCP_MARK_FRAMES / buffer_frames}},
                buffer_frames * FRAME_BYTES)
    if transport == "ndp":
        return ({"preset": "ndp", "load_balancer": {"name": "spray", "mode": NDP_SPRAY},
                 "queue_manager": {"name": "trim", "trim_packets": buffer_frames}},
                (1 + NDP_HEADER_ROOM) * buffer_frames * FRAME_BYTES)
    raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, got {transport!r}")


def settings(scenario, transport):
    """The endpoints' settings: NDP's pulls and first window of one BDP under `ndp`; else the
    defaults."""
    if transport != "ndp":
        return None
    return TransportSettings(congestion="ndp", initial_window=NDP_INITIAL_WINDOW[scenario.split("-")[0]])


def run(scenario, transport, buffer_frames, reference_dir=REFERENCE_DIR, engine="native"):
    """The scenario simulated: a Run. engine "native": the compiled network with the senders
    and receivers in its core; "python": every hop and endpoint in Python (the oracle)."""
    hosts, pairs = flows_of(scenario, reference_dir)
    spec, buffer_bytes = pipeline(transport, buffer_frames)
    topo = topology(scenario, buffer_bytes, hosts)
    net = make_network(topo, spec, engine)
    sim = CoreHosts(net, {}, {}) if engine == "native" else SimHosts(net, {}, {})
    how = dict(endpoints="native", payload="sizes") if engine == "native" else {}
    by_src = {}
    for fid, (src, dst) in enumerate(pairs):
        by_src.setdefault(src, []).append((0, dst, FLOW_BYTES, fid))
    names = topo.hosts()
    eps = {i: BackgroundEndpoint(i, by_src.get(i, []), MTU, RATE_BPS, settings=settings(scenario, transport), **how)
           for i in range(len(names))}
    sim.add_job(JOB, eps, dict(enumerate(names)), udp_port=BACKGROUND_UDP_PORT, dlcp=transport == "ndp")
    sim.start()
    net.loop.run(until=UNTIL_NS)
    sim.collect()
    fct = [None] * len(pairs)
    for ep in eps.values():
        for fid, _, _, start, done in ep.finished:
            fct[fid] = (done - start) * 1e-9
    counters = net.counters()
    ports = [p for sw in counters.values() for p in sw["ports"].values()]
    delivered = tuple(counters[sw]["ports"][port]["tx_packets"] for sw, port in map(topo.attached_switch, names))
    return Run(scenario, transport, buffer_frames, tuple(fct),
               drops=sum(sum(p["drops"].values()) for p in ports), trims=sum(p["trimmed"] for p in ports),
               timeouts=sum(s.timeouts for ep in eps.values() for s in ep.senders.values()), delivered=delivered)


def reference_rows(path, what):
    """The rows of a reference CSV in the source tree; ValueError naming `what` and where."""
    path, root = Path(path), REFERENCE_DIR.parents[2]
    if not path.is_file():
        where = path.parent.relative_to(root) if path.parent.is_relative_to(root) else path.parent
        raise ValueError(f"{what} are not at {path}: they live in the source tree ({where}), "
                         "which an installed copy lacks")
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def reference(reference_dir=REFERENCE_DIR):
    """htsim's rows (results.csv), keyed by (scenario, transport, buffer_frames)."""
    rows = reference_rows(Path(reference_dir) / "results.csv", "htsim's reference runs")
    out = {}
    for r in rows:
        row = {k: (v if k in ("scenario", "transport") else float(v) if "." in v or "e" in v else int(v))
               for k, v in r.items()}
        out[(row["scenario"], row["transport"], row["buffer_frames"])] = row
    return out


def side_by_side(runs, reference_rows):
    """A row a run: htsim's mean/p99/max and timeouts next to ours, and ours over htsim's."""
    rows = []
    for r in runs:
        ours = r.summary()
        ref = reference_rows.get((r.scenario, r.transport, r.buffer_frames))
        row = {"scenario": r.scenario, "transport": r.transport, "buffer_frames": r.buffer_frames,
               **{f"ours_{k}": ours[k] for k in ("finished", "mean_fct_s", "p99_fct_s", "max_fct_s",
                                                 "drops", "trims", "timeouts")}}
        if ref is not None:
            row.update({f"htsim_{k}": ref[k] for k in ("finished", "mean_fct_s", "p99_fct_s", "max_fct_s",
                                                       "rtx", "timeouts")})
            row["mean_ratio"] = ours["mean_fct_s"] / ref["mean_fct_s"]
            row["p99_ratio"] = ours["p99_fct_s"] / ref["p99_fct_s"]
        rows.append(row)
    return rows


def compare(scenarios=tuple(SCENARIOS), transports=TRANSPORTS, buffers=BUFFER_FRAMES,
            reference_dir=REFERENCE_DIR):
    """Every combination run here, beside htsim's row where there is one."""
    runs = [run(s, t, q, reference_dir) for s in scenarios for t in transports for q in buffers]
    return side_by_side(runs, reference(reference_dir))


def line_rate_bound_s(scenario, reference_dir=REFERENCE_DIR):
    """The least time the last flow can take: the busiest receiver's frames at line rate."""
    _, pairs = flows_of(scenario, reference_dir)
    busiest = max(sum(1 for _, d in pairs if d == dst) for _, dst in pairs)
    return busiest * FRAMES_PER_FLOW * WIRE_FRAME_BYTES * 8 / RATE_BPS


def markdown(rows):
    """The side-by-side table, times in microseconds; '-' where htsim has no run."""
    def us(*vs):
        return " / ".join("-" if v is None else f"{v * 1e6:,.1f}" for v in vs)

    out = ["| scenario | transport | buffer (frames) | line-rate bound (us) | htsim mean / p99 / max (us) "
           "| ours mean / p99 / max (us) | ours / htsim: mean, p99 | timeouts htsim / ours "
           "| ours drops / trims |",
           "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        g = r.get
        ratios = "-" if g("mean_ratio") is None else f"{r['mean_ratio']:.2f}, {r['p99_ratio']:.2f}"
        out.append(f"| {r['scenario']} | {r['transport']} | {r['buffer_frames']} "
                   f"| {us(line_rate_bound_s(r['scenario']))} "
                   f"| {us(g('htsim_mean_fct_s'), g('htsim_p99_fct_s'), g('htsim_max_fct_s'))} "
                   f"| {us(r['ours_mean_fct_s'], r['ours_p99_fct_s'], r['ours_max_fct_s'])} | {ratios} "
                   f"| {g('htsim_timeouts', '-')} / {r['ours_timeouts']} | {r['ours_drops']} / {r['ours_trims']} |")
    return "\n".join(out)
