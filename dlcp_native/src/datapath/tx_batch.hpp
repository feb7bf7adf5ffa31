// Frames bound for the ports' sockets, sent with one sendmmsg a port instead of a send a
// frame: the syscall was a quarter of a frame's kernel cost here (send 1.6 us a frame alone,
// 1.2 us in batches of 32, 64-byte frames into a veth). A port's frames leave in the order
// they were added.
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
  // A frame whose bytes stay where they are until the next flush (the switch's held frames).
  void add(int port, const uint8_t* frame, size_t n);
  // A frame copied in: its buffer may be reused at once (a receive ring's slot).
  void add_copy(int port, const uint8_t* frame, size_t n);
  // Send what every port holds. A frame the kernel refuses (a full queue, a frame too large)
  // is counted in `errors` and skipped, as a failed send was.
  void flush();
  std::vector<int64_t> sent, errors;  // by port

 private:
  void flush_port(size_t port);
  struct Queue {
    std::vector<std::vector<uint8_t>> copies;  // add_copy's buffers, kept between flushes
    std::vector<iovec> iov;
    std::vector<mmsghdr> msgs;
    size_t n = 0;
  };
  std::vector<int> fds_;
  size_t capacity_;
  std::vector<Queue> queues_;
};

}  // namespace dlcp
