"""Which engine runs a simulated network: the one place that decides.

- `native`: switches, NICs, wires and the event loop in the compiled core
  (`dlcp_emu.sim.native`), the hosts in Python;
- `python`: `SimNetwork`, every hop in Python (the oracle the native engine is held to);
- `auto` (the default): native, unless the pipeline has a stage only Python has (a stage a
  user wrote), which runs on the Python path; the summary says which ran and why.
"""
from dlcp_native.switch import NotNativeError

from dlcp_emu.experiment.spec import ENGINES
from dlcp_emu.sim.native import NativeSimNetwork
from dlcp_emu.sim.network import SimNetwork

# Summary keys only the wall clock decides: the rest is identical on either engine.
WALL_CLOCK_KEYS = frozenset({"wall_s", "process_cpu_s", "core_wall_s", "packet_hops_per_s", "engine",
                             "engine_note"})


def make_network(topology, pipeline, engine="auto", seed=0, record_drops=False):
    """The network; `net.engine` says which engine runs it and `net.engine_note` why."""
    net, net.engine, net.engine_note = _choose(topology, pipeline, engine, seed, record_drops)
    return net


def _choose(topology, pipeline, engine, seed, record_drops):
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    if engine == "python":
        return SimNetwork(topology, pipeline, seed=seed, record_drops=record_drops), "python", "asked for"
    try:
        net = NativeSimNetwork(topology, pipeline, seed=seed, record_drops=record_drops)
    except NotNativeError as e:
        if engine == "native":
            raise ValueError(f"engine: 'native' cannot run this pipeline ({e}); use 'auto' or 'python'") from None
        return (SimNetwork(topology, pipeline, seed=seed, record_drops=record_drops), "python",
                f"the pipeline has a stage the native core lacks ({e})")
    return net, "native", "asked for" if engine == "native" else "every stage of the pipeline is native"
