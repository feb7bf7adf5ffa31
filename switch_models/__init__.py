"""Sans-I/O switch models: route -> load balancer -> classifier -> queue manager ->
scheduler -> egress port. No sockets, no clock, no Mininet: drivers supply packets and time."""
from switch_models.classifiers import CLASSIFIERS
from switch_models.load_balancers import LOAD_BALANCERS
from switch_models.nic import HOST_BUFFER_BYTES, HostNic
from switch_models.packet import REWRITE_CE, REWRITE_TRIM, Packet
from switch_models.pipeline import PRESETS, PipelineSpec, preset_names
from switch_models.port import ETHERNET_OVERHEAD, EgressPort
from switch_models.queue_managers import QUEUE_MANAGERS
from switch_models.registry import SpecError
from switch_models.schedulers import SCHEDULERS
from switch_models.switch import PortConfig, Switch

__all__ = ["CLASSIFIERS", "ETHERNET_OVERHEAD", "HOST_BUFFER_BYTES", "LOAD_BALANCERS", "QUEUE_MANAGERS", "SCHEDULERS",
           "PRESETS", "REWRITE_CE", "REWRITE_TRIM", "EgressPort", "HostNic", "Packet",
           "PipelineSpec", "PortConfig", "SpecError", "Switch", "preset_names"]
