"""Traffic classes: what a message carries, as its DLCP header says (one byte, the codes
below) and a switch spec names them. Only gradients tolerate bounded loss by default; every
other class must arrive whole, so a DLCP switch never drops it to save gradient room.

The codes are the wire's (`dlcp_emu.wire.layout`) and the schedules' (`workloads.schedule.
TrafficClass`, held equal by the tests: neither may import the other's house).
"""
from switch_models.registry import require

# By code: a packet that says nothing (not DLCP, or a compute op) is class 0.
TRAFFIC_CLASSES = ("none", "gradient", "activation", "activation-gradient", "parameters", "all-to-all")
NONE = 0
GRADIENT = 1
TOP_TRAFFIC_CLASS = len(TRAFFIC_CLASSES) - 1
# What the DLCP stages let bounded loss act on unless a spec says otherwise.
LOSS_TOLERANT = ("gradient",)


def tolerant_table(kind, names):
    """One bool per class code: True for the classes `names` lists (a stage's
    `loss_tolerant`); a name outside TRAFFIC_CLASSES is an error naming the field."""
    allowed = f"a list of traffic class names out of {', '.join(TRAFFIC_CLASSES)}"
    require(isinstance(names, (list, tuple)) and all(isinstance(n, str) for n in names),
            kind, "loss_tolerant", allowed)
    unknown = [n for n in names if n not in TRAFFIC_CLASSES]
    require(not unknown, kind, "loss_tolerant",
            f"{allowed} (unknown: {', '.join(map(repr, unknown))})")
    return tuple(name in names for name in TRAFFIC_CLASSES)
