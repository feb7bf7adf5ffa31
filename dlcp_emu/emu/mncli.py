"""Mininet's CLI on a network of our switches (`dlcp-emu net`, and `mn --custom`): every
command of Mininet's (`h1 ping h2`, `iperf h1 h2`, `h1 tcpdump -c5 -ni h1-eth0`, `pingall`,
`net`, `py ...`) plus `ports`, the switches' live view once.

Commands come from the terminal, or, when standard input is not one or a script is given,
line by line from it, each echoed after the prompt; `exit` ends either. In that batch mode
Mininet's CLI would read standard input while a command runs, to pass keys to the node,
and so eat the next commands: it is given a pipe that never has anything to read instead.
"""
import logging
import os
import shutil
import signal
import subprocess
import threading
import time

from mininet.cli import CLI
from mininet.log import output

from dlcp_emu.emu.liveview import render
from dlcp_emu.emu.mnswitch import DlcpSwitch

FRESH_STATS_S = 2.0     # the longest `ports` waits for the switches' answer to SIGUSR1
IPERF_PORT = 5201
IPERF_SECONDS = 5


def fresh_stats(switches, timeout=FRESH_STATS_S):
    """{switch: stats} written after this call: each switch is asked (SIGUSR1) to write its
    counters at once; a switch that does not answer in time gives its latest ones."""
    before = {s.name: (s.read_stats() or {}).get("snapshot", -1) for s in switches}
    for s in switches:
        s._signal(signal.SIGUSR1)
    deadline = time.monotonic() + timeout
    latest = {}
    while True:
        latest = {s.name: s.stats() for s in switches}
        if all((st or {}).get("snapshot", -1) > before[n] for n, st in latest.items()):
            return latest
        if time.monotonic() > deadline:
            return latest
        time.sleep(0.01)


def iperf3(client, server, seconds):
    """'sender X Mbit/s, receiver Y Mbit/s', or what went wrong: a one-off iperf3 server, a
    client run bounded by `timeout`, both ended whatever happens."""
    import json
    srv = server.popen(["iperf3", "-s", "-1", "-p", str(IPERF_PORT)], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 5
        while f":{IPERF_PORT} " not in server.cmd(f"ss -Htln sport = :{IPERF_PORT}"):
            if srv.poll() is not None or time.monotonic() > deadline:
                return f"the iperf3 server on {server.name} did not start"
            time.sleep(0.05)
        out = client.cmd(f"timeout {seconds + 15} iperf3 -J -c {server.IP()} -p {IPERF_PORT} "
                         f"-t {seconds}")
        try:
            end = json.loads(out[out.index("{"):])["end"]
            return (f"sender {end['sum_sent']['bits_per_second'] / 1e6:.2f} Mbit/s, receiver "
                    f"{end['sum_received']['bits_per_second'] / 1e6:.2f} Mbit/s")
        except (ValueError, KeyError):
            return f"iperf3 failed: {out.strip()[-300:]}"
    finally:
        if srv.poll() is None:
            srv.terminate()
        srv.wait(timeout=5)


def _in_log_write(frame):
    """True if `frame` runs inside a logging handler, which would swallow an exception."""
    while frame is not None:
        if frame.f_code.co_filename == logging.__file__:
            return True
        frame = frame.f_back
    return False


class DlcpCLI(CLI):
    """Mininet's CLI and `ports`.

    SIGTERM ends the session even mid-command. The handler before the session's
    (EmulationRun raises RunTerminated) is not called where its exception would be lost:
    Mininet's log handler catches, and prints, every exception raised while it writes. So
    while a node runs a command, that command is interrupted (as Ctrl-C would) and the signal
    passed on once it returns; a pure Python command (`py ...`) gets it at once, and should
    it swallow it, it is passed on again when the command returns. A second SIGTERM is passed
    on at once, wherever it lands.
    """

    def __init__(self, mininet, echo=False, **kwargs):
        self.echo = echo
        self.ports_before = {}
        self.terminated = None
        self.in_command = False
        self._before = None
        if threading.current_thread() is threading.main_thread():
            self._before = signal.signal(signal.SIGTERM, self._on_sigterm)
            if self._before == signal.SIG_IGN:      # ignored before: so it stays
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                self._before = None
        try:
            super().__init__(mininet, **kwargs)     # runs the session
        finally:
            if self._before is not None:
                signal.signal(signal.SIGTERM, self._before)

    def _on_sigterm(self, signum, frame):
        first = self.terminated is None
        self.terminated = (signum, frame)
        waiting = [node for node in self.mn.values() if node.waiting]
        if first and self.in_command and (waiting or _in_log_write(frame)):
            for node in waiting:
                node.sendInt()              # its command ends; onecmd passes the signal on
            return
        self._pass_on()

    def _pass_on(self):
        """The handler before the session's, on the SIGTERM that came."""
        before = self._before
        if callable(before):
            before(*self.terminated)
        else:                               # the default: end the process by the signal
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)

    def onecmd(self, line):
        if self.echo and line.strip():
            output(f"{self.prompt}{line.rstrip()}\n")
        outer, self.in_command = self.in_command, True     # `source` runs commands in one
        try:
            stop = super().onecmd(line)
        except Exception as e:       # a command that fails ends itself, not the session
            output(f"*** {line.split()[0] if line.split() else line}: {type(e).__name__}: {e}\n")
            stop = None
        finally:
            self.in_command = outer
        if self.terminated:          # the signal was swallowed mid-command: pass it on again
            self._pass_on()
            return True
        return stop

    def do_source(self, line):
        """Read commands from a file, until its end or `exit`.
           Usage: source <file>"""
        try:
            with open(line.strip()) as f:
                for command in f:
                    if self.onecmd(command):
                        break
        except OSError as e:
            output(f"source: cannot read {line.strip()}: {e.strerror}\n")

    def do_iperf(self, line):
        """TCP throughput from one host to another with iperf3 (Mininet's own `iperf` waits
        forever on the iperf 2.1 that Debian 12 ships: mininet issue #1060).
           Usage: iperf [client server] [seconds]"""
        words = line.split()
        seconds = int(words.pop()) if words and words[-1].isdigit() else IPERF_SECONDS
        names = words or [h.name for h in (self.mn.hosts[0], self.mn.hosts[-1])]
        if len(names) != 2 or any(n not in self.mn for n in names):
            output("usage: iperf [client server] [seconds], two hosts of this network\n")
            return
        client, server = self.mn[names[0]], self.mn[names[1]]
        output(f"*** iperf3: TCP from {client.name} to {server.name} for {seconds} s\n")
        result = iperf3(client, server, seconds)
        output(f"*** Results: {result}\n")

    def do_ports(self, _line):
        """Each switch port: utilisation since the last `ports`, queue now, drops by reason.
           Usage: ports"""
        switches = [s for s in self.mn.switches if isinstance(s, DlcpSwitch)]
        if not switches:
            output("ports: no dlcp switch in this network\n")
            return
        stats = fresh_stats(switches)
        width = shutil.get_terminal_size().columns - 1
        output("\n".join(render(self.ports_before, stats, width=width)) + "\n")
        self.ports_before = stats


def session(net, script=None, stdin=None):
    """Mininet's CLI on `net` until `exit` or the end of its input (Ctrl-D): interactive on
    a terminal, else batch (see the module's docstring). script: a file of commands."""
    import sys
    stdin = stdin or sys.stdin
    if script is None and stdin.isatty():
        DlcpCLI(net, stdin=stdin)
        return
    quiet_r, quiet_w = os.pipe()          # never written: nothing to read while commands run
    try:
        with os.fdopen(quiet_r) as quiet:
            DlcpCLI(net, stdin=quiet, echo=True, script=script or f"/proc/self/fd/{stdin.fileno()}")
    finally:
        os.close(quiet_w)
