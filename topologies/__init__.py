"""Topologies: one description (nodes, links, rates, shortest-path route tables) that builds
a Mininet Topo for the emulator and a plain graph for the simulator."""
from topologies.builders import (
    BUILDERS,
    RENAMED,
    RenamedParameterWarning,
    build,
    builder_params,
    dumbbell,
    fat_tree,
    leaf_spine,
    leaf_spine_uplink_rate,
    star,
)
from topologies.rails import rail_optimized
from topologies.servers import GPU, SERVER
from topologies.model import (
    DEFAULT_BUFFER_BYTES,
    HOST,
    IP_PREFIX_LEN,
    MIN_BUFFER_BYTES,
    SWITCH,
    Link,
    Node,
    Port,
    Topology,
    TopologyError,
)

__all__ = [
    "BUILDERS", "RENAMED", "RenamedParameterWarning", "build", "builder_params", "star", "dumbbell", "leaf_spine", "fat_tree",
    "rail_optimized", "SERVER", "GPU",
    "leaf_spine_uplink_rate", "DEFAULT_BUFFER_BYTES", "MIN_BUFFER_BYTES", "IP_PREFIX_LEN",
    "HOST", "SWITCH", "Node", "Link", "Port", "Topology", "TopologyError",
]
