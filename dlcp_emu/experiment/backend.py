"""What a backend is to `experiment.run`: the run's steps and their order live there, the same
for both; a backend (`sim.SimBackend` in virtual time, `emu.EmuBackend` on Mininet) does only
what differs: say which transport it runs (or refuse), run the prepared experiment, and add its
own figures to the summary. The experiment layer imports neither: a study hands the backend in.
"""
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol, runtime_checkable

from dlcp_emu.experiment.placement import Placement


@dataclass(frozen=True)
class Setup:
    """A run as both backends are given it: what the spec says, scaled and placed."""
    spec: Any              # experiment.spec.Spec
    pipeline: Any          # a preset name or a [switch] table
    transport: str         # the transport this backend runs for the pipeline
    topology: Any          # the scaled topology (experiment.topology.scaled_topology)
    placement: Placement
    trace: Any             # what the agents replay (experiment.accuracy.trace_for)
    plan: Any              # host.plan.Plan: buckets and compute times, scaled
    background: dict       # {host: [(start_ns, dst host index, nbytes, flow id)]}; {} without
    run_dir: Path
    keep_results: bool = False
    jobs: tuple = ()       # a spec of [[jobs]]: experiment.jobs_run.JobSetup each (the first's
                           # placement, trace and plan are the fields above); () for one job


@dataclass
class Outcome:
    """What a backend measured, before any table: `experiment.run` makes the tables."""
    records: list          # the hosts' record dicts (hostd's format)
    counters: dict         # {switch: counters}
    queue_samples: dict    # {switch: {"ports", "samples"}} (tables.queue_table)
    fidelity: dict         # the summary's `fidelity`, as far as it is known before the summary
    duration_s: float
    interrupted: str | None            # why the run stopped early; None: it completed
    frames: dict                       # the backend's own tables (background, packets)
    t0_ns: int = 0                     # the records' start, subtracted from every time
    state: Any = None                  # what the backend keeps for its summarize and close
    handles: dict = field(default_factory=dict)   # returned to the caller, never written


@runtime_checkable
class Backend(Protocol):
    name: str   # the summary's `backend`: "simulation", "emulation"

    def transport(self, spec, pipeline) -> str:
        """The transport a run of this pipeline uses here; ValueError for what this backend
        cannot run (before anything is built)."""

    def execute(self, setup: Setup, log: Callable[[str], None]) -> Outcome:
        """Run it: from the first packet to the last record read."""

    def summarize(self, setup: Setup, outcome: Outcome, s: dict) -> None:
        """Add this backend's own figures to the run's summary `s` (written after)."""

    def close(self, setup: Setup, outcome: Outcome, s: dict) -> None:
        """Last, after the tables are written: what else this backend keeps."""
