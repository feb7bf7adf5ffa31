"""Our switches and topologies for Mininet's own `mn` (`--custom examples/mn_dlcp.py`):

    sudo mn --custom examples/mn_dlcp.py --switch dlcp --topo leafspine,2,2,2 --controller none
    sudo mn --custom examples/mn_dlcp.py --switch dlcp,preset=dlcp \\
            --topo leafspine,leaves=2,spines=2,hosts_per_leaf=1,host_rate_bps=50e6 \\
            --controller none --test pingall

`--switch dlcp[,preset=NAME][,seed=N]`: a DlcpSwitch (one switch process each) running that
preset (default fifo). `--topo leafspine|star|dumbbell|fattree|rails[,ARGS]`: the project's
topologies, ARGS positional in the builder's order or by name; they carry link rates,
delays and buffers to the switches, and the routes the switches need, so `--switch dlcp`
needs one of them. Hosts get their IPs and MACs from the topology (no --mac needed) and
have offloads and IPv6 switched off by their switch. Unlike `dlcp-emu net`, host links are
not paced at their rate (mn has no hook for it) and rates are as given (no scaling).

What mn does on an error or Ctrl-C is replaced too: instead of Mininet's cleanup, which
kills processes by name and deletes every interface named like a Mininet one on the
machine, only the switch processes this mn started are stopped (by pid) and their own
interfaces deleted (by name and ifindex); mn then exits with status 1 after an error (it
would say 0). The switches' configs and stats go to `results/<stamp>-mn-<pid>/`, as
`dlcp-emu net`'s do, not to a temporary folder; what a killed mn leaves (its switch
processes, its switches' interfaces) is in a state file that `dlcp-emu clean` removes.
"""
import os
import subprocess
import sys
import time

from mininet.log import info, output

from dlcp_emu.emu import PROJECT_ROOT
from dlcp_emu.emu.cleanup import RunState, ifindex
from dlcp_emu.emu.mncli import IPERF_SECONDS, iperf3
from dlcp_emu.emu.mnswitch import DlcpSwitch, configure_host
from switch_models import PipelineSpec, SpecError as SwitchSpecError
from topologies import build, builder_params

DEFAULTS = {
    "leaf-spine": {"leaves": 2, "spines": 2, "hosts_per_leaf": 2, "host_rate_bps": 100e6},
    "star": {"hosts": 4, "host_rate_bps": 100e6},
    "dumbbell": {"hosts_per_side": 2, "host_rate_bps": 100e6, "bottleneck_rate_bps": 50e6},
    "fat-tree": {"k": 4, "host_rate_bps": 100e6},
    "rail-optimized": {"servers": 2, "gpus_per_server": 2, "nic_rate_bps": 100e6, "nvlink_rate_bps": 400e6},
}
NAMES = {"leafspine": "leaf-spine", "star": "star", "dumbbell": "dumbbell", "fattree": "fat-tree",
         "rails": "rail-optimized"}


def venv_python():
    """The project's interpreter, for the switch processes: mn runs Debian's python3, which
    has Mininet but not the project's packages."""
    path = PROJECT_ROOT / ".venv" / "bin" / "python"
    return str(path) if path.exists() else sys.executable


def topo_factory(kind):
    """A `topos` entry: positional args fill the builder's parameters in order."""
    names = list(builder_params(kind))

    def make(*args, **kwargs):
        if len(args) > len(names):
            raise ValueError(f"--topo {kind}: at most {len(names)} arguments ({', '.join(names)})")
        params = {**DEFAULTS[kind], **dict(zip(names, args)), **kwargs}
        topology = build(kind, **params)
        # The switches read routes, rates and buffers from the description itself.
        return topology.to_mininet_topo(switch_opts={"topology": topology})
    make.__name__ = f"{kind.replace('-', '')}Topo"
    return make


class MnDlcpSwitch(DlcpSwitch):
    """DlcpSwitch for `mn`: takes preset=, configures the hosts it faces, runs the project's
    interpreter, and is recorded for `cleanup`."""

    started = []
    state = None       # this mn's record of what it made, for `dlcp-emu clean` (a RunState)
    stats_dir_default = None

    def __init__(self, name, preset=None, topology=None, **params):
        if topology is None:
            raise ValueError("--switch dlcp needs a topology of examples/mn_dlcp.py (--topo "
                             f"{'|'.join(NAMES)}): its switches route by it")
        if preset is not None:
            try:
                PipelineSpec.parse({"preset": preset})
            except SwitchSpecError as e:
                raise ValueError(f"--switch dlcp,preset={preset}: {e}") from None
            params["pipeline"] = preset
        if MnDlcpSwitch.stats_dir_default is None:
            MnDlcpSwitch.stats_dir_default = str(
                PROJECT_ROOT / "results" / f"{time.strftime('%Y%m%d-%H%M%S')}-mn-{os.getpid()}")
        params.setdefault("stats_dir", MnDlcpSwitch.stats_dir_default)
        super().__init__(name, topology=topology, **params)
        self.python = venv_python()
        self.ifindex = {}

    def start(self, controllers=None):
        for intf in self.intfList():
            link = getattr(intf, "link", None)
            if link is None:
                continue
            peer = link.intf2 if link.intf1 is intf else link.intf1
            if not isinstance(peer.node, DlcpSwitch) and not getattr(peer.node, "dlcp_configured", False):
                configure_host(peer.node)
                peer.node.dlcp_configured = True
        self.ifindex = {i.name: ifindex(i.name) for i in self.intfList() if i.name != "lo"}
        if MnDlcpSwitch.state is None:
            MnDlcpSwitch.state = RunState(run_id=f"mn-{os.getpid()}-{time.strftime('%Y%m%d-%H%M%S')}",
                                          command="mn --custom", stats_dir=self.stats_dir)
            info(f"(dlcp switches: configs and stats in {self.stats_dir}) ")
        MnDlcpSwitch.state.add_interfaces(self.ifindex)
        MnDlcpSwitch.state.confirm_interfaces(list(self.ifindex))
        MnDlcpSwitch.started.append(self)
        super().start(controllers)
        MnDlcpSwitch.state.add_process("switch", self.name, self.proc.pid, self.proc_start)

    def stop(self, deleteIntfs=True):
        """mn's way out when all went well: the last switch stopped takes the state file along."""
        super().stop(deleteIntfs)
        if self in MnDlcpSwitch.started:
            MnDlcpSwitch.started.remove(self)
        if not MnDlcpSwitch.started and MnDlcpSwitch.state is not None:
            MnDlcpSwitch.state.remove()
            MnDlcpSwitch.state = None


def cleanup():
    """mn's cleanup on an error or Ctrl-C, replaced: this mn's switch processes by pid, and
    their interfaces that are still the ones they had (name and ifindex). mn calls it from
    its handler of the error and then exits 0; after an error (not a Ctrl-C) this exits 1."""
    gone = []
    for sw in MnDlcpSwitch.started:
        sw.stop_process()
        for name, idx in sw.ifindex.items():
            if idx is not None and ifindex(name) == idx:
                subprocess.run(["ip", "link", "del", name], capture_output=True)
                gone.append(name)
    MnDlcpSwitch.started.clear()
    if MnDlcpSwitch.state is not None:
        MnDlcpSwitch.state.remove()
        MnDlcpSwitch.state = None
    info(f"*** dlcp: stopped this mn's switch processes, deleted {len(gone)} interface(s); "
         "Mininet's own cleanup (`mn -c`: by process name) was not run\n")
    error = sys.exc_info()[0]
    if error is not None and not issubclass(error, KeyboardInterrupt):
        sys.exit(1)


def iperf_test(net, seconds=IPERF_SECONDS):
    """`--test iperf`: TCP from the first host to the last with iperf3 (Mininet's own test
    waits forever on Debian 12's iperf 2.1, mininet issue #1060)."""
    client, server = net.hosts[0], net.hosts[-1]
    output(f"*** iperf3: TCP from {client.name} to {server.name} for {seconds} s\n"
           f"*** Results: {iperf3(client, server, seconds)}\n")


def all_test(net):
    """`--test all`: pingall, then iperf."""
    net.pingAll()
    iperf_test(net)


topos = {name: topo_factory(kind) for name, kind in NAMES.items()}
switches = {"dlcp": MnDlcpSwitch}
tests = {"iperf": iperf_test, "all": all_test}
