#include "datapath/tx_batch.hpp"

#include <cstring>
#include <stdexcept>

namespace dlcp {

TxBatch::TxBatch(std::vector<int> fds, size_t capacity)
    : sent(fds.size(), 0), errors(fds.size(), 0), fds_(std::move(fds)), capacity_(capacity), queues_(fds_.size()) {
  if (capacity_ == 0) throw std::invalid_argument("a send batch holds at least one frame");
  for (Queue& q : queues_) {
    q.copies.resize(capacity_);
    q.iov.resize(capacity_);
    q.msgs.resize(capacity_);
  }
}

void TxBatch::add(int port, const uint8_t* frame, size_t n) {
  Queue& q = queues_[port];
  q.iov[q.n] = {const_cast<uint8_t*>(frame), n};
  if (++q.n == capacity_) flush_port(size_t(port));
}

void TxBatch::add_copy(int port, const uint8_t* frame, size_t n) {
  std::vector<uint8_t>& copy = queues_[port].copies[queues_[port].n];
  copy.assign(frame, frame + n);
  add(port, copy.data(), n);
}

void TxBatch::flush() {
  for (size_t p = 0; p < queues_.size(); ++p)
    if (queues_[p].n) flush_port(p);
}

void TxBatch::flush_port(size_t port) {
  Queue& q = queues_[port];
  for (size_t i = 0; i < q.n; ++i) {
    std::memset(&q.msgs[i], 0, sizeof(mmsghdr));
    q.msgs[i].msg_hdr.msg_iov = &q.iov[i];
    q.msgs[i].msg_hdr.msg_iovlen = 1;
  }
  size_t i = 0;
  while (i < q.n) {
    const int done = sendmmsg(fds_[port], &q.msgs[i], unsigned(q.n - i), MSG_DONTWAIT);
    if (done < 0) {  // the frame at i was refused: count it, go on with the next
      ++errors[port];
      ++i;
    } else {
      sent[port] += done;
      i += size_t(done);
    }
  }
  q.n = 0;
}

}  // namespace dlcp
