"""htsim's DCTCP incast (tests/reference/htsim/dctcp/) built for this project's simulator, on
htsim's own constants: 10 Gbit/s links of 1 us, 9000-byte packets on the wire, a k=8 fat tree.

htsim's program (`main_dctcp_incast_collateral.cpp`) takes the number of senders, the buffer
(in packets) and the flow size on its command line; the rest is compiled in and copied here:
- hosts 127-N .. 126 (pods 5..7) each send one flow to host 0 (pod 0), all at 80 ms;
- a "collateral" endless flow from host 5 to host 1 (pod 0, another rack) from 0 ms;
- every switch queue marks CE above 15 packets; each DCTCP flow starts at 10 packets with
  a slow-start threshold of 10; its RTO is floored at 250 ms (htsim's tcp.cpp).
A flow is 101 data packets here: htsim finishes it at the ACK of byte 909,000 (`-flowsize
900000` plus one packet, tcp.h), i.e. its 101st 9000-byte packet.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from topologies import build

from dlcp_emu.host.background import BACKGROUND_UDP_PORT, JOB, BackgroundEndpoint
from dlcp_emu.sim.core_hosts import CoreHosts
from dlcp_emu.sim.engines import make_network
from dlcp_emu.sim.hosts import SimHosts
from dlcp_emu.study.baselines import reference_rows
from dlcp_emu.transport.message import transport_payload_size
from dlcp_emu.transport.settings import TransportSettings

REFERENCE_DIR = Path(__file__).resolve().parents[2] / "tests" / "reference" / "htsim" / "dctcp"
RATE_BPS = 10e9
DELAY_NS = 1000
K = 8
WIRE_FRAME_BYTES = 9000          # htsim's Packet::set_packet_size(9000): the whole packet
MTU = WIRE_FRAME_BYTES - 38      # + 14 of Ethernet header + 24 of preamble, gap, FCS = 9000
FRAME_BYTES = MTU + 14           # what a frame weighs in a switch buffer
FRAMES_PER_FLOW = 101
FLOW_BYTES = FRAMES_PER_FLOW * transport_payload_size(MTU)
MARK_FRAMES = 15                 # fat_tree_topology.cpp: ECNQueue(..., memFromPkt(15))
INCAST_START_NS = 80_000_000     # main_dctcp_incast_collateral.cpp: extrastarttime = 80 ms
RECEIVER, LONG_SRC, LONG_DST = 0, 5, 1
# htsim's collateral flow never ends (its run stops at 600 ms: setEndtime(0.6 s)); here it
# carries 600 ms at line rate, so it runs at least as long.
LONG_FLOW_BYTES = 83_334 * transport_payload_size(MTU)
SENDERS = (8, 16, 32)
# A buffer of MARK_FRAMES or fewer never marks: htsim's DCTCP sender is then its TCP NewReno
# (dctcp.cpp reacts to CE only; on a loss it halves like tcp.cpp), and ours runs `tcp`.
BUFFER_FRAMES = {"tcp": (8, 15), "dctcp": (32, 64, 170, 1000, 10000)}
UNTIL_NS = 2_000_000_000
# htsim's sender constants (main_dctcp_incast_collateral.cpp, tcp.cpp, dctcp.cpp): a window of
# 10 packets to start (TcpSrc: _cwnd = 10*_mss, as ours), a slow-start threshold of 10
# (set_ssthresh(10*data_packet_size()) on every flow), DCTCP's alpha from 0 (_alfa = 0) with
# g = 1/16 (as ours), and an RTO floored at 250 ms (tcp.cpp: timeFromSec(0.25)).
INITIAL_SSTHRESH = 10
DCTCP_ALPHA = 0.0
MIN_RTO_NS = 250_000_000


@dataclass(frozen=True)
class IncastRun:
    transport: str
    senders: int
    buffer_frames: int
    fct_s: tuple            # incast flows only, None if unfinished
    drops: int
    timeouts: int           # the incast flows' (the collateral flow's apart)

    def summary(self):
        done = [t for t in self.fct_s if t is not None]
        return {"transport": self.transport, "senders": self.senders, "buffer_frames": self.buffer_frames, "flows": len(self.fct_s),
                "finished": len(done), "mean_fct_s": float(np.mean(done)),
                "p99_fct_s": float(np.percentile(done, 99)), "max_fct_s": max(done),
                "drops": self.drops, "timeouts": self.timeouts}


def senders_of(n):
    """htsim's setIncast(n, 127 - n): hosts 127-n .. 126, each to host 0."""
    if n not in SENDERS:
        raise ValueError(f"senders must be one of {', '.join(map(str, SENDERS))}, got {n!r}")
    return list(range(K ** 3 // 4 - 1 - n, K ** 3 // 4 - 1))


def pipeline(transport, buffer_frames):
    """tcp: a drop-tail FIFO; dctcp: a FIFO marking CE above MARK_FRAMES queued frames."""
    if transport not in BUFFER_FRAMES:
        raise ValueError(f"transport must be one of {', '.join(BUFFER_FRAMES)}, got {transport!r}")
    if transport == "tcp":
        return {"preset": "fifo"}
    return {"preset": "fifo", "queue_manager": {"name": "ecn", "mark_fraction": MARK_FRAMES / buffer_frames}}


def settings(transport):
    """Our senders on htsim's constants: DCTCP where the queues mark, NewReno where they cannot."""
    return TransportSettings(congestion="dctcp" if transport == "dctcp" else "newreno", min_rto_ns=MIN_RTO_NS,
                             initial_ssthresh=INITIAL_SSTHRESH, dctcp_alpha=DCTCP_ALPHA)


def run(transport, n, buffer_frames, engine="native"):
    """The incast of n senders at a buffer of so many frames, simulated: an IncastRun. engine
    "native": the compiled network and endpoints; "python": all in Python (the oracle)."""
    srcs = senders_of(n)
    spec = pipeline(transport, buffer_frames)
    topo = build("fat-tree", k=K, host_rate_bps=RATE_BPS, delay_ns=DELAY_NS,
                 buffer_bytes=buffer_frames * FRAME_BYTES)
    net = make_network(topo, spec, engine)
    sim = CoreHosts(net, {}, {}) if engine == "native" else SimHosts(net, {}, {})
    how = dict(endpoints="native", payload="sizes") if engine == "native" else {}
    by_src = {s: [(INCAST_START_NS, RECEIVER, FLOW_BYTES, fid)] for fid, s in enumerate(srcs)}
    by_src[LONG_SRC] = [(0, LONG_DST, LONG_FLOW_BYTES, len(srcs))]
    names = topo.hosts()
    eps = {i: BackgroundEndpoint(i, by_src.get(i, []), MTU, RATE_BPS, settings=settings(transport), **how)
           for i in range(len(names))}
    sim.add_job(JOB, eps, dict(enumerate(names)), udp_port=BACKGROUND_UDP_PORT, dlcp=False)
    sim.start()
    net.loop.run(until=UNTIL_NS)
    sim.collect()
    fct = [None] * len(srcs)
    for ep in eps.values():
        for fid, _, _, start, done in ep.finished:
            if fid < len(srcs):
                fct[fid] = (done - start) * 1e-9
    ports = [p for sw in net.counters().values() for p in sw["ports"].values()]
    return IncastRun(transport, n, buffer_frames, tuple(fct), drops=sum(sum(p["drops"].values()) for p in ports),
                     timeouts=sum(eps[s].senders[k].timeouts for s in srcs for k in eps[s].senders))


def reference(reference_dir=REFERENCE_DIR):
    """htsim's rows (results.csv), keyed by (transport, senders, buffer_frames)."""
    rows = reference_rows(Path(reference_dir) / "results.csv", "htsim's DCTCP incast runs")
    return {(r["transport"], int(r["senders"]), int(r["buffer_frames"])): r for r in rows}


def line_rate_bound_s(n):
    """The least time the last incast flow can take: every sender's frames at line rate."""
    return n * FRAMES_PER_FLOW * WIRE_FRAME_BYTES * 8 / RATE_BPS


def compare(reference_dir=REFERENCE_DIR):
    """Every htsim run, run here: a row each, ours beside htsim's."""
    rows = []
    for key, ref in reference(reference_dir).items():
        ours = run(*key).summary()
        last = float(ref["last_print_s"])
        rows.append({**ours, "htsim_first_s": float(ref["first_print_s"]), "htsim_last_s": last,
                     "htsim_timeouts": int(ref["timeouts"]), "htsim_flows_timed_out": int(ref["flows_timed_out"]),
                     "max_ratio": ours["max_fct_s"] / last})
    return rows


def markdown(rows):
    """The side-by-side table, times in milliseconds."""
    out = ["| transport | senders | buffer (frames) | line-rate bound (ms) | htsim first / last (ms) "
           "| ours mean / p99 / max (ms) | ours / htsim: last | timeouts htsim (flows) / ours | ours drops |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        out.append(f"| {r['transport']} | {r['senders']} | {r['buffer_frames']} "
                   f"| {line_rate_bound_s(r['senders']) * 1e3:.2f} "
                   f"| {r['htsim_first_s'] * 1e3:.2f} / {r['htsim_last_s'] * 1e3:.2f} "
                   f"| {r['mean_fct_s'] * 1e3:.2f} / {r['p99_fct_s'] * 1e3:.2f} / {r['max_fct_s'] * 1e3:.2f} "
                   f"| {r['max_ratio']:.2f} | {r['htsim_timeouts']} ({r['htsim_flows_timed_out']}) / {r['timeouts']} "
                   f"| {r['drops']} |")
    return "\n".join(out)
