"""A host's packet half compiled (src/host/): the Python face of that layer. `UdpHost` is an
emulated host's data plane (its endpoints over its UDP socket, `dlcp_emu.emu.native_host`),
`send_frames` the benchmarks' traffic generator (`dlcp_emu.emu.trafficgen`),
`python_tuple_hash` CPython's tuple hash, which the stacks' flow hash is.
"""
from ._core import UdpHost, python_tuple_hash, send_frames  # noqa: F401  (their one way out)
