// Frames bound for the ports' sockets, sent with one sendmmsg a port instead of a send a
// frame: the syscall was a quarter of a frame's kernel cost here (send 1.6 us a frame alone,
// 1.2 us in batches of 32, 64-byte frames into a veth). Frames are copied in, so a ring slot
// or a held buffer may be reused at once; a port's frames leave in the order they were added.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dlcp {

class TxBatch {
 public:
  // fds by port index; capacity: frames a port holds before it is sent at once.
  TxBatch(std::vector<int> fds, size_t capacity);
  void add(int port, const uint8_t* frame, size_t n);
  // Send what every port holds. A frame the kernel refuses (a full queue, a frame too large)
  // is counted in `errors` and skipped, as a failed send was.
  void flush();
  std::vector<int64_t> sent, errors;  // by port

 private:
  void flush_port(size_t port);
  struct Queue {
    std::vector<std::vector<uint8_t>> frames;  // buffers kept between flushes
    std::vector<iovec> iov;
    std::vector<mmsghdr> msgs;
    size_t n = 0;
  };
  std::vector<int> fds_;
  size_t capacity_;
  std::vector<Queue> queues_;
};

}  // namespace dlcp
