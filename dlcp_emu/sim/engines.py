"""The simulated network on the engine `experiment.engine.choose_engine` picks for its pipeline:

- `native`: switches, NICs, wires and the event loop in the compiled core
  (`dlcp_emu.sim.native`), the hosts as `sim.run` places them;
- `python`: `SimNetwork`, every hop in Python (the oracle the native engine is held to);
- `auto` (the default): native, unless the pipeline has a stage only Python has (a stage a
  user wrote), which runs on the Python path; the summary says which ran and why.
"""
from dlcp_emu.experiment.engine import choose_engine
from dlcp_emu.sim.native import NativeSimNetwork
from dlcp_emu.sim.network import SimNetwork

# Summary keys only the wall clock decides: the rest is identical on either engine.
WALL_CLOCK_KEYS = frozenset({"wall_s", "process_cpu_s", "core_wall_s", "run_cpu_s", "core_cpu_s",
                             "packet_hops_per_s", "engine", "engine_note", "memory_pages"})


def make_network(topology, pipeline, engine="auto", seed=0, record_drops=False):
    """The network; `net.engine` says which engine runs it and `net.engine_note` why."""
    chosen, note = choose_engine(engine, pipeline=pipeline)
    network = NativeSimNetwork if chosen == "native" else SimNetwork
    net = network(topology, pipeline, seed=seed, record_drops=record_drops)
    net.engine, net.engine_note = chosen, note
    return net
