// NDP's receiver-paced pulls, the receiver's side (dlcp_emu/transport/pulls.py's PullPacer,
// which documents them): every data packet asks its sender for one more; one pacer a receiver,
// shared by every flow into it, releases the requests round robin over the senders, at most
// one every gap_ns. Each sender's pull numbers are 16 bits, wrapping.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <utility>

namespace dlcp::transport {

struct PullSource {
  uint16_t job, src;
  bool operator<(const PullSource& o) const { return job != o.job ? job < o.job : src < o.src; }
  bool operator==(const PullSource& o) const { return job == o.job && src == o.src; }
};

// What a PULL for a sender names: the latest tensor and chunk asked of it, and its traffic class.
struct PullHeader {
  uint32_t iteration, tensor_id, chunk_index, chunk_count;
  uint8_t tclass;
};

class PullPacer {
 public:
  explicit PullPacer(int64_t gap_ns) : gap_ns(gap_ns) {}

  // One more packet asked of `src`; its answers carry `released(src)` after this.
  void request(PullSource src, int64_t now, PullHeader header);
  // `src` has nothing under way here: its waiting requests would pull nothing.
  void flush(PullSource src);
  std::optional<int64_t> next_timeout() const {
    return turn_.empty() ? std::nullopt : std::optional<int64_t>(last_ + gap_ns);
  }
  // The sender whose turn it is, if a pull is due by now (its new number: released(src)).
  std::optional<PullSource> release(int64_t now);
  uint16_t released(PullSource src) const {
    const auto it = released_.find(src);
    return it == released_.end() ? 0 : it->second;
  }
  const PullHeader& header(PullSource src) const { return header_.at(src); }

  const int64_t gap_ns;

 private:
  std::map<PullSource, uint16_t> released_;  // its latest pull number
  std::map<PullSource, int64_t> waiting_;    // requests not yet released
  std::map<PullSource, PullHeader> header_;
  std::deque<PullSource> turn_;              // senders with requests waiting, round robin
  bool any_ = false;                         // Python: last is not None
  int64_t last_ = 0;                         // when the latest pull was released
};

}  // namespace dlcp::transport
