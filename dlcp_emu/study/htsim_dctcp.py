"""htsim's DCTCP incast (tests/reference/htsim/dctcp/) built for this project's simulator, on
htsim's own constants: 10 Gbit/s links of 1 us, 9000-byte packets on the wire, a k=8 fat tree.

htsim's program (`main_dctcp_incast_collateral.cpp`) takes the number of senders, the buffer
(in packets) and the flow size on its command line; the rest is compiled in and copied here:
- hosts 127-N .. 126 (pods 5..7) each send one flow to host 0 (pod 0), all at 80 ms;
- a "collateral" endless flow from host 5 to host 1 (pod 0, another rack) from 0 ms;
- every switch queue marks CE above 15 packets; each DCTCP flow starts at 10 packets with
  a slow-start threshold of 10; its RTO is floored at 250 ms (htsim's tcp.cpp);
- DCTCP reacts to CE as htsim's dctcp.cpp (DCTCP_REACTION), and each flow opens with a SYN,
  here a one-value message on the same path (SYN_BYTES).
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
# htsim's DCTCPSrc reacts to ECN its own way (dctcp.cpp): every ACK grows the window, marked or
# not, and every window is cut by alpha/2 while alpha > 0; ours by default follows RFC 8257 and
# Linux (a marked window cut once, no growth on a marked ACK nor in the window after a cut).
# Under RFC 8257's rule an incast flow on the collateral flow's link, every ACK marked, only
# ever shrinks (10 packets to 1 in 10 ms) where htsim's stays near 10: docs/baselines.md.
DCTCP_REACTION = "every-window"
# htsim's TCP opens each flow with a SYN of 1 byte (tcp.cpp, new_syn_pkt) on the flow's path.
# Its 0.8 ns on the wire shifts the departures of every port it crosses by as much, and at the
# collateral flow's aggregation port that decides who loses when the queue is full (at 64
# frames): the collateral's frames then arrive just before a departure and take the drops.
# This transport has no handshake: each incast sender sends one float32 value to the receiver
# first, on the same path (a message of the same pair), as the SYN's stand-in (docs/baselines.md).
SYN_BYTES = 4
# Which incast flows share the collateral flow's aggregation link is a path draw: htsim draws
# each flow's path at random (its seed), ours hashes the flow with the switch's seed. A single
# draw a side is no comparison: both run over DRAWS draws, htsim at seeds 1..DRAWS
# (run_htsim_dctcp_seeds.sh, results_draws.csv), ours at switch seeds 0..DRAWS-1 (0: the default).
DRAWS = 8


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


def settings(transport, dctcp_reaction=DCTCP_REACTION):
    """Our senders on htsim's constants: DCTCP where the queues mark, NewReno where they cannot."""
    return TransportSettings(congestion="dctcp" if transport == "dctcp" else "newreno", min_rto_ns=MIN_RTO_NS,
                             initial_ssthresh=INITIAL_SSTHRESH, dctcp_alpha=DCTCP_ALPHA,
                             dctcp_reaction=dctcp_reaction)


def run(transport, n, buffer_frames, engine="native", draw=0, dctcp_reaction=DCTCP_REACTION, syn=True):
    """The incast of n senders at a buffer of so many frames, simulated: an IncastRun. engine
    "native": the compiled network and endpoints; "python": all in Python (the oracle). draw:
    the switches' seed, which salts ECMP's hash, so it draws each flow's path. dctcp_reaction:
    htsim's ("every-window") or RFC 8257's ("on-mark", the transport's default). syn: each
    incast sender sends SYN_BYTES to the receiver before its flow, as htsim's SYN."""
    srcs = senders_of(n)
    spec = pipeline(transport, buffer_frames)
    topo = build("fat-tree", k=K, host_rate_bps=RATE_BPS, delay_ns=DELAY_NS,
                 buffer_bytes=buffer_frames * FRAME_BYTES)
    net = make_network(topo, spec, engine, seed=draw)
    sim = CoreHosts(net, {}, {}) if engine == "native" else SimHosts(net, {}, {})
    how = dict(endpoints="native", payload="sizes") if engine == "native" else {}
    by_src = {s: [(INCAST_START_NS, RECEIVER, FLOW_BYTES, fid)] for fid, s in enumerate(srcs)}
    if syn:   # the same start, fewer bytes: each sender's first message (BackgroundEndpoint's order)
        for fid, s in enumerate(srcs):
            by_src[s].append((INCAST_START_NS, RECEIVER, SYN_BYTES, len(srcs) + 1 + fid))
    by_src[LONG_SRC] = [(0, LONG_DST, LONG_FLOW_BYTES, len(srcs))]
    names = topo.hosts()
    eps = {i: BackgroundEndpoint(i, by_src.get(i, []), MTU, RATE_BPS,
                                 settings=settings(transport, dctcp_reaction), **how)
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


def reference_draws(reference_dir=REFERENCE_DIR):
    """htsim's runs at seeds 1..DRAWS (results_draws.csv): a list of rows a key, by seed."""
    out = {}
    for r in reference_rows(Path(reference_dir) / "results_draws.csv", "htsim's DCTCP incast runs over path draws"):
        out.setdefault((r["transport"], int(r["senders"]), int(r["buffer_frames"])), []).append(r)
    return out


def htsim_over_draws(rows):
    """htsim's figures over its draws: the mean first and last completion, draws with a timeout."""
    return {"htsim_draws": len(rows), "htsim_first_s": float(np.mean([float(r["first_print_s"]) for r in rows])),
            "htsim_last_s": float(np.mean([float(r["last_print_s"]) for r in rows])),
            "htsim_draws_timed_out": sum(int(r["timeouts"]) > 0 for r in rows),
            "htsim_timeouts": sum(int(r["timeouts"]) for r in rows)}


def over_draws(transport, n, buffer_frames, draws=DRAWS, engine="native"):
    """Ours over `draws` path draws: each statistic's mean over draws, the draws with a timeout."""
    runs = [run(transport, n, buffer_frames, engine, draw=d).summary() for d in range(draws)]
    mean = {k: float(np.mean([r[k] for r in runs])) for k in ("mean_fct_s", "p99_fct_s", "max_fct_s")}
    return {"transport": transport, "senders": n, "buffer_frames": buffer_frames, "draws": draws,
            "flows": runs[0]["flows"], "finished": min(r["finished"] for r in runs), **mean,
            "max_fct_s_by_draw": [r["max_fct_s"] for r in runs], "drops": sum(r["drops"] for r in runs),
            "timeouts": sum(r["timeouts"] for r in runs), "draws_timed_out": sum(r["timeouts"] > 0 for r in runs)}


def line_rate_bound_s(n):
    """The least time the last incast flow can take: every sender's frames at line rate."""
    return n * FRAMES_PER_FLOW * WIRE_FRAME_BYTES * 8 / RATE_BPS


def compare(reference_dir=REFERENCE_DIR, draws=DRAWS):
    """Every htsim run, over path draws here and there: a row each, the means over draws."""
    rows = []
    for key, refs in reference_draws(reference_dir).items():
        ours, ref = over_draws(*key, draws=draws), htsim_over_draws(refs)
        rows.append({**ours, **ref, "max_ratio": ours["max_fct_s"] / ref["htsim_last_s"]})
    return rows


def markdown(rows):
    """The side-by-side table, times in milliseconds, each the mean over draws."""
    out = ["| transport | senders | buffer (frames) | line-rate bound (ms) | htsim first / last (ms) "
           "| ours mean / p99 / last (ms) | ours / htsim: last | draws timed out (timeouts): htsim / ours "
           "| ours drops |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        out.append(f"| {r['transport']} | {r['senders']} | {r['buffer_frames']} "
                   f"| {line_rate_bound_s(r['senders']) * 1e3:.2f} "
                   f"| {r['htsim_first_s'] * 1e3:.2f} / {r['htsim_last_s'] * 1e3:.2f} "
                   f"| {r['mean_fct_s'] * 1e3:.2f} / {r['p99_fct_s'] * 1e3:.2f} / {r['max_fct_s'] * 1e3:.2f} "
                   f"| {r['max_ratio']:.2f} | {r['htsim_draws_timed_out']} ({r['htsim_timeouts']}) "
                   f"/ {r['draws_timed_out']} ({r['timeouts']}) "
                   f"| {r['drops']} |")
    return "\n".join(out)
