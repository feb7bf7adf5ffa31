"""The incast of docs/baselines.md, in the simulator: `senders` hosts each send one flow of
737 full frames to one receiver through one switch (a star: 100 Gbit/s links of 1 us,
drop-tail `buffer` full frames per port), all at time 0, on the `reliable` transport's
endpoints (as background flows) with NewReno, or DCTCP with the port marking CE above 15
frames (htsim's DCTCP threshold). It prints, per buffer, the flows' completion times (mean /
p99 / max), what the switch dropped, the senders' timeouts and tail-loss probes, against the
ideal: every byte back to back on the receiver's link.

    python -m dlcp_emu.tools.incast [--buffers 10000,1000,170,64,32] [--senders 8]
        [--congestion newreno|dctcp] [--min-rto-us 1000] [--ssthresh inf] [--values zeros|gradients]
"""
import argparse
import math

import numpy as np
from topologies import build

from dlcp_emu.host.background import JOB, BackgroundEndpoint
from dlcp_emu.sim import SimNetwork
from dlcp_emu.sim.hosts import SimHosts
from dlcp_emu.transport import Message
from dlcp_emu.transport.congestion import ETHERNET_FRAMING
from dlcp_emu.transport.message import transport_payload_size
from dlcp_emu.transport.settings import CONGESTION, TransportSettings
from dlcp_emu.wire.layout import ETH_LEN

MTU = 1500
RATE_BPS = 100e9
DELAY_NS = 1000
FRAMES = 737
DCTCP_MARK_FRAMES = 15


class GradientFlows(BackgroundEndpoint):
    """Background flows whose bytes are seeded normal float32 values, not zeros: their chunks
    fall in all 8 magnitude classes, so a sender loses and detects per lane, as it does with a
    training job's gradients."""

    def agent_turn(self, now):
        while self.pending and self.pending[-1][0] <= now:
            start, dst, nbytes, fid = self.pending.pop()
            sender = self.senders.get(dst)
            if sender is None:
                sender = self.senders[dst] = self.sender_cls(
                    self.index, dst, job=JOB, mtu=self.mtu, cc=self.settings.cc(),
                    rtt=self.settings.rtt(self.link_rate_bps, self.mtu))
                if self.on_sender is not None:
                    self.on_sender(sender)
            values = np.random.default_rng(fid).standard_normal(-(-nbytes // 4)).astype(np.float32)
            sender.send(Message(values, tensor_id=fid, priority=7, job=JOB, src_rank=self.index, dst_rank=dst), now)
            self.started[fid] = (dst, nbytes, start)


def run(buffer_frames, senders=8, congestion="newreno", values="zeros", endpoints="native", min_rto_us=1000,
        ssthresh=math.inf):
    """One incast; returns {fct_ms: [...], drops, timeouts, probes, ideal_ms}."""
    buffered = MTU + ETH_LEN      # what a full frame weighs in a buffer (no preamble, gap, FCS)
    topo = build("star", hosts=senders + 1, host_rate_bps=RATE_BPS, delay_ns=DELAY_NS,
                 buffer_bytes=buffer_frames * buffered)
    pipeline = {"preset": "fifo"}
    if congestion == "dctcp":
        pipeline["queue_manager"] = {"name": "ecn", "mark_fraction": min(1, DCTCP_MARK_FRAMES / buffer_frames)}
    net = SimNetwork(topo, pipeline)
    hosts = SimHosts(net, {}, {})
    nbytes = FRAMES * transport_payload_size(MTU)
    flows = GradientFlows if values == "gradients" else BackgroundEndpoint
    settings = TransportSettings(congestion, int(min_rto_us * 1000), ssthresh)
    eps = {i: flows(i, [(0, senders, nbytes, i)], MTU, RATE_BPS, endpoints=endpoints, settings=settings)
           for i in range(senders)}
    eps[senders] = BackgroundEndpoint(senders, [], MTU, RATE_BPS, endpoints=endpoints, settings=settings)
    hosts.add_job(JOB, eps, {i: f"h{i + 1}" for i in eps}, udp_port=9798)
    hosts.start()
    net.loop.run()
    fct = [(done - start) / 1e6 for i in range(senders) for _, _, _, start, done in eps[i].finished]
    port = net.counters()["s1"]["ports"][senders + 1]
    snd = [s for i in range(senders) for s in eps[i].senders.values()]
    return {"fct_ms": fct, "drops": int(sum(port["drops"].values())),
            "timeouts": sum(s.timeouts for s in snd), "probes": sum(s.tail_probes for s in snd),
            "ideal_ms": senders * FRAMES * (MTU + ETHERNET_FRAMING) * 8 / RATE_BPS * 1e3}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--buffers", default="10000,1000,170,64,32", help="per-port buffers, in full frames")
    ap.add_argument("--senders", type=int, default=8)
    ap.add_argument("--congestion", default="newreno", choices=tuple(CONGESTION))
    ap.add_argument("--values", default="zeros", choices=("zeros", "gradients"),
                    help="zeros: one magnitude class (one lane); gradients: normal values, all 8 classes")
    ap.add_argument("--min-rto-us", type=float, default=1000, help="the RTO's floor (transport.min_rto_us)")
    ap.add_argument("--ssthresh", type=float, default=math.inf, help="initial slow-start threshold, packets")
    ap.add_argument("--endpoints", default="native", choices=("native", "python"))
    a = ap.parse_args(argv)
    print("| buffer (frames) | mean / p99 / max ms | dropped | timeouts | tail-loss probes |")
    print("|---|---|---|---|---|")
    for b in (int(x) for x in a.buffers.split(",")):
        r = run(b, a.senders, a.congestion, a.values, a.endpoints, a.min_rto_us, a.ssthresh)
        f = np.array(r["fct_ms"])
        assert len(f) == a.senders, f"{a.senders - len(f)} flows did not finish"
        print(f"| {b:,} | {f.mean():.3f} / {np.percentile(f, 99):.3f} / {f.max():.3f} | {r['drops']:,} "
              f"| {r['timeouts']} | {r['probes']} |")
    print(f"(ideal: {r['ideal_ms']:.3f} ms)")


if __name__ == "__main__":
    main()
