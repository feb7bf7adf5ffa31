"""The Python API (docs/api.md); `import dlcp_emu` re-exports it, and the command line is its
caller (dlcp_emu/commands/run.py).

    import dlcp_emu
    spec = dlcp_emu.load_spec("examples/default.toml")       # or dlcp_emu.parse_spec({...})
    result = dlcp_emu.compare(spec, presets=["fifo", "dlcp"], seeds=2)   # simulated
    result.figures                   # a DataFrame, a row per variant
    result.iterations                # every run's iterations, with `variant` and `seed`
    dlcp_emu.Result.load("results/latest")                   # a finished run, CLI's or API's

Every run writes its run folder as the CLI does (results/<run-id>/, `latest` pointing at it).
"""
import os
from pathlib import Path

from dlcp_emu.experiment.spec import Spec, SpecError, load_spec, parse_spec
from dlcp_emu.study import DEFAULT_PRESETS
from dlcp_emu.study.result import TABLES, Result

__all__ = ["DEFAULT_PRESETS", "Result", "Spec", "SpecError", "TABLES", "compare", "emulate",
           "load_spec", "parse_spec", "simulate"]


def simulate(spec, preset=None, *, root="results", log=None, engine=None):
    """One run in virtual time -> Result. `spec`: a Spec, a dict of its tables, or a path to a
    TOML file. `preset`: a preset name or a [switch] table (default: the spec's [switch]);
    `engine`: the spec's `engine` laid over it; `log`: a callable for progress lines."""
    spec = _spec(spec, engine)
    return compare(spec, _switch(spec, preset), backend="sim", root=root, log=log)


def emulate(spec, preset=None, *, root="results", log=None, engine=None, live=False, capture=None):
    """One run on the emulated network (Mininet: root, one emulation at a time) -> Result.
    `capture`: {"ports": [...], "max_bytes": n} as `run --pcap` gives (emu/capture.py)."""
    spec = _spec(spec, engine)
    return compare(spec, _switch(spec, preset), backend="emu", root=root, log=log,
                   emu_options={"live": live, **({"capture": capture} if capture else {})})


def compare(spec, presets=None, *, seeds=1, backend="sim", vary=None, jobs=1, cluster=None,
            root="results", log=None, engine=None, emu_options=None, machine=None):
    """Every preset (or the spec's [variants], when presets is None and it has some; else
    DEFAULT_PRESETS) x seeds seed..seed+seeds-1 x every combination of `vary`
    ([(field, [values])]) -> Result. `backend`: "sim" or "emu"; `jobs`: simulated runs side by
    side in local processes; `cluster`: "local" or a Dask scheduler's address (docs/cluster.md).
    Raises SpecError, ValueError or RuntimeError for what cannot run, before anything runs."""
    from dlcp_emu.study import compare as study
    if backend not in ("sim", "emu"):
        raise ValueError(f"backend: {backend!r}; must be 'sim' (virtual time) or 'emu' (Mininet)")
    if backend == "emu" and os.geteuid() != 0:
        raise RuntimeError("backend 'emu': emulation needs root (Mininet, namespaces, AF_PACKET); "
                           "run as root, or simulate (backend='sim')")
    spec = _spec(spec, engine)
    if presets is None and not spec.variants:
        presets = list(DEFAULT_PRESETS)
    elif isinstance(presets, (str, dict)):
        presets = [presets]
    for p in presets or ():
        _check_preset(spec, p)
    run_dir, summary = study.compare(spec, None if presets is None else list(presets), seeds=seeds,
                                     backend=backend, root=root, log=log or (lambda m: None),
                                     vary=[(f, list(v)) for f, v in (vary or ())] or None,
                                     emu_options=emu_options if backend == "emu" else None,
                                     jobs=jobs, machine=machine, cluster=cluster)
    return Result(run_dir, summary)


def _spec(spec, engine=None):
    if isinstance(spec, (str, Path)):
        spec = load_spec(spec)
    elif isinstance(spec, dict):
        spec = parse_spec(spec)
    elif not isinstance(spec, Spec):
        raise TypeError(f"spec: a Spec, a dict of its tables or a path to a TOML file, "
                        f"not {type(spec).__name__}")
    return spec if engine is None else spec.with_field("engine", engine)


def _check_preset(spec, preset):
    """ValueError naming an unknown preset and the known ones; SpecError for a bad table."""
    from switch_models import preset_names
    if isinstance(preset, str) and preset not in preset_names():
        raise ValueError(f"presets: unknown preset {preset!r}; known: {', '.join(preset_names())}")
    if not isinstance(preset, (str, dict)):
        raise TypeError(f"presets: a preset's name or a [switch] table, not {type(preset).__name__}")
    if isinstance(preset, dict):
        spec.with_switch(preset)


def _switch(spec, preset):
    """What `run` runs: the preset named, or the spec's [switch] (by name when it is one)."""
    if preset is not None:
        return preset
    return spec.switch["preset"] if set(spec.switch) == {"preset"} else spec.switch
