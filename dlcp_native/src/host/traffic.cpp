#include "host/traffic.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <stdexcept>

#include "datapath/clock.hpp"
#include "wire/wire_layout.hpp"

namespace dlcp {

namespace {

using wire::OFF_CHUNK_INDEX, wire::OFF_SEND_TS_NS;  // what the sender stamps

void put_be(uint8_t* p, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i, v >>= 8) p[i] = uint8_t(v);
}

}  // namespace

SendResult send_frames(int fd, std::vector<std::vector<uint8_t>>& frames, std::vector<std::vector<uint8_t>>& samples,
                       const std::vector<int>& cls_of, int classes, const SendPlan& plan) {
  const size_t n = frames.size();
  if (n == 0 || cls_of.size() != n || (plan.sample_every && samples.size() != n) || plan.rate_pps <= 0 ||
      plan.burst < 1)
    throw std::invalid_argument("send_frames: frames, classes and samples must match; rate and burst positive");
  SendResult r;
  r.per_class.assign(size_t(classes), 0);
  std::vector<mmsghdr> msgs(size_t(plan.burst));
  std::vector<iovec> iov(size_t(plan.burst));
  std::vector<size_t> index(size_t(plan.burst));
  const double gap = 1e9 / plan.rate_pps;
  const int64_t t0 = monotonic_ns(), end = t0 + plan.duration_ns;
  int64_t sent = 0;
  while (sent < plan.limit) {
    const int64_t now = monotonic_ns();
    if (now >= end) break;
    int64_t due = int64_t(double(now - t0) / gap) + 1 - sent;
    if (due <= 0) {
      const timespec ts = timespec_of(t0 + int64_t(double(sent) * gap));
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr);
      continue;
    }
    due = std::min({due, plan.burst, plan.limit - sent});
    for (int64_t k = 0; k < due; ++k) {
      const int64_t seq = sent + k;
      const size_t i = size_t(seq % int64_t(n));
      std::vector<uint8_t>& buf =
          plan.sample_every && seq % plan.sample_every == 0 ? samples[i] : frames[i];
      if (plan.stamp) {
        put_be(&buf[OFF_CHUNK_INDEX], uint64_t(seq) & 0xFFFFFFFFu, 4);
        put_be(&buf[OFF_SEND_TS_NS], uint64_t(monotonic_ns()), 8);
      }
      iov[k] = {buf.data(), buf.size()};
      msgs[k] = {};
      msgs[k].msg_hdr.msg_iov = &iov[k];
      msgs[k].msg_hdr.msg_iovlen = 1;
      index[k] = i;
    }
    const int done = sendmmsg(fd, msgs.data(), unsigned(due), 0);
    if (done < 0) {
      ++r.errors;
      continue;
    }
    for (int k = 0; k < done; ++k) ++r.per_class[size_t(cls_of[index[k]])];
    sent += done;
    if (done < due) ++r.errors;  // the next one failed: it is tried again, as in Python
  }
  r.sent = sent;
  r.elapsed_ns = monotonic_ns() - t0;
  return r;
}

}  // namespace dlcp
