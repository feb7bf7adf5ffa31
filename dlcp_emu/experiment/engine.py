"""Which engine runs a part of an experiment: the one place that decides, for the simulated
network, the emulated switches and the emulated hosts' data planes alike.

- `python`: the Python models, the oracle;
- `native`: the compiled twins; a part that has none is an error naming it;
- `auto` (the default): the compiled twin where the part has one, else its Python model
  (a stage or a transport written in Python alone), with a note saying why.

A switch pipeline has a twin when the core implements each of its stages (`dlcp_native.not_native`
reads the stage registries against `dlcp_native.NATIVE_STAGES`); a transport when the
transport registry gives it compiled endpoints (`Transport.native`).
"""
from dlcp_native.switch import not_native

from dlcp_emu.transport.registry import TRANSPORTS, transport as find_transport

ENGINES = ("auto", "native", "python")
KERNEL = "kernel"    # kernel TCP: neither engine's, the host's own stack


def choose_engine(engine, *, pipeline=None, transport=None):
    """(engine, note) of a part that runs `pipeline` (a switch or a network of them: a preset
    name, a [switch] table or a PipelineSpec) or the endpoints of `transport` (a host's, by
    name), from the engine asked for: "native" or "python" ("kernel" for kernel TCP's
    endpoints), and why. ValueError for an unknown engine, or `native` where a part has no twin."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    t = None if transport is None else find_transport(transport)
    if t is not None and t.kernel:
        return KERNEL, f"transport {t.name}: the kernel's"
    if engine == "python":
        return "python", "asked for"
    for what, lacks, allowed, native in _parts(pipeline, t):
        if lacks is None:
            continue
        if engine == "native":
            raise ValueError(f"engine: 'native' cannot run {what} ({lacks}{allowed}); use 'auto' or 'python'")
        return "python", lacks
    return "native", "asked for" if engine == "native" else native


def _parts(pipeline, t):
    """(what, why it has no twin or None, what has one, why auto is native) of each part asked about."""
    if pipeline is not None:
        why = not_native(pipeline)
        yield ("this pipeline", why and f"the pipeline has a stage the native core lacks ({why})", "",
               "every stage of the pipeline is native")
    if t is not None:
        twins = ", ".join(n for n, other in TRANSPORTS.items() if other.native)
        yield (f"transport {t.name!r}", None if t.native else f"transport {t.name!r} has no native twin",
               f"; transports with one: {twins}", "the host's endpoints are all native")


def choose_schedule_agents(agents, *, endpoints_in_core, drop_order, jobs=1):
    """(where a schedule's agents run: "core" or "python", why) when the hosts' endpoints run
    in the core or not, for `agents` asked: "auto" (the core where it can), "core" (an error
    where it cannot) or "python" (the oracle). The core's twin draws the messages' synthetic
    values and magnitudes itself (host/schedule_draws.py) and plans chunks by magnitude;
    drop_order "random" shuffles with numpy's generator, which only Python has. A run of
    several jobs ([[jobs]]) keeps its agents in Python: the core's hosts start one job's."""
    if agents not in ENGINES_OF_AGENTS:
        raise ValueError(f"agents must be one of {', '.join(ENGINES_OF_AGENTS)}, got {agents!r}")
    why = (None if endpoints_in_core and drop_order == "magnitude" and jobs == 1
           else "the hosts' endpoints are Python's" if not endpoints_in_core
           else f"{jobs} jobs share the run" if jobs != 1
           else f"transport.drop_order {drop_order!r} shuffles with numpy's generator")
    return _where(agents, why, "schedule agents")


def choose_ring_collectives(agents, *, endpoints_in_core, payload, drop_order, jobs=1):
    """(where a data-parallel worker's collective steps run: "core" or "python", why), for
    `agents` as choose_schedule_agents takes it. The core (sim/core_ring.py) runs a
    payload-free collective's steps whole, handed over as the worker begins it; with values
    the worker sums what arrives, compresses it and may train on it, which Python alone does
    (and payload-free runs have no compression, training or parameter servers: the spec's
    checks). drop_order "random" shuffles with numpy's generator; several jobs keep their
    workers in Python (the core's hosts hand over one job's)."""
    if agents not in ENGINES_OF_AGENTS:
        raise ValueError(f"agents must be one of {', '.join(ENGINES_OF_AGENTS)}, got {agents!r}")
    why = (None if endpoints_in_core and payload == "sizes" and drop_order == "magnitude" and jobs == 1
           else "the hosts' endpoints are Python's" if not endpoints_in_core
           else "payload 'values': the worker sums, compresses or trains on what arrives" if payload != "sizes"
           else f"{jobs} jobs share the run" if jobs != 1
           else f"transport.drop_order {drop_order!r} shuffles with numpy's generator")
    return _where(agents, why, "ring collectives")


def _where(agents, why, what):
    if agents == "python":
        return "python", f"{what} in Python (asked for)"
    if why is None:
        return "core", f"{what} in the core"
    if agents == "core":
        raise ValueError(f"agents: 'core' cannot run here: {why}")
    return "python", f"{what} in Python ({why})"


ENGINES_OF_AGENTS = ("auto", "core", "python")
