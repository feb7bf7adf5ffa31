"""Training iterations as schedules: per-rank compute and communication ops with sizes,
process groups, traffic classes and dependencies (``ops``), their checks (``validate``),
rank layout and process groups (``layout``), collectives and messages matched across ranks
and expanded into steps (``matching``), and an ideal-network evaluator (``ideal``).
docs/schedules.md describes the data model."""

from workloads.schedule.ideal import FixedBandwidth, IdealResult, ZeroCost, ideal_iteration
from workloads.schedule.layout import GROUP_KINDS, RankLayout
from workloads.schedule.matching import collectives, messages, steps, wire_bytes
from workloads.schedule.ops import (
    CLASS_BY_LABEL,
    KIND_BY_LABEL,
    OpKind,
    RankOps,
    Schedule,
    ScheduleError,
    TrafficClass,
    assemble,
)
from workloads.schedule.validate import validate

__all__ = ["CLASS_BY_LABEL", "GROUP_KINDS", "KIND_BY_LABEL", "FixedBandwidth", "IdealResult",
           "OpKind", "RankLayout", "RankOps", "Schedule", "ScheduleError", "TrafficClass",
           "ZeroCost", "assemble", "collectives", "ideal_iteration", "messages", "steps",
           "validate", "wire_bytes"]
