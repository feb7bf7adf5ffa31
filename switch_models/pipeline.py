"""A switch pipeline spec: which stage runs at each step, by name, with parameters.

A spec is a preset name, or a mapping (as read from TOML) with an optional `preset` and any
of the four stages overriding it; a stage is a name or a table with `name` and parameters:

    {"preset": "dlcp", "queue_manager": {"name": "dlcp", "threshold": 0.3}}
    {"load_balancer": "ecmp", "classifier": "single", "queue_manager": "droptail",
     "scheduler": "fifo"}
"""
from dataclasses import dataclass, field

from switch_models.classifiers import CLASSIFIERS
from switch_models.load_balancers import LOAD_BALANCERS
from switch_models.queue_managers import QUEUE_MANAGERS
from switch_models.registry import SpecError
from switch_models.schedulers import SCHEDULERS

STAGES = {
    "load_balancer": LOAD_BALANCERS,
    "classifier": CLASSIFIERS,
    "queue_manager": QUEUE_MANAGERS,
    "scheduler": SCHEDULERS,
}

# Whole systems by name. pFabric's priority is remaining flow size, which a switch cannot
# see; bytes sent so far (PIAS) stands in for it.
PRESETS = {
    "fifo": dict(load_balancer="ecmp", classifier="single", queue_manager="droptail", scheduler="fifo"),
    "pias": dict(load_balancer="ecmp", classifier="pias", queue_manager="droptail", scheduler="strict"),
    "layer-prio": dict(load_balancer="ecmp", classifier="layer", queue_manager="droptail", scheduler="strict"),
    "pfabric": dict(load_balancer="ecmp", classifier="pias", queue_manager="pfabric", scheduler="strict"),
    "ndp": dict(load_balancer="spray", classifier={"name": "single", "cls": 1},
                queue_manager="trim", scheduler="strict"),
    "dlcp": dict(load_balancer="spray", classifier="dlcp", queue_manager="dlcp", scheduler="strict"),
    # Ablations: DLCP less one of its three mechanisms.
    "dlcp-noprio": dict(load_balancer="spray", classifier="dlcp", queue_manager="dlcp", scheduler="fifo"),
    "dlcp-nodrop": dict(load_balancer="spray", classifier="dlcp", queue_manager="droptail", scheduler="strict"),
    "dlcp-nospray": dict(load_balancer="ecmp", classifier="dlcp", queue_manager="dlcp", scheduler="strict"),
}

# The end-host transport a system was built with, by preset (a transport's name): what a
# spec's transport kind `auto` runs it with. A preset not listed, and a pipeline with no
# preset, declares none (the framework then runs its reliable transport, the fair baseline).
PAIRED_TRANSPORTS = {"dlcp": "dlcp", "dlcp-noprio": "dlcp", "dlcp-nodrop": "dlcp", "dlcp-nospray": "dlcp"}


def preset_names():
    return sorted(PRESETS)


@dataclass(frozen=True)
class StageSpec:
    name: str
    params: dict = field(default_factory=dict)

    def describe(self):
        if not self.params:
            return self.name
        return f"{self.name}({', '.join(f'{k}={v!r}' for k, v in sorted(self.params.items()))})"


@dataclass(frozen=True)
class PipelineSpec:
    """A validated pipeline: building stages from it cannot fail on names or parameters."""
    name: str
    load_balancer: StageSpec
    classifier: StageSpec
    queue_manager: StageSpec
    scheduler: StageSpec
    preset: str | None = None    # the preset it starts from, stages overridden or not

    @property
    def paired_transport(self):
        """The transport this pipeline declares it pairs with (`PAIRED_TRANSPORTS`), or None."""
        return PAIRED_TRANSPORTS.get(self.preset)

    @classmethod
    def parse(cls, spec):
        if isinstance(spec, PipelineSpec):
            return spec
        if isinstance(spec, str):
            spec = {"preset": spec}
        if not isinstance(spec, dict):
            raise SpecError(f"switch spec must be a preset name or a table, got {type(spec).__name__}")
        unknown = sorted(set(spec) - set(STAGES) - {"preset"})
        if unknown:
            raise SpecError(f"switch spec has no field {', '.join(map(repr, unknown))}; "
                            f"allowed: preset, {', '.join(STAGES)}")
        preset = spec.get("preset")
        if preset is not None and (not isinstance(preset, str) or preset not in PRESETS):
            raise SpecError(f"unknown preset {preset!r}; known: {', '.join(preset_names())}")
        merged = dict(PRESETS.get(preset, {}))
        merged.update({k: v for k, v in spec.items() if k != "preset"})
        missing = [s for s in STAGES if s not in merged]
        if missing:
            raise SpecError(f"switch spec needs {', '.join(missing)} (or a preset: {', '.join(preset_names())})")
        stages = {stage: _stage(stage, merged[stage]) for stage in STAGES}
        name = preset if preset is not None and merged == PRESETS[preset] else (
            "custom" if preset is None else f"{preset}+custom")
        return cls(name=name, **stages, preset=preset)

    # One classifier and load balancer per switch (switch-wide state such as PIAS flow
    # bytes); one queue manager and scheduler per port.
    def load_balancer_for(self, seed):
        return LOAD_BALANCERS.create(self.load_balancer.name, **{"seed": seed, **self.load_balancer.params})

    def classifier_for(self):
        return CLASSIFIERS.create(self.classifier.name, **self.classifier.params)

    def queue_manager_for(self):
        return QUEUE_MANAGERS.create(self.queue_manager.name, **self.queue_manager.params)

    def scheduler_for(self):
        return SCHEDULERS.create(self.scheduler.name, **self.scheduler.params)

    def describe(self):
        return (f"{self.name}: lb={self.load_balancer.describe()} cls={self.classifier.describe()} "
                f"qm={self.queue_manager.describe()} sched={self.scheduler.describe()}")


def _stage(stage, value):
    registry = STAGES[stage]
    if isinstance(value, str):
        name, params = value, {}
    elif isinstance(value, dict) and isinstance(value.get("name"), str):
        name, params = value["name"], {k: v for k, v in value.items() if k != "name"}
    else:
        raise SpecError(f"{stage} must be a name or a table with a 'name'; known names: "
                        f"{', '.join(registry.names())}")
    registry.check(name, params)
    registry.create(name, **params)  # surfaces bad parameter values now, not at switch build
    return StageSpec(name, params)
