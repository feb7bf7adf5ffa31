// The receiving endpoint, sans-I/O (dlcp_emu/transport/receiver.py): `receive` takes DATA
// and PROBE packets, `poll` hands out what to send, `take_delivered` the completed tensors.
//
// Every packet lands at its offset, so reordering and duplicates are harmless. Each data
// packet is answered by one ACK, a trimmed one by a NACK. `bounded_loss` false is
// ReliableReceiver (below) (complete when every chunk has arrived), true DlcpReceiver (also complete
// once a PROBE has listed the droppable chunks, every other chunk has arrived and the missing
// bytes are within the bound; they stay zero and are accounted exactly in the Delivery).
//
// `store` false is the payload-free receiver: it keeps which chunks arrived, not their bytes,
// and delivers sizes and losses only. What a PROBE does is in transport_receiver_probes.cpp,
// what it sends in transport_receiver_answers.cpp.
// `pull_gap_ns` > 0: it paces NDP's pulls (transport_pulls.hpp), every answer carrying the
// sender's latest pull number.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <deque>
#include <new>
#include <memory>
#include <optional>
#include <unordered_set>
#include <utility>
#include <vector>

#include "transport/transport_feedback.hpp"
#include "transport/transport_inbound_table.hpp"
#include "transport/transport_pulls.hpp"
#include "wire/transport_packet.hpp"

namespace dlcp::transport {

// A zeroed byte buffer from calloc: fresh pages come zero from the kernel, so a large
// tensor's buffer is written once (by the chunks that arrive), not zeroed first. Python's
// bytearray(n) is calloc'd the same way.
class ZeroBuffer {
 public:
  explicit ZeroBuffer(size_t n = 0) {
    if (n) {
      p_.reset(static_cast<uint8_t*>(std::calloc(n, 1)));
      if (!p_) throw std::bad_alloc();
    }
  }
  uint8_t* data() { return p_.get(); }
  bool empty() const { return !p_; }
  uint8_t* release() { return p_.release(); }  // the caller frees it with std::free

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> p_;
};

// One completed tensor: `data` (total bytes of it) equals what was sent except lost_ranges.
struct Delivery {
  uint16_t job, src_rank, dst_rank;
  uint32_t iteration, tensor_id;
  ZeroBuffer data;  // count * chunk_size bytes, of which the first `total` count (empty: payload-free)
  int64_t total;
  int64_t first_ns, done_ns;
  std::vector<int64_t> lost_chunks;
  int64_t lost_bytes;
  std::vector<std::pair<int64_t, int64_t>> lost_ranges;
  // by class (-1: unknown), in the order Python's dicts fill: first lost chunk of each first
  std::vector<std::pair<int, int64_t>> lost_bytes_by_class, lost_chunks_by_class;
  int64_t bound_bytes;
  int64_t packets, duplicates, trimmed;
};

struct Inbound {
  InKey key;
  uint32_t count;
  int64_t cs;
  ZeroBuffer buf;  // zero: what a missing chunk delivers (empty when payload-free)
  std::vector<uint8_t> got;
  int64_t received = 0, received_bytes = 0, received_droppable = 0;
  uint32_t cum = 0;
  uint32_t recent[feedback::ACK_EXTRA];  // the last chunks to arrive, newest first: n_recent of them
  uint8_t n_recent = 0;
  int64_t first_ns;
  int64_t packets = 0, dups = 0, trimmed = 0;
  // by chunk, CLASS_UNKNOWN where none is known; empty until the first is learnt
  std::vector<int16_t> classes;  // from trimmed headers
  std::optional<int64_t> total;                   // from the last chunk or a probe
  int64_t bound = 0, n_droppable = 0;
  int64_t nseg = 0;  // 0: no probe yet
  std::unordered_set<uint32_t> segs;
  std::vector<int16_t> drop_class;  // droppable chunks', from probes
  std::optional<int64_t> probe_ts;                   // send time of the last probe answered

  bool live = false;  // a message in progress; else a completed one's state, kept for reuse

  static constexpr int16_t CLASS_UNKNOWN = -1;
  static void learn(std::vector<int16_t>& by_chunk, uint32_t count, uint32_t c, uint8_t cls) {
    if (by_chunk.empty()) by_chunk.assign(count, CLASS_UNKNOWN);
    by_chunk[c] = cls;
  }

  // As new, keeping the blocks of its vectors: a receiver reuses its completed messages' state.
  void reset() {
    std::vector<uint8_t> g = std::move(got);
    std::vector<int16_t> c = std::move(classes), d = std::move(drop_class);
    g.clear();
    c.clear();
    d.clear();
    *this = Inbound();
    got = std::move(g);
    classes = std::move(c);
    drop_class = std::move(d);
  }
};

class alignas(64) Receiver {
 public:
  Receiver(bool bounded_loss, int64_t rank, int64_t mtu, int64_t remember = 4096, bool store = true,
           int64_t pull_gap_ns = 0);

  void receive(const Header& h, const InPayload& payload, int64_t now, bool ce = false);
  void poll(int64_t now, std::vector<OutPacket>& out) {
    if (pacer_) release_pull(now);
    for (auto& p : out_) out.push_back(std::move(p));
    out_.clear();
  }
  // The pull pacer's, if it paces pulls (senders drive recovery).
  std::optional<int64_t> next_timeout() const { return pacer_ ? pacer_->next_timeout() : std::nullopt; }
  std::vector<Delivery> take_delivered() { return std::exchange(delivered_, {}); }
  bool has_delivered() const { return !delivered_.empty(); }
  size_t pending() const { return msgs_.size() - done_order_.size(); }

  // What every packet reads first, then the private fields a packet reads, lie in the
  // object's first two cache lines (alignas(64)): a receiver is cold at 1024 hosts.
  const bool bounded_loss;
  const bool store;
  const uint16_t rank;
  const int64_t payload_size;
  const int64_t remember;
  int64_t malformed = 0;

 private:
  // The tensor's state; `found` false: malformed (counted). A null state with `found`: the
  // tensor completed earlier.
  Inbound* state(const Header& h, int64_t now, int64_t cs, bool& found);
  void on_data(const Header& h, const InPayload& p, int64_t now, bool ce);
  bool complete_ready(const Inbound& st) const;
  void complete(Inbound& st, int64_t now);
  void feedback(const Header& h, int64_t now, std::vector<uint8_t> payload, uint8_t type, int64_t chunk = -1);
  void feedback(const Header& h, int64_t now, uint8_t* payload, size_t n, uint8_t type, int64_t chunk = -1);
  void ack(const Header& h, int64_t now, uint32_t cum, uint8_t fb_flags, const uint32_t* extra, size_t n_extra);
  void on_probe(const Header& h, const InPayload& p, int64_t now);
  void on_trimmed_probe(const Header& h, int64_t now);
  void bitmaps(const Header& h, const Inbound& st, int64_t now, uint8_t fl);
  void bitmap_complete(const Header& h, int64_t now);
  void release_pull(int64_t now);

  std::unique_ptr<PullPacer> pacer_;  // null: the sender paces itself
  // The last packet's message (most follow one of the same): no table lookup. Null after an erase.
  std::pair<InKey, Inbound*> last_{InKey{}, nullptr};
  std::vector<OutPacket> out_;
  // Messages in progress (an index into pool_) and completed ones (DONE: answer late packets).
  InboundTable msgs_;
  // The states, by index: live ones, completed ones kept for reuse (at most SPARE_STATES),
  // null; free_ holds the indices of all but the live ones.
  std::vector<std::unique_ptr<Inbound>> pool_;
  std::vector<uint32_t> free_;
  size_t spares_ = 0;
  std::deque<InKey> done_order_;  // completed keys, oldest first, as the OrderedDict
  std::vector<Delivery> delivered_;
};

// Completes a tensor when every byte has arrived.
class ReliableReceiver : public Receiver {
 public:
  ReliableReceiver(int64_t rank, int64_t mtu, int64_t remember = 4096, bool store = true, int64_t pull_gap_ns = 0)
      : Receiver(false, rank, mtu, remember, store, pull_gap_ns) {}
};

// Bounded loss: completes when every non-droppable chunk has arrived and the missing
// (droppable) bytes are within the bound the sender's PROBE announced.
class DlcpReceiver : public Receiver {
 public:
  DlcpReceiver(int64_t rank, int64_t mtu, int64_t remember = 4096, bool store = true, int64_t pull_gap_ns = 0)
      : Receiver(true, rank, mtu, remember, store, pull_gap_ns) {}
};

}  // namespace dlcp::transport
