#include "switch/packet.hpp"


namespace dlcp {

std::string packet_fields_out_of_range(int64_t size, int64_t header_size, int64_t layer) {
  constexpr int64_t top = INT32_MAX;
  if (size < 0 || size > top) return "size must be in 0.." + std::to_string(top) + ", got " + std::to_string(size);
  if (header_size < 0 || header_size > top)
    return "header_size must be in 0.." + std::to_string(top) + ", got " + std::to_string(header_size);
  if (layer < INT32_MIN || layer > top)
    return "layer must be in " + std::to_string(INT32_MIN) + ".." + std::to_string(top) + ", got " + std::to_string(layer);
  return {};
}

Slot PacketPool::alloc(const Packet& pkt) {
  Slot slot;
  if (free_.empty()) {
    slot = static_cast<Slot>(packets_.size());
    packets_.emplace_back();
    meta_.emplace_back();
  } else {
    slot = free_.back();
    free_.pop_back();
  }
  packets_[slot] = pkt;
  meta_[slot].queued = false;
  return slot;
}

void PacketPool::release(Slot slot) {
  Meta& m = meta_[slot];
  m.queued = false;
  ++m.gen;  // every Ref to the old packet is stale from now on
  free_.push_back(slot);
}

}  // namespace dlcp
