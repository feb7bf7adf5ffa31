"""`dlcp-emu bench switch`: one switch and its hosts, real frames, measured.

Three switches are measured in turn on the same star (h1, h2 and h3 on s1, ports at 100
Gbit/s so that the model never paces and only the process's speed limits):
- `dlcp`: our switch process with the dlcp preset;
- `forward`: the same process in pass-through mode (recv -> route -> send, no model);
- `bridge`: a Linux bridge (Mininet's LinuxBridge), the kernel's own forwarding.

For each: the forwarded packets/s at 64 B (60-byte UDP frames, the Ethernet minimum) and
1500 B while h1 sends to h2 as fast as it can (the slope of s1's transmit counters in the
steady middle of the trial; the median of three trials). For dlcp also the highest offered
rate with < 0.1 % loss, and the one-way latency (DLCP frames stamped with CLOCK_MONOTONIC,
shared by the namespaces, at the send, to the kernel's delivery into the receiver's socket)
at a light load before any overload (h1 -> h2; the median of three trials: one trial's p99
is this VM's wake-up tail) and at the lossless rate, in the same trials that find it
(90-byte DLCP frames, the smallest that carry the stamp; 1 in 50 goes to h3 and is timed
there, so that no socket filter runs on the load's frames). "Added latency" is a switch's
latency at a percentile minus the bridge's median: what the userspace switch adds over the
kernel's own path, receiver wake-up included in neither.

The switch process is pinned to CPU 1 and runs as a real-time task, as in every emulation
(docs/datapath.md, "bench switch"), the generator and receiver on CPU 0. On a 2-core
machine the generator (compiled, ~700k frames/s of 64 B here) is a limit of its own: the output
reports its rate and flags any figure that it bounds (`*_generator_bound`). A Linux bridge
forwards in the sender's own softirq, so on this set-up it is always generator-bound.
"""
import json
import os
import sys
import time

import numpy as np

from dlcp_emu.emu import PROJECT_ROOT

SW_CPU = 1
GEN_CPU = 0
LOSS_OK = 0.001
FAST = 5_000_000            # "as fast as you can" offered rate
LIGHT_TRIALS = 3            # latency trials at the light load (a median of them is reported)
NONLOCAL_IP = "10.0.0.200"  # h2 drops these at once in IP (no ICMP, no socket)
MAX_TRIALS = 3              # overload trials a figure is the median of
PROBE_EVERY = 50            # at a high rate one frame in this many is timed (sent to h3)


# -- one trial ------------------------------------------------------------------------------

def _counter(intfs, name="tx_packets"):
    """The sum of a counter over the interfaces."""
    total = 0
    for intf in intfs:
        with open(f"/sys/class/net/{intf}/statistics/{name}") as f:
            total += int(f.read())
    return total


class Bench:
    def __init__(self, run, topology, trial_s, log):
        self.run = run
        self.t = topology
        self.trial_s = trial_s
        self.log = log or (lambda m: None)
        self.root = PROJECT_ROOT

    def _traffic(self, host, args):
        return self.run.popen(host, [sys.executable, "-m", "dlcp_emu.emu.trafficgen", *map(str, args)],
                              cwd=self.root)

    def _send_args(self, rate, size=None, dlcp_payload=None, duration=None, dst_ip=NONLOCAL_IP,
                   sample_every=0):
        t = self.t
        a = ["send", "--intf", "h1-eth0", "--src-mac", t.host_mac("h1"), "--dst-mac",
             t.host_mac("h2"), "--src-ip", t.host_ip("h1"), "--dst-ip", dst_ip,
             "--rate-pps", rate, "--duration", duration or self.trial_s, "--cpu", GEN_CPU,
             "--burst", 64, "--flows", 8]
        if size is not None:
            a += ["--udp-size", size]
        else:
            a += ["--class", f"0:7:0:{dlcp_payload or 0}:1"]
        if sample_every:
            a += ["--sample-every", sample_every]
        return a

    def _drain(self, intfs):
        """Wait until the egress counters stop moving (the switch emptied its queues)."""
        last = _counter(intfs)
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            time.sleep(0.05)
            now = _counter(intfs)
            if now == last:
                return now
            last = now
        return last

    def trial(self, rate, size=60, probe_every=0):
        """Offer `rate` pps of `size`-byte frames from h1; returns sent, forwarded and the
        steady forwarding rate. probe_every: DLCP frames instead (90 B), one in that many
        timed by a receiver on h3 (`latency` in the result)."""
        out_if = ("s1-eth2", "s1-eth3")   # the load's port and the probes'
        self._drain(out_if)
        base = _counter(out_if)
        lost_before = self._switch_losses()
        if probe_every:   # the probes go to h3, so that no socket filter sees the load
            rx = self._receiver(self.trial_s, probe_every, host="h3")
            p = self._traffic("h1", self._send_args(rate, dlcp_payload=0, sample_every=probe_every) +
                              ["--probe-dst-mac", self.t.host_mac("h3"), "--probe-dst-ip", self.t.host_ip("h3")])
            size = 90
        else:
            p = self._traffic("h1", self._send_args(rate, size=size))
        samples = []
        while p.poll() is None:
            samples.append((time.monotonic(), _counter(out_if)))
            time.sleep(0.05)
        out, err = p.communicate(timeout=30)
        if p.returncode != 0:
            raise RuntimeError(f"sender failed: {err.decode()}")
        sent = json.loads(out)
        forwarded = self._drain(out_if) - base
        # Middle half of the trial: start-up and the drain after the sender stopped left out.
        mid = samples[len(samples) // 4: 3 * len(samples) // 4]
        slope = ((mid[-1][1] - mid[0][1]) / (mid[-1][0] - mid[0][0])) if len(mid) > 1 else 0.0
        r = {"offered_pps": rate, "sent": sent["sent"], "sent_pps": sent["pps"],
             "send_errors": sent["errors"], "forwarded": forwarded,
             "forwarded_pps": round(slope),
             # At least 0: what the hosts' kernels send of their own (IPv6 neighbour
             # discovery) is counted as forwarded too, a frame or two a trial.
             "loss": max(0.0, round(1 - forwarded / sent["sent"], 6)) if sent["sent"] else None}
        lost_after = self._switch_losses()
        if lost_before is not None and lost_after is not None:
            # Where the frames went missing: the switch's rings overflowed (it fell behind,
            # or this VM stalled it), its model dropped them, or the kernel refused a send.
            r["lost_at"] = {k: lost_after[k] - lost_before[k] for k in lost_after}
        self.log(f"  trial {size} B offered {rate:,.0f}: sent {sent['pps']:,} pps, "
                 f"forwarded {r['forwarded_pps']:,} pps, loss {r['loss']}"
                 + (f" (lost at: {r['lost_at']})" if "lost_at" in r else ""))
        if probe_every:
            r["latency"] = self._timed(rx, sent, probe_every, rate)
        return r

    def _switch_losses(self):
        """{"ring_full", "model", "tx_refused"}: s1's counts so far (None for a bridge)."""
        from dlcp_emu.emu.links import fresh_stats
        from dlcp_emu.emu.mnswitch import DlcpSwitch
        sw = self.run.switch("s1")
        if not isinstance(sw, DlcpSwitch):
            return None
        st = (fresh_stats([sw], time.monotonic() + 2) or {}).get("s1")
        if not st:
            return None
        dropped = dict((st.get("conservation") or {}).get("dropped") or {})
        refused = dropped.pop("tx_refused", sum(st["tx_errors"].values()))
        return {"ring_full": sum(st["rx_socket_drops"].values()), "model": sum(dropped.values()),
                "tx_refused": refused}

    def max_rate(self, size, trials=MAX_TRIALS):
        """The forwarding rate under overload: the median trial of `trials` (by forwarded
        packets/s), each kept in `trials`. One trial's figure moved 20-40% between runs here
        (the Python switch 114-164k), so a ratio of two single trials moved more."""
        runs = [self.trial(FAST, size) for _ in range(trials)]
        r = dict(sorted(runs, key=lambda x: x["forwarded_pps"])[len(runs) // 2])
        # The generator, not the switch, set the pace when everything it sent got through.
        r["generator_bound"] = r["loss"] is not None and r["loss"] < 0.01
        r["trials"] = [x["forwarded_pps"] for x in runs]
        return r

    def lossless(self, start=50_000, step=50_000, top=None, probe_every=PROBE_EVERY):
        """Highest offered rate with loss < 0.1 %: steps up until a loss (or the generator
        cannot offer the rate), then halves the step twice between the last good and bad.
        Every trial carries the latency probe (1 frame in `probe_every`, to h3), and the
        latency at the rate found is its own trial's (`latency`): a separate probe trial at
        the rate found without it had overloaded the switch (p50 10 ms, 8.5% of the samples
        lost), the receiver's socket filter then running in the switch's send once a frame."""
        good, bad, trials = 0, None, []
        rate = start
        gen_limited = False
        while bad is None and (top is None or rate <= top):
            r = self.trial(rate, probe_every=probe_every)
            trials.append(r)
            if r["sent_pps"] < 0.97 * rate:
                gen_limited = True
                break
            if r["loss"] < LOSS_OK:
                good = rate
                rate += step
            else:
                bad = rate
        if bad is not None:
            for _ in range(2):
                mid = (good + bad) // 2
                r = self.trial(mid, probe_every=probe_every)
                trials.append(r)
                if r["sent_pps"] >= 0.97 * mid and r["loss"] < LOSS_OK:
                    good = mid
                else:
                    bad = mid
        at = next((t["latency"] for t in trials if t["offered_pps"] == good and "latency" in t), {})
        return {"lossless_pps": good, "generator_bound": gen_limited, "trials": trials, "latency": at}

    def light_latency(self, rate, trials=LIGHT_TRIALS):
        """`latency` at a light load, `trials` times: this VM's wake-up tail moves one trial's
        p99 several-fold (130-420 us in one sitting), so p50 and p99 are the medians over the
        trials, each trial's kept beside them."""
        runs = [r for r in (self.latency(rate) for _ in range(trials)) if r.get("samples")]
        if not runs:
            return {"rate_pps": rate, "samples": 0}
        out = {"rate_pps": rate, "trials": len(runs), "samples": sum(r["samples"] for r in runs),
               "expected": sum(r["expected"] for r in runs), "max_us": max(r["max_us"] for r in runs)}
        for key in ("p50_us", "p99_us"):
            out[key] = round(float(np.median([r[key] for r in runs])), 3)
            out[f"{key}_trials"] = [r[key] for r in runs]
        self.log(f"  latency at {rate:,} pps, median of {len(runs)} trials: p50 {out['p50_us']} us, "
                 f"p99 {out['p99_us']} us")
        return out

    def latency(self, rate, seconds=2.0):
        """One-way delay h1 -> h2 of DLCP frames (90 B) at `rate` pps."""
        rx = self._receiver(seconds)
        tx = self._traffic("h1", self._send_args(rate, dlcp_payload=0, duration=seconds))
        tx_out, _ = tx.communicate(timeout=seconds + 20)
        return self._timed(rx, json.loads(tx_out), 0, rate)

    def _receiver(self, seconds, sample_every=0, host="h2"):
        """A receiver on `host`, ready (its socket bound) when this returns."""
        rdy = os.path.join(self.run.run_dir, f"recv-{time.monotonic_ns()}.ready")
        args = ["recv", "--intf", f"{host}-eth0", "--duration", seconds + 5, "--idle", 0.5,
                "--ready", rdy]
        if sample_every:
            args += ["--job", 1]
        rx = self._traffic(host, args)
        deadline = time.monotonic() + 10
        while not os.path.exists(rdy) and rx.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        return rx

    def _timed(self, rx, sent, sample_every, rate):
        """The receiver's one-way delays of the frames `sent` (the sender's summary)."""
        rx_out, rx_err = rx.communicate(timeout=30)
        if rx.returncode != 0:
            raise RuntimeError(f"receiver failed: {rx_err.decode()}")
        got = json.loads(rx_out)
        cls = next(iter(got["classes"].values()), None)
        if cls is None:
            return {"rate_pps": rate, "samples": 0}
        expect = sent["sent"] // sample_every + 1 if sample_every else sent["sent"]
        r = {"rate_pps": rate, "samples": cls["count"], "expected": expect,
             "p50_us": cls["delay_p50_us"], "p99_us": cls["delay_p99_us"],
             "max_us": cls["delay_max_us"],
             "receiver_wait_p50_us": got["rx_wait_p50_us"], "receiver_wait_p99_us": got["rx_wait_p99_us"]}
        self.log(f"  latency at {rate:,} pps: p50 {r['p50_us']} us, p99 {r['p99_us']} us "
                 f"({r['samples']} samples; the receiver then read them {r['receiver_wait_p50_us']} us later, "
                 f"p99 {r['receiver_wait_p99_us']} us)")
        return r


# -- the whole benchmark ------------------------------------------------------------------------

def _ratio(a, b):
    return round(a / b, 3) if a and b else None


def run(trial_s=2.0, bridge=True, log=None, realtime=True):
    """realtime: the switch process is a real-time task, as in every emulation (`emu/run.py`):
    without, any process the machine runs on the switch's CPU takes it for milliseconds, and
    its rings overflow (all of a trial's losses were `ring_full`)."""
    from mininet.log import setLogLevel
    from mininet.nodelib import LinuxBridge

    from dlcp_emu.emu.net import EmulationRun
    from dlcp_emu.emu.run import SWITCH_RT_PRIORITY
    from topologies import star

    setLogLevel("error")
    log = log or (lambda m: None)
    t = star(3, host_rate_bps=100e9)   # h1 sends, h2 takes the load, h3 the latency probes
    light = 10_000
    res = {"machine_cpus": os.cpu_count(), "switch_cpu": SW_CPU, "generator_cpu": GEN_CPU,
           "trial_seconds": trial_s, "frame_64_bytes_without_fcs": 60, "switch_realtime": realtime}
    opts = {"cpu": SW_CPU, "rt_priority": SWITCH_RT_PRIORITY if realtime else None}
    detail = {}

    # Hosts unpaced: the generator's frames reach the switch as fast as it makes them, so
    # that the switch alone is measured.
    log("dlcp (model, dlcp preset)")
    with EmulationRun(t, "dlcp", switch_opts=opts, pace_hosts=False) as r:
        b = Bench(r, t, trial_s, log)
        lat_light = b.light_latency(light)   # before the overloads, which the kernel pays for after
        m64, m1500 = b.max_rate(60), b.max_rate(1514)
        ll = b.lossless()
        lat_loaded = ll["latency"]
    st = r.stats["s1"]
    detail["dlcp"] = {"max_64": m64, "max_1500": m1500, "lossless": ll,
                      "latency_light": lat_light, "latency_at_lossless": lat_loaded,
                      "lateness": st["lateness"], "rx_socket_drops": st["rx_socket_drops"],
                      "conservation_ok": st["conservation"]["ok"]}
    res.update(dlcp_pps_64=m64["forwarded_pps"], dlcp_pps_1500=m1500["forwarded_pps"],
               dlcp_lossless_pps_64=ll["lossless_pps"], dlcp_lossless_frame_bytes=90,
               dlcp_pps_64_generator_bound=m64["generator_bound"],
               dlcp_lossless_generator_bound=ll["generator_bound"],
               dlcp_conservation_ok=st["conservation"]["ok"])

    log("dlcp in Python (the same process with the Python model)")
    with EmulationRun(t, "dlcp", switch_opts={**opts, "engine": "python"}, pace_hosts=False) as r:
        b = Bench(r, t, trial_s, log)
        p64 = b.max_rate(60)
    detail["python_dlcp"] = {"max_64": p64, "engine": r.stats["s1"].get("engine")}
    res.update(python_dlcp_pps_64=p64["forwarded_pps"], python_dlcp_pps_64_generator_bound=p64["generator_bound"],
               dlcp_engine=st.get("engine"), dlcp_engine_note=st.get("engine_note"))

    log("forward (same process, no model)")
    with EmulationRun(t, "fifo", mode="forward", switch_opts=opts, pace_hosts=False) as r:
        b = Bench(r, t, trial_s, log)
        f_lat = b.light_latency(light)
        f64, f1500 = b.max_rate(60), b.max_rate(1514)
        f_ll = b.lossless(step=100_000)
    fst = r.stats["s1"]
    detail["forward"] = {"max_64": f64, "max_1500": f1500, "latency_light": f_lat, "lossless": f_ll,
                         "rx_socket_drops": fst["rx_socket_drops"]}
    res.update(forward_pps_64=f64["forwarded_pps"], forward_pps_1500=f1500["forwarded_pps"],
               forward_pps_64_generator_bound=f64["generator_bound"],
               forward_lossless_pps=f_ll["lossless_pps"], forward_lossless_generator_bound=f_ll["generator_bound"])
    # The target: dlcp's lossless rate against the bare forwarder's, under overload and lossless
    # alike (the same kernel path, rings and probe; only the model differs).
    res["dlcp_lossless_to_forward_max"] = _ratio(ll["lossless_pps"], f64["forwarded_pps"])
    res["dlcp_lossless_to_forward_lossless"] = _ratio(ll["lossless_pps"], f_ll["lossless_pps"])

    bridge_p50 = None
    if bridge:
        log("bridge (Linux bridge)")
        with EmulationRun(t, switch=LinuxBridge, pace_hosts=False) as r:
            b = Bench(r, t, trial_s, log)
            b_lat = b.light_latency(light)
            b64, b1500 = b.max_rate(60), b.max_rate(1514)
        detail["bridge"] = {"max_64": b64, "max_1500": b1500, "latency_light": b_lat}
        res.update(bridge_pps_64=b64["forwarded_pps"], bridge_pps_1500=b1500["forwarded_pps"],
                   bridge_pps_64_generator_bound=b64["generator_bound"])
        bridge_p50 = b_lat.get("p50_us")
        res["bridge_p50_latency_us"] = bridge_p50

    res["generator_pps_64"] = max(d["max_64"]["sent_pps"] for d in detail.values())
    res["dlcp_p50_latency_us"] = lat_light.get("p50_us")
    res["dlcp_p99_latency_us"] = lat_light.get("p99_us")
    res["dlcp_p99_latency_at_lossless_us"] = lat_loaded.get("p99_us")
    base = bridge_p50 or 0.0

    def added(v):
        return None if v is None else round(v - base, 3)

    res["dlcp_p50_added_latency_us"] = added(lat_light.get("p50_us"))
    res["dlcp_p99_added_latency_us"] = added(lat_light.get("p99_us"))
    res["dlcp_p99_added_latency_at_lossless_us"] = added(lat_loaded.get("p99_us"))
    res["forward_p99_added_latency_us"] = added(f_lat.get("p99_us"))
    res["latency_light_load_pps"] = light
    res["added_latency_baseline"] = "bridge p50" if bridge_p50 is not None else "none"
    res["detail"] = detail
    return res
