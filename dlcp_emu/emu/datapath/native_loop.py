"""The switch process's forwarding loop compiled (`dlcp_native.datapath.Datapath`,
dlcp_native/src/datapath/datapath.cpp): what python_loop.py's `run_model` and `drain_model` do per frame
(rings, kernel arrival times, a paced host's link, parsing, flooding, the model, rewrites,
send-ahead, lateness, queue samples) with no Python per frame.

It runs when the switch's model is the compiled one and no capture is asked for (pcap files
are written by the Python loop). Python keeps the rest: it calls `run` until the next
housekeeping, a signal (the wake-up fd) or full measurement buffers, then folds what the loop
measured into the same histograms and files, and the stats read the same counters."""
import socket
import time

from switch_models.nic import BUFFER_FULL

from dlcp_emu.emu.datapath.frames import INVALID_DLCP, MALFORMED
from dlcp_emu.emu.datapath.housekeeper import Housekeeper

WAKE, FULL = 1, 2
PENDING_LIMIT = 1 << 16     # queue samples the loop keeps before Python takes them


def flood_indices(dp):
    """The config's flood table by port index, as the compiled loops take it."""
    index = {n: i for i, n in enumerate(dp.numbers)}
    return index, [[index[q] for q in dp.flood[n]] for n in dp.numbers]


def ring_states(core, numbers):
    """{port: its ring's state} of a compiled loop's ports that have one."""
    states = {n: core.ring_state(i) for i, n in enumerate(numbers)}
    return {n: st for n, st in states.items() if st is not None}


def choose_loop(mode, engine, pcap_dir):
    """(loop, why): compiled when the model is (in mode forward: unless the config's engine
    says python); capture files are written by the Python loop."""
    if pcap_dir and engine != "python":
        return "python", "capture is written by the Python loop"
    if mode == "forward":
        return ("python", "asked for") if engine == "python" else ("native", "the bare forwarder compiled")
    if engine == "native":
        return "native", "the model is native and nothing is captured"
    return "python", "the model is Python"


class NativeForwarder:
    """forward.py's `run_forward` compiled (dlcp_native/src/datapath/forwarder.cpp)."""

    def __init__(self, dp, ring_frame_size):
        from dlcp_native.datapath import Forwarder
        index, flood = flood_indices(dp)
        socks = [dp.socks[n] for n in dp.numbers]
        self.core = Forwarder(
            [s.fileno() for s in socks],
            [ring_frame_size if s.family == socket.AF_PACKET else 0 for s in socks],
            {int.from_bytes(mac, "big"): index[ports[0]] for mac, ports in dp.routes.items()},
            flood, int(dp.cfg.rx_batch), dp.wake_r, dp.bufsize)
        self.numbers = dp.numbers
        self._rings = bool(ring_frame_size) and any(s.family == socket.AF_PACKET for s in socks)

    def run(self, dp):
        while not dp.stopping:
            if self.core.run(dp._housekeeping_due()):
                dp._drain_wakeup()
            self.collect(dp)
            dp.housekeeping()

    def collect(self, dp):
        c = self.core.counters()
        for i, n in enumerate(dp.numbers):
            dp.rx_frames[n], dp.tx_frames[n], dp.tx_errors[n] = (
                c["rx_frames"][i], c["tx_frames"][i], c["tx_errors"][i])
        dp.no_route = c["no_route"]

    def has_rings(self):
        return self._rings

    def ring_states(self):
        return ring_states(self.core, self.numbers)


class NativeLoop:
    def __init__(self, dp, ring_frame_size):
        """dp: the attached `Datapath` (its switch a `NativeSwitch`); ring_frame_size: the
        receive ring's slot on AF_PACKET ports (0: no rings)."""
        from dlcp_native.datapath import Datapath
        sw = dp.switch
        ports = []
        for p in dp.ports:
            sock = dp.socks[p["number"]]
            ring = ring_frame_size if sock.family == socket.AF_PACKET else 0
            ports.append((sock.fileno(), ring, dp.bufsize, bool(p.get("peer_paced")),
                          dp.host_queue == "priority", float(p["rate_bps"]), int(p.get("delay_ns", 0))))
        routes = {int.from_bytes(mac, "big"): sw.route_index(mac) for mac in dp.routes}
        sample_ns = int(dp.cfg.queue_sample_ns) if dp.queues is not None else 0
        self.core = Datapath(sw.core, ports, routes, [sw.route_index(n) for n in dp.numbers],
                                   flood_indices(dp)[1], int(dp.cfg.rx_batch), dp.wake_r, sample_ns,
                                   PENDING_LIMIT, dp.lateness.edges.tolist(),
                                   (dp.lateness.threshold, dp.rx_wait.threshold))
        self.core.wake_period_ns = int(dp.cfg.wake_period_ns)
        self.numbers = dp.numbers
        self._rings = any(p[1] for p in ports)
        self.last = self.core.counters()

    def run(self, dp):
        """python_loop.run_model's loop, until a stop is asked for; then its drain."""
        core = self.core
        clock = time.monotonic_ns
        housekeeping = dp._housekeeping_due()
        keeper = Housekeeper(dp)     # the kernel's counters and the files, off this thread
        try:
            while not dp.stopping:
                why = core.run(housekeeping, dp.clock_offset)
                self.collect(dp)
                if why == WAKE:
                    dp._drain_wakeup()      # the signal's handler has run: the flags are set
                now = clock()
                if now >= housekeeping or dp.report_now or why == FULL:
                    keeper.submit(dp.snapshot())
                    housekeeping = dp._housekeeping_due()
                    took = housekeeping - now - dp.housekeeping_interval_ns
                    dp.housekeeping_max_ns = max(dp.housekeeping_max_ns, took)
            core.drain(time.monotonic_ns() + int(dp.cfg.drain_s * 1e9))
            self.collect(dp)
        finally:
            keeper.close()              # before the final, synchronous housekeeping

    def collect(self, dp):
        """What the loop measured and counted since the last call, into the Datapath's
        histograms, queue rows and counters (what `datapath_stats` reads)."""
        core = self.core
        dp.lateness.merge(*core.take_lateness())    # binned in the loop (histogram.hpp)
        dp.rx_wait.merge(*core.take_rx_wait())
        samples = core.take_samples()
        if dp.queues is not None and len(samples):
            dp.queues.rows.extend(map(tuple, samples.reshape(-1, len(self.numbers) + 1).tolist()))
        dp.send_ahead = core.send_ahead
        dp.loops = core.loops
        c = core.counters()
        for n, p in zip(self.numbers, c["ports"]):
            for key in ("rx_frames", "tx_errors", "rx_errors", "flood_frames", "flood_copies", "not_flooded"):
                getattr(dp, key)[n] = p[key]
        dp.refused.update({MALFORMED: c["malformed"], INVALID_DLCP: c["invalid_dlcp"]})
        dp.rewrite_errors = c["rewrite_errors"]
        self.last = c

    # What the stats read of the receive side (as python_loop.PythonReceive).
    def has_rings(self):
        return self._rings

    def truncated_frames(self):
        return {n: p["truncated"] for n, p in zip(self.numbers, self.last["ports"])}

    def ring_states(self):
        return ring_states(self.core, self.numbers)

    def host_link_drops(self):
        """{reason: frames} the paced hosts' link models dropped (all of them buffer_full)."""
        k = sum(p["host_link_drops"] for p in self.last["ports"])
        return {BUFFER_FULL: k} if k else {}

    def on_link(self):
        return self.last["on_link"]
