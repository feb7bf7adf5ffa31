#include "datapath/rx_ring.hpp"

#include <linux/if_packet.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <cerrno>
#include <system_error>

namespace dlcp {

RxRing::RxRing(int fd, uint32_t frame_size, uint32_t block_size, uint32_t block_nr) {
  int version = TPACKET_V2;
  if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, sizeof version) < 0)
    throw std::system_error(errno, std::generic_category(), "PACKET_VERSION");
  tpacket_req req{block_size, block_nr, frame_size, block_size / frame_size * block_nr};
  if (setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) < 0)
    throw std::system_error(errno, std::generic_category(), "PACKET_RX_RING");
  map_size_ = size_t(block_size) * block_nr;
  void* m = mmap(nullptr, map_size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (m == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "mmap of the rx ring");
  map_ = static_cast<uint8_t*>(m);
  frame_size_ = frame_size;
  frames_ = req.tp_frame_nr;
}

RxRing::~RxRing() {
  if (map_) munmap(map_, map_size_);
}

bool RxRing::ready() const { return __atomic_load_n(&slot(i_)->status, __ATOMIC_ACQUIRE) & TP_STATUS_USER; }

void RxRing::resync() {
  for (size_t k = 1; k < frames_; ++k) {
    const size_t j = (i_ + k) % frames_;
    if (__atomic_load_n(&slot(j)->status, __ATOMIC_ACQUIRE) & TP_STATUS_USER) {
      ++resyncs;
      i_ = j;
      return;
    }
  }
}

size_t RxRing::waiting() const {
  size_t n = 0;
  for (size_t k = 0; k < frames_; ++k)
    if (__atomic_load_n(&slot(k)->status, __ATOMIC_ACQUIRE) & TP_STATUS_USER) ++n;
  return n;
}

}  // namespace dlcp
