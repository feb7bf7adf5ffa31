"""The transport endpoints compiled (src/transport/, the wire header in src/wire/): the
Python face of that layer. `dlcp_emu.transport.native` puts the Python endpoints' surface
(`DlcpHeader`, `Message`, `SendResult`, `Delivery`) on these; the benchmark runs a pair of
them over lossy links in the core (`run_transport_pair`).
"""
from ._core import (  # noqa: F401  (this module is their one way out of the core)
    DlcpReceiver,
    DlcpSender,
    ReliableReceiver,
    ReliableSender,
    TransportCongestion,
    TransportReceiver,
    TransportRtt,
    TransportSender,
    chunk_magnitudes,
    pack_header,
    plan_chunks,
    run_transport_pair,
    unpack_header,
)
