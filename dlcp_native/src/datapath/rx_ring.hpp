// PACKET_RX_RING (TPACKET_V2) on a switch port's AF_PACKET socket (sockets.py `RxRing`): the
// kernel writes frames, each with its delivery time, into a ring shared with us, and we read
// them without a syscall per frame. The kernel takes a frame's VLAN tag out of it before any
// socket sees it (into the slot's header); the ring puts it back, so a switch carries it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace dlcp {

class RxRing {
 public:
  // Sets TPACKET_V2 and the ring on `fd` and maps it; throws std::system_error if the kernel
  // refuses. frame_size: a slot, the kernel's tpacket header and the frame.
  RxRing(int fd, uint32_t frame_size, uint32_t block_size = 1 << 16, uint32_t block_nr = 128);
  ~RxRing();
  RxRing(const RxRing&) = delete;
  RxRing& operator=(const RxRing&) = delete;

  // A frame waits in the next slot (one read of its status word).
  bool ready() const;
  // Up to n frames, oldest first: take(data, length, kernel time ns CLOCK_REALTIME) for each,
  // a tagged frame with its tag back after the MACs (`vlan_tagged` counts them); the slot goes
  // back to the kernel after the call. Frames larger than a slot are counted (`truncated`) and
  // skipped. Returns how many slots were read.
  template <class Take>
  size_t drain(size_t n, Take&& take);

  size_t slots() const { return frames_; }
  size_t next() const { return i_; }
  size_t waiting() const;  // slots holding frames (a diagnostic: scans the ring)
  int64_t truncated = 0, resyncs = 0, vlan_tagged = 0;

 private:
  struct Slot {  // struct tpacket2_hdr
    uint32_t status, len, snaplen;
    uint16_t mac, net;
    uint32_t sec, nsec;
    uint16_t vlan_tci, vlan_tpid;
  };
  // The frame of slot s with its VLAN tag after the MACs, in tagged_.
  const uint8_t* with_tag(const Slot* s);
  Slot* slot(size_t i) const { return reinterpret_cast<Slot*>(map_ + i * frame_size_); }
  // Called because the kernel said frames wait, yet our next slot is empty: we lost step with
  // its head (seen after heavy overload), so move to the first waiting slot after ours.
  void resync();

  uint8_t* map_ = nullptr;
  size_t map_size_ = 0, frame_size_ = 0, frames_ = 0, i_ = 0;
  std::vector<uint8_t> tagged_;
};

constexpr uint32_t TP_STATUS_USER = 1, TP_STATUS_VLAN_VALID = 0x10, TP_STATUS_VLAN_TPID_VALID = 0x40;
constexpr uint16_t ETH_P_8021Q = 0x8100;
constexpr size_t MAC_PAIR = 12, VLAN_TAG = 4;

inline const uint8_t* RxRing::with_tag(const Slot* s) {
  const uint8_t* f = reinterpret_cast<const uint8_t*>(s) + s->mac;
  const uint16_t tpid = (s->status & TP_STATUS_VLAN_TPID_VALID) ? s->vlan_tpid : ETH_P_8021Q;
  tagged_.resize(s->snaplen + VLAN_TAG);
  std::memcpy(tagged_.data(), f, MAC_PAIR);
  const uint8_t tag[VLAN_TAG] = {uint8_t(tpid >> 8), uint8_t(tpid), uint8_t(s->vlan_tci >> 8), uint8_t(s->vlan_tci)};
  std::memcpy(tagged_.data() + MAC_PAIR, tag, VLAN_TAG);
  std::memcpy(tagged_.data() + MAC_PAIR + VLAN_TAG, f + MAC_PAIR, s->snaplen - MAC_PAIR);
  ++vlan_tagged;
  return tagged_.data();
}

template <class Take>
size_t RxRing::drain(size_t n, Take&& take) {
  if (!(__atomic_load_n(&slot(i_)->status, __ATOMIC_ACQUIRE) & TP_STATUS_USER)) resync();
  size_t read = 0;
  while (read < n) {
    Slot* s = slot(i_);
    if (!(__atomic_load_n(&s->status, __ATOMIC_ACQUIRE) & TP_STATUS_USER)) break;
    const int64_t t = int64_t(s->sec) * 1000000000 + s->nsec;
    if (s->snaplen != s->len)
      ++truncated;  // larger than a ring slot: cannot forward it
    else if ((s->status & TP_STATUS_VLAN_VALID) && s->snaplen >= MAC_PAIR)
      take(with_tag(s), size_t(s->snaplen) + VLAN_TAG, t);
    else
      take(reinterpret_cast<const uint8_t*>(s) + s->mac, size_t(s->snaplen), t);
    __atomic_store_n(&s->status, 0u, __ATOMIC_RELEASE);  // slot back to the kernel
    if (++i_ == frames_) i_ = 0;
    ++read;
  }
  return read;
}

}  // namespace dlcp
