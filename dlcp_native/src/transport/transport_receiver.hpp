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
#include <deque>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "transport/transport_feedback.hpp"
#include "transport/transport_inbound.hpp"
#include "transport/transport_pulls.hpp"
#include "wire/transport_packet.hpp"

namespace dlcp::transport {

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
