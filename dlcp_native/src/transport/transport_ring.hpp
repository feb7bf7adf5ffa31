// A FIFO queue on one growing power-of-two block (the sender's lanes and a message's
// retransmissions): unlike std::deque it allocates nothing while empty and, once grown to a
// queue's peak, nothing per element (a deque allocates a block at construction and frees and
// takes one every few dozen elements as the queue moves on).
#pragma once

#include <cstddef>
#include <vector>

namespace dlcp::transport {

template <class T>
class Ring {
 public:
  bool empty() const { return n_ == 0; }
  size_t size() const { return n_; }
  T& front() { return buf_[head_]; }
  const T& front() const { return buf_[head_]; }
  // The i-th element from the front.
  T& operator[](size_t i) { return buf_[(head_ + i) & (buf_.size() - 1)]; }
  const T& operator[](size_t i) const { return buf_[(head_ + i) & (buf_.size() - 1)]; }
  void pop_front() {
    head_ = (head_ + 1) & (buf_.size() - 1);
    --n_;
  }
  void push_back(const T& v) {
    if (n_ == buf_.size()) grow();
    buf_[(head_ + n_) & (buf_.size() - 1)] = v;
    ++n_;
  }
  void clear() { head_ = n_ = 0; }
  // Empty, and its block given back.
  void release() {
    clear();
    std::vector<T>().swap(buf_);
  }
  size_t capacity() const { return buf_.size(); }

 private:
  void grow() {
    std::vector<T> b(buf_.empty() ? 8 : buf_.size() * 2);
    for (size_t i = 0; i < n_; ++i) b[i] = (*this)[i];
    buf_.swap(b);
    head_ = 0;
  }

  std::vector<T> buf_;
  size_t head_ = 0, n_ = 0;
};

}  // namespace dlcp::transport
