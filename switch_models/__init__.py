"""Sans-I/O switch models: route -> load balancer -> classifier -> queue manager ->
scheduler -> egress port. No sockets, no clock, no Mininet: drivers supply packets and time."""
from .classifiers import CLASSIFIERS
from .load_balancers import LOAD_BALANCERS
from .packet import REWRITE_CE, REWRITE_TRIM, Packet
from .pipeline import PRESETS, PipelineSpec, preset_names
from .port import EgressPort
from .queue_managers import QUEUE_MANAGERS
from .registry import SpecError
from .schedulers import SCHEDULERS
from .switch import PortConfig, Switch

__all__ = ["CLASSIFIERS", "LOAD_BALANCERS", "QUEUE_MANAGERS", "SCHEDULERS", "PRESETS",
           "REWRITE_CE", "REWRITE_TRIM", "EgressPort", "Packet", "PipelineSpec", "PortConfig",
           "SpecError", "Switch", "preset_names"]
