// A double-ended queue of small values in one power-of-two buffer: what collections.deque is
// to the Python models, without a node allocation per element, and nothing allocated while
// empty. Every layer's queues (a port's, a wire's, a NIC's, a sender's lanes and
// retransmissions) are these: base/ is the one folder any layer may include, as Python's
// standard library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace dlcp {

template <class T>
class Ring {
 public:
  bool empty() const { return head_ == tail_; }
  size_t size() const { return static_cast<size_t>(tail_ - head_); }
  T& front() { return buf_[head_ & mask_]; }
  const T& front() const { return buf_[head_ & mask_]; }
  T& back() { return buf_[(tail_ - 1) & mask_]; }
  T& operator[](size_t i) { return buf_[(head_ + i) & mask_]; }
  const T& operator[](size_t i) const { return buf_[(head_ + i) & mask_]; }

  void push_back(const T& value) {
    if (size() == buf_.size()) grow();
    buf_[tail_++ & mask_] = value;
  }
  void push_back(T&& value) {
    if (size() == buf_.size()) grow();
    buf_[tail_++ & mask_] = std::move(value);
  }
  T pop_front() { return std::move(buf_[head_++ & mask_]); }
  T pop_back() { return buf_[--tail_ & mask_]; }
  void clear() { head_ = tail_ = 0; }
  // Empty, and its block given back.
  void release() {
    clear();
    std::vector<T>().swap(buf_);
    mask_ = 0;
  }
  size_t capacity() const { return buf_.size(); }

  // Keep only the elements for which keep(element) holds, in order.
  template <class Pred>
  void keep_if(Pred keep) {
    uint64_t out = head_;
    for (uint64_t i = head_; i != tail_; ++i) {
      const T value = buf_[i & mask_];
      if (keep(value)) buf_[out++ & mask_] = value;
    }
    tail_ = out;
  }

 private:
  void grow() {
    const size_t n = size();
    std::vector<T> bigger(buf_.empty() ? 16 : 2 * buf_.size());
    for (size_t i = 0; i < n; ++i) bigger[i] = std::move((*this)[i]);
    buf_.swap(bigger);
    mask_ = buf_.size() - 1;
    head_ = 0;
    tail_ = n;
  }

  std::vector<T> buf_;
  uint64_t head_ = 0, tail_ = 0, mask_ = 0;
};

}  // namespace dlcp
