// What the transport endpoints put on the wire and take from it (dlcp_emu/wire/layout.py and
// header.py): the DLCP header's fields as plain integers, and a payload that is either a
// view into a message's bytes (DATA) or bytes of its own (PROBE, ACK, BITMAP).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "wire/wire_layout.hpp"

namespace dlcp::transport {

// The wire's types, flags and lengths (wire_layout.hpp, generated from layout.py).
using wire::PacketType, wire::DATA, wire::PROBE, wire::BITMAP, wire::ACK;
using wire::FLAG_DROPPABLE, wire::FLAG_RETRANSMISSION, wire::FLAG_TRIMMED, wire::FLAG_LAST_CHUNK;
using wire::ETH_LEN, wire::IPV4_LEN, wire::UDP_LEN, wire::HEADER_LEN, wire::FRAME_OVERHEAD, wire::MAX_PAYLOAD;
using wire::TENSOR_LAYER_SHIFT;  // a tensor id's layer is its high bits

// The DLCP header's fields (magic, version and reserved2 are implicit, as in DlcpHeader).
struct Header {
  uint8_t type = DATA;
  uint8_t flags = 0;
  uint8_t priority = 7;
  uint8_t mag_class = 0;
  uint16_t job = 0;
  uint16_t src_rank = 0;
  uint16_t dst_rank = 0;
  uint16_t payload_len = 0;
  uint32_t iteration = 0;
  uint32_t tensor_id = 0;
  uint32_t chunk_index = 0;
  uint32_t chunk_count = 1;
  uint32_t offset = 0;
  int64_t send_ts_ns = 0;
  uint8_t tclass = wire::TCLASS_GRADIENT;  // what the message carries (switch_models/traffic.py)
};

// A message's bytes, held as the caller gave them: `owner` keeps them alive (the binding puts
// the caller's array there) for as long as a sender or a packet in flight refers to them.
// data == nullptr: a payload-free message, sizes only.
struct Buffer {
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::shared_ptr<void> owner;
};

// A payload an endpoint is given: valid during the call only (endpoints copy what they keep).
// data == nullptr with size 0 is an empty payload; `absent` marks a payload-free packet.
struct InPayload {
  const uint8_t* data = nullptr;
  size_t size = 0;
  bool absent = false;
};

// A control packet's payload. Most are ACKs and NACKs (at most 28 bytes: feedback.py's
// FEEDBACK_SIZE and three extra chunks), held inline: a packet in flight then owns no heap
// block, and at scale a malloc and a free a data packet were ~6% of the loop. Longer ones
// (bitmaps, probes) have a block of their own.
class ControlBytes {
 public:
  static constexpr size_t INLINE = 32;
  ControlBytes() = default;
  ControlBytes(const ControlBytes& o) { assign(o.data(), o.size()); }
  ControlBytes(ControlBytes&& o) noexcept { take(o); }
  ControlBytes& operator=(const ControlBytes& o) {
    if (this != &o) assign(o.data(), o.size());
    return *this;
  }
  ControlBytes& operator=(ControlBytes&& o) noexcept {
    if (this != &o) take(o);
    return *this;
  }
  ControlBytes& operator=(const std::vector<uint8_t>& v) {
    assign(v.data(), v.size());
    return *this;
  }
  const uint8_t* data() const { return n_ == 0 ? nullptr : n_ <= INLINE ? inline_ : heap_.get(); }
  size_t size() const { return n_; }
  void assign(const uint8_t* p, size_t n) {
    if (n > INLINE) {
      std::unique_ptr<uint8_t[]> block(new uint8_t[n]);
      std::memcpy(block.get(), p, n);
      heap_ = std::move(block);
    } else {
      heap_.reset();
      if (n) std::memcpy(inline_, p, n);
    }
    n_ = n;
  }

 private:
  void take(ControlBytes& o) {
    n_ = o.n_;
    if (n_ && n_ <= INLINE) std::memcpy(inline_, o.inline_, n_);
    heap_ = std::move(o.heap_);
    o.n_ = 0;
  }
  size_t n_ = 0;
  uint8_t inline_[INLINE];
  std::unique_ptr<uint8_t[]> heap_;
};

// One packet an endpoint sends. DATA: bytes [off, off + payload_len) of `buf`; the others:
// `control`.
struct OutPacket {
  Header h;
  std::shared_ptr<const Buffer> buf;
  uint32_t off = 0;
  ControlBytes control;

  const uint8_t* payload() const {
    if (h.type == DATA) return buf && buf->data ? buf->data + off : nullptr;
    return control.data();
  }
  // What the peer is given when it arrives whole (a payload-free DATA packet: `absent`).
  InPayload in_payload() const {
    InPayload in;
    in.data = payload();
    in.size = h.type == DATA ? h.payload_len : control.size();
    in.absent = h.type == DATA && in.data == nullptr;
    return in;
  }
};


}  // namespace dlcp::transport
