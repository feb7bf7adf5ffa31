"""The DLCP wire format: the one place that defines the bytes on the wire (`layout`: the
constants and offsets; `header`, `frame`: encoding and strict decoding; `rewrite`: what a
switch changes; `checksum`; `packet`: a header as the switch model sees it).

A DLCP packet is Ethernet / IPv4 (no options) / UDP / DLCP header / payload::

    frame off  size  layer     notes
    0          14    Ethernet  dst MAC, src MAC, EtherType 0x0800
    14         20    IPv4      IHL 5, DSCP mirrors priority, ECN, DF set, id 0
    34         8     UDP       ports default to DLCP_UDP_PORT (9796)
    42         48    DLCP      header below (DLCP_OFF)
    90         n     payload   gradient bytes (FRAME_OVERHEAD = 90)

DLCP header, big-endian, fixed HEADER_LEN = 48 bytes (offsets relative to the
header; add DLCP_OFF for the frame offset, which the OFF_* constants already do)::

    off  fmt  field        meaning
    0    H    magic        0xD1C9
    2    B    version      2
    3    B    type         PacketType: DATA=0, PROBE=1, BITMAP=2, ACK=3
    4    B    flags        Flags: DROPPABLE=0x01, RETRANSMISSION=0x02,
                           TRIMMED=0x04, LAST_CHUNK=0x08 (other bits must be 0)
    5    B    priority     0..7, 0 = highest; IP DSCP = (7 - priority) << 3
    6    B    mag_class    0..7, 7 = largest gradient magnitude (most important)
    7    B    tclass       traffic class: NONE=0, GRADIENT=1, ACTIVATION=2,
                           ACTIVATION_GRADIENT=3, PARAMETERS=4, ALL_TO_ALL=5
                           (switch_models.traffic; only gradients tolerate loss)
    8    H    job          job id
    10   H    src_rank     source rank
    12   H    dst_rank     destination rank
    14   H    payload_len  gradient bytes carried; when TRIMMED, the original length
    16   I    iteration    training iteration
    20   I    tensor_id    layer << 16 | message within it; layer 0 = first layer
    24   I    chunk_index  index of this chunk within the tensor
    28   I    chunk_count  number of chunks of the tensor
    32   I    offset       byte offset of this payload inside the tensor
    36   I    reserved2    0
    40   Q    send_ts_ns   send timestamp, nanoseconds (the sender's clock)

Decoding rules (``decode_frame``), all violations raise ``WireError``:

* Only untagged Ethernet II with IPv4 without options (IHL 5) is accepted: the
  switch data path reads fields at the fixed OFF_* offsets, so a frame it could not
  parse must not decode either. VLAN tags, IPv6, IP options and IP fragments are
  rejected with a message saying so.
* The IPv4 total length is authoritative: bytes after it are Ethernet padding (or a
  captured FCS) and ignored; a total length beyond the buffer is truncation.
* UDP length must equal IP total length - 20; UDP checksum 0 means "none".
* The DLCP packet is recognised by magic and version, not by UDP port, so runs may
  use other ports (the scapy layer dissects by port, as scapy does).
* The reserved field, unknown flag bits, priority / mag_class above 7 and a traffic
  class beyond the known ones are rejected:
  a decoder never silently misreads a frame from another layout (change the layout
  by bumping the version), and the switch may index queues by these values.
* The DSCP is not checked against priority: networks may re-mark DSCP, the DLCP
  header is authoritative. Frame therefore has no dscp field; encoding always
  derives it from the priority.

Semantic relations (chunk_index < chunk_count, offset + payload_len within the
tensor) belong to the transports, not to the wire format, and are not checked.
"""

from dlcp_emu.wire.layout import (
    DLCP_UDP_PORT, ETH_LEN, IPV4_LEN, UDP_LEN, HEADER_LEN, DLCP_OFF, PAYLOAD_OFF, FRAME_OVERHEAD,
    MAX_PAYLOAD, MAGIC, VERSION, HEADER_FMT, HEADER_STRUCT, WireError, PacketType, Flags, Ecn,
    dscp_for_priority, priority_for_dscp, HDR_CHUNK_COUNT, HDR_CHUNK_INDEX, HDR_DST_RANK,
    HDR_FLAGS, HDR_ITERATION, HDR_JOB, HDR_MAGIC, HDR_MAG_CLASS, HDR_OFFSET, HDR_PAYLOAD_LEN,
    HDR_PRIORITY, HDR_TCLASS, HDR_RESERVED2, HDR_SEND_TS_NS, HDR_SRC_RANK, HDR_TENSOR_ID,
    HDR_TYPE, HDR_VERSION, OFF_CHUNK_COUNT, OFF_CHUNK_INDEX, OFF_DST_RANK, OFF_ETHERTYPE,
    OFF_ETH_DST, OFF_ETH_SRC, OFF_FLAGS, OFF_IP_CHECKSUM, OFF_IP_DST, OFF_IP_FRAG, OFF_IP_ID,
    OFF_IP_PROTO, OFF_IP_SRC, OFF_IP_TOS, OFF_IP_TOTAL_LEN, OFF_IP_TTL, OFF_IP_VER_IHL,
    OFF_ITERATION, OFF_JOB, OFF_MAGIC, OFF_MAG_CLASS, OFF_OFFSET, OFF_PAYLOAD_LEN, OFF_PRIORITY,
    OFF_TCLASS, OFF_RESERVED2, OFF_SEND_TS_NS, OFF_SRC_RANK, OFF_TENSOR_ID, OFF_TYPE,
    OFF_UDP_CHECKSUM, OFF_UDP_DPORT, OFF_UDP_LEN, OFF_UDP_SPORT, OFF_VERSION,
)
from dlcp_emu.wire.checksum import internet_checksum
from dlcp_emu.wire.header import DlcpHeader
from dlcp_emu.wire.frame import Frame, encode_frame, decode_frame
from dlcp_emu.wire.rewrite import trim_frame, mark_ce

__all__ = [
    "DLCP_UDP_PORT", "ETH_LEN", "IPV4_LEN", "UDP_LEN", "HEADER_LEN", "DLCP_OFF", "PAYLOAD_OFF",
    "FRAME_OVERHEAD", "MAX_PAYLOAD", "MAGIC", "VERSION", "HEADER_FMT", "HEADER_STRUCT",
    "WireError", "PacketType", "Flags", "Ecn", "DlcpHeader", "Frame", "encode_frame",
    "decode_frame", "trim_frame", "mark_ce", "internet_checksum", "dscp_for_priority",
    "priority_for_dscp", "HDR_CHUNK_COUNT", "HDR_CHUNK_INDEX", "HDR_DST_RANK", "HDR_FLAGS",
    "HDR_ITERATION", "HDR_JOB", "HDR_MAGIC", "HDR_MAG_CLASS", "HDR_OFFSET", "HDR_PAYLOAD_LEN",
    "HDR_PRIORITY", "HDR_TCLASS", "HDR_RESERVED2", "HDR_SEND_TS_NS", "HDR_SRC_RANK",
    "HDR_TENSOR_ID", "HDR_TYPE", "HDR_VERSION", "OFF_CHUNK_COUNT", "OFF_CHUNK_INDEX",
    "OFF_DST_RANK", "OFF_ETHERTYPE", "OFF_ETH_DST", "OFF_ETH_SRC", "OFF_FLAGS", "OFF_IP_CHECKSUM",
    "OFF_IP_DST", "OFF_IP_FRAG", "OFF_IP_ID", "OFF_IP_PROTO", "OFF_IP_SRC", "OFF_IP_TOS",
    "OFF_IP_TOTAL_LEN", "OFF_IP_TTL", "OFF_IP_VER_IHL", "OFF_ITERATION", "OFF_JOB", "OFF_MAGIC",
    "OFF_MAG_CLASS", "OFF_OFFSET", "OFF_PAYLOAD_LEN", "OFF_PRIORITY", "OFF_TCLASS",
    "OFF_RESERVED2", "OFF_SEND_TS_NS", "OFF_SRC_RANK", "OFF_TENSOR_ID", "OFF_TYPE",
    "OFF_UDP_CHECKSUM", "OFF_UDP_DPORT", "OFF_UDP_LEN", "OFF_UDP_SPORT", "OFF_VERSION",
]
