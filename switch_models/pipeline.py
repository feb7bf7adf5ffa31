"""A switch pipeline spec: which stage runs at each step, by name, with parameters.

A spec is a preset name, or a mapping (as read from TOML) with an optional `preset` and any
of the four stages overriding it; a stage is a name or a table with `name` and parameters:

    {"preset": "dlcp", "queue_manager": {"name": "dlcp", "threshold": 0.3}}
    {"load_balancer": "ecmp", "classifier": "single", "queue_manager": "droptail",
     "scheduler": "fifo"}
    {"preset": "dlcp", "loss_tolerant": ["gradient", "activation"]}

`loss_tolerant` names the traffic classes bounded loss may act on (`switch_models.traffic`;
default gradients only): it goes to every stage that takes it (the dlcp classifier and queue
manager), so that what may be dropped and what is served above it agree.

`host_queue` is the hosts' NIC queue on a network of such switches (`switch_models.nic`):
`fifo`, or `priority` (control packets and headers ahead of data, NDP's hosts); a preset
names its own (`HOST_QUEUES`: `priority` for `ndp`, else `fifo`).
"""
from dataclasses import dataclass, field

from switch_models.classifiers import CLASSIFIERS
from switch_models.load_balancers import LOAD_BALANCERS
from switch_models.nic import HOST_QUEUES
from switch_models.queue_managers import QUEUE_MANAGERS
from switch_models.registry import SpecError
from switch_models.schedulers import SCHEDULERS
from switch_models.traffic import tolerant_table

LOSS_TOLERANT = "loss_tolerant"   # the switch-wide field (and the stages' parameter)
HOST_QUEUE = "host_queue"         # the hosts' NIC queue: a field of the whole pipeline
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

# The hosts' NIC queue a preset was built with: NDP's hosts send their ACKs, NACKs and pulls
# ahead of data (htsim's host queue); every other system, and a pipeline with no preset, one
# FIFO.
PRESET_HOST_QUEUES = {"ndp": "priority"}


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
    host_queue: str = "fifo"     # the hosts' NIC queue (HOST_QUEUES)

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
        unknown = sorted(set(spec) - set(STAGES) - {"preset", LOSS_TOLERANT, HOST_QUEUE})
        if unknown:
            raise SpecError(f"switch spec has no field {', '.join(map(repr, unknown))}; "
                            f"allowed: preset, {LOSS_TOLERANT}, {HOST_QUEUE}, {', '.join(STAGES)}")
        preset = spec.get("preset")
        if preset is not None and (not isinstance(preset, str) or preset not in PRESETS):
            raise SpecError(f"unknown preset {preset!r}; known: {', '.join(preset_names())}")
        merged = dict(PRESETS.get(preset, {}))
        merged.update({k: v for k, v in spec.items() if k not in ("preset", LOSS_TOLERANT, HOST_QUEUE)})
        missing = [s for s in STAGES if s not in merged]
        if missing:
            raise SpecError(f"switch spec needs {', '.join(missing)} (or a preset: {', '.join(preset_names())})")
        stages = {stage: _stage(stage, merged[stage]) for stage in STAGES}
        custom = preset is None or merged != PRESETS[preset]
        if LOSS_TOLERANT in spec:
            stages, custom = _loss_tolerant(stages, spec[LOSS_TOLERANT]), True
        host_queue = spec.get(HOST_QUEUE, PRESET_HOST_QUEUES.get(preset, "fifo"))
        if host_queue not in HOST_QUEUES:
            raise SpecError(f"switch spec: {HOST_QUEUE} must be one of {', '.join(HOST_QUEUES)}, "
                            f"got {host_queue!r}")
        custom = custom or host_queue != PRESET_HOST_QUEUES.get(preset, "fifo")
        name = preset if not custom else ("custom" if preset is None else f"{preset}+custom")
        return cls(name=name, **stages, preset=preset, host_queue=host_queue)

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
                f"qm={self.queue_manager.describe()} sched={self.scheduler.describe()}"
                + (f" {HOST_QUEUE}={self.host_queue}" if self.host_queue != "fifo" else ""))


def _loss_tolerant(stages, names):
    """The stages with the switch-wide `loss_tolerant` given to each that takes it; a stage
    that names its own as well is an error (which would win is not obvious)."""
    tolerant_table("switch", names)   # unknown names: an error naming the field
    takers = [s for s, spec in stages.items() if LOSS_TOLERANT in STAGES[s].parameters(spec.name)]
    if not takers:
        raise SpecError(f"switch spec: {LOSS_TOLERANT} needs a stage that takes it (classifier or "
                        f"queue_manager dlcp); this pipeline has none")
    both = [s for s in takers if LOSS_TOLERANT in stages[s].params]
    if both:
        raise SpecError(f"switch spec gives {LOSS_TOLERANT} both switch-wide and in {', '.join(both)}; "
                        f"give it once")
    out = dict(stages)
    for s in takers:
        params = {**stages[s].params, LOSS_TOLERANT: list(names)}
        STAGES[s].create(stages[s].name, **params)
        out[s] = StageSpec(stages[s].name, params)
    return out


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
