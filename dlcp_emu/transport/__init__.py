"""Sans-I/O packet transports: endpoints are plain objects given packets and the time (integer
ns) that answer what to send. A packet here is (DlcpHeader, payload bytes or memoryview).

- `reliable`: every byte delivered (ReliableSender / ReliableReceiver);
- `dlcp`: bounded loss with probe + bitmap selective retransmission (DlcpSender / DlcpReceiver).

Which transports there are, and what each can do: `registry.py`. Drivers: the simulator's
hosts (virtual time), `dlcp_emu.emu.udp_driver` (real UDP sockets).
"""

from dlcp_emu.transport.congestion import CongestionControl, RttEstimator
from dlcp_emu.transport.message import (
    DEFAULT_MTU,
    ChunkPlan,
    MagnitudePolicy,
    Message,
    chunk_magnitudes,
    chunk_payload_size,
    layer_priority,
    transport_payload_size,
)
from dlcp_emu.transport.receiver import Delivery, DlcpReceiver, ReliableReceiver
from dlcp_emu.transport.registry import TRANSPORTS, Transport, transport
from dlcp_emu.transport.sender import DlcpSender, ReliableSender, SendResult

__all__ = [
    "DEFAULT_MTU", "ChunkPlan", "CongestionControl", "Delivery", "DlcpReceiver", "DlcpSender",
    "MagnitudePolicy", "Message", "ReliableReceiver", "ReliableSender", "RttEstimator",
    "SendResult", "TRANSPORTS", "Transport", "chunk_magnitudes", "chunk_payload_size", "layer_priority",
    "transport", "transport_payload_size",
]
