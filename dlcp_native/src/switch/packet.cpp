#include "switch/packet.hpp"

namespace dlcp {

Slot PacketPool::alloc(const Packet& pkt) {
  Slot slot;
  if (free_.empty()) {
    slot = static_cast<Slot>(entries_.size());
    entries_.emplace_back();
  } else {
    slot = free_.back();
    free_.pop_back();
  }
  Entry& e = entries_[slot];
  e.pkt = pkt;
  e.queued = false;
  return slot;
}

void PacketPool::release(Slot slot) {
  Entry& e = entries_[slot];
  e.queued = false;
  ++e.gen;  // every Ref to the old packet is stale from now on
  free_.push_back(slot);
}

}  // namespace dlcp
