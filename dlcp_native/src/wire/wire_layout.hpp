// The DLCP wire layout for the compiled core: Ethernet / IPv4 / UDP / DLCP header / payload.
//
// GENERATED from dlcp_emu/wire/layout.py by `python -m dlcp_emu.wire.native_layout`:
// edit the layout or the generator (dlcp_emu/wire/native_layout.py), not this file.
#pragma once

#include <cstddef>
#include <cstdint>

namespace dlcp::wire {

constexpr uint16_t MAGIC = 0xD1C9;
constexpr uint8_t VERSION = 2;
constexpr uint16_t DLCP_UDP_PORT = 9796;
constexpr uint16_t BACKGROUND_TCP_PORT = 5001;  // kernel TCP's background server

// Lengths in bytes (signed: sizes are computed with them).
constexpr int64_t ETH_LEN = 14;
constexpr int64_t IPV4_LEN = 20;
constexpr int64_t UDP_LEN = 8;
constexpr int64_t HEADER_LEN = 48;
constexpr int64_t FRAME_OVERHEAD = 90;
constexpr int64_t MAX_PAYLOAD = 65459;

// Where each layer starts in a frame.
constexpr size_t IP_OFF = 14;
constexpr size_t UDP_OFF = 34;
constexpr size_t DLCP_OFF = 42;
constexpr size_t PAYLOAD_OFF = 90;

// Fields, offsets inside the frame.
constexpr size_t OFF_ETH_DST = 0;
constexpr size_t OFF_ETH_SRC = 6;
constexpr size_t OFF_ETHERTYPE = 12;
constexpr size_t OFF_IP_VER_IHL = 14;
constexpr size_t OFF_IP_TOS = 15;
constexpr size_t OFF_IP_TOTAL_LEN = 16;
constexpr size_t OFF_IP_ID = 18;
constexpr size_t OFF_IP_FRAG = 20;
constexpr size_t OFF_IP_TTL = 22;
constexpr size_t OFF_IP_PROTO = 23;
constexpr size_t OFF_IP_CHECKSUM = 24;
constexpr size_t OFF_IP_SRC = 26;
constexpr size_t OFF_IP_DST = 30;
constexpr size_t OFF_UDP_SPORT = 34;
constexpr size_t OFF_UDP_DPORT = 36;
constexpr size_t OFF_UDP_LEN = 38;
constexpr size_t OFF_UDP_CHECKSUM = 40;
constexpr size_t OFF_MAGIC = 42;
constexpr size_t OFF_VERSION = 44;
constexpr size_t OFF_TYPE = 45;
constexpr size_t OFF_FLAGS = 46;
constexpr size_t OFF_PRIORITY = 47;
constexpr size_t OFF_MAG_CLASS = 48;
constexpr size_t OFF_TCLASS = 49;
constexpr size_t OFF_JOB = 50;
constexpr size_t OFF_SRC_RANK = 52;
constexpr size_t OFF_DST_RANK = 54;
constexpr size_t OFF_PAYLOAD_LEN = 56;
constexpr size_t OFF_ITERATION = 58;
constexpr size_t OFF_TENSOR_ID = 62;
constexpr size_t OFF_CHUNK_INDEX = 66;
constexpr size_t OFF_CHUNK_COUNT = 70;
constexpr size_t OFF_OFFSET = 74;
constexpr size_t OFF_RESERVED2 = 78;
constexpr size_t OFF_SEND_TS_NS = 82;

// The DLCP header's fields: offset inside the header, and size in bytes (big-endian).
constexpr size_t HDR_MAGIC = 0, HDR_MAGIC_SIZE = 2;
constexpr size_t HDR_VERSION = 2, HDR_VERSION_SIZE = 1;
constexpr size_t HDR_TYPE = 3, HDR_TYPE_SIZE = 1;
constexpr size_t HDR_FLAGS = 4, HDR_FLAGS_SIZE = 1;
constexpr size_t HDR_PRIORITY = 5, HDR_PRIORITY_SIZE = 1;
constexpr size_t HDR_MAG_CLASS = 6, HDR_MAG_CLASS_SIZE = 1;
constexpr size_t HDR_TCLASS = 7, HDR_TCLASS_SIZE = 1;
constexpr size_t HDR_JOB = 8, HDR_JOB_SIZE = 2;
constexpr size_t HDR_SRC_RANK = 10, HDR_SRC_RANK_SIZE = 2;
constexpr size_t HDR_DST_RANK = 12, HDR_DST_RANK_SIZE = 2;
constexpr size_t HDR_PAYLOAD_LEN = 14, HDR_PAYLOAD_LEN_SIZE = 2;
constexpr size_t HDR_ITERATION = 16, HDR_ITERATION_SIZE = 4;
constexpr size_t HDR_TENSOR_ID = 20, HDR_TENSOR_ID_SIZE = 4;
constexpr size_t HDR_CHUNK_INDEX = 24, HDR_CHUNK_INDEX_SIZE = 4;
constexpr size_t HDR_CHUNK_COUNT = 28, HDR_CHUNK_COUNT_SIZE = 4;
constexpr size_t HDR_OFFSET = 32, HDR_OFFSET_SIZE = 4;
constexpr size_t HDR_RESERVED2 = 36, HDR_RESERVED2_SIZE = 4;
constexpr size_t HDR_SEND_TS_NS = 40, HDR_SEND_TS_NS_SIZE = 8;

constexpr uint16_t ETHERTYPE_IPV4 = 0x0800;
constexpr uint8_t IPPROTO_UDP = 17;
constexpr uint16_t IP_FLAG_DF = 0x4000, IP_FLAG_MF = 0x2000, IP_FRAG_OFFSET_MASK = 0x1FFF;

enum PacketType : uint8_t { DATA = 0, PROBE = 1, BITMAP = 2, ACK = 3 };

constexpr uint8_t FLAG_DROPPABLE = 0x01;
constexpr uint8_t FLAG_RETRANSMISSION = 0x02;
constexpr uint8_t FLAG_TRIMMED = 0x04;
constexpr uint8_t FLAG_LAST_CHUNK = 0x08;
constexpr uint8_t FLAG_MASK = 0x0F;  // every flag above; other bits are refused

constexpr uint8_t TOP_PRIORITY = 7, TOP_MAG_CLASS = 7;

// Traffic classes (switch_models/traffic.py): what a message carries.
enum TrafficClass : uint8_t { TCLASS_NONE = 0, TCLASS_GRADIENT = 1, TCLASS_ACTIVATION = 2, TCLASS_ACTIVATION_GRADIENT = 3, TCLASS_PARAMETERS = 4, TCLASS_ALL_TO_ALL = 5 };
constexpr uint8_t TOP_TRAFFIC_CLASS = 5;

// A tensor id: the layer in the high bits, then the phase bit, then the step.
constexpr int TENSOR_LAYER_SHIFT = 16, TENSOR_PHASE_SHIFT = 15;
constexpr uint32_t TENSOR_STEP_MASK = 0x7FFF;

}  // namespace dlcp::wire
