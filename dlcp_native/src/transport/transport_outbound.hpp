// What a sender keeps of each message it sends (dlcp_emu/transport/outbound.py): the state
// of every chunk, and what it reports when the message is complete; and the sender's
// messages under way (Python's `_msgs` dict), each in a reusable slot.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "transport/transport_key_index.hpp"
#include "base/ring.hpp"
#include "wire/transport_packet.hpp"

namespace dlcp::transport {

enum ChunkState : uint8_t { UNSENT = 0, IN_FLIGHT = 1, ACKED = 2, LOST = 3, ABANDONED = 4 };

struct SendResult {
  uint32_t iteration, tensor_id;
  int64_t nbytes, chunks;
  int64_t start_ns, done_ns;
  int64_t packets, retransmissions, probe_rounds;
};

// A message as the sender's queues name it: its slot and the slot's generation when it was
// sent. Once the message finishes its slot's generation moves on, so a reference left in a
// lane, the ready heap or the probe queue is seen as finished (Python's `m.done`).
struct OutRef {
  uint32_t slot, gen;
  bool operator==(const OutRef& o) const { return slot == o.slot && gen == o.gen; }
};

// A chunk's state and header fields together: what a packet or its answer reads of a chunk
// is one load (five vectors were five blocks, as many cache lines a chunk).
struct Chunk {
  int64_t xmit_ts = 0;  // when its latest copy was sent
  int64_t tx_seq = -1;  // that copy's transmission number
  uint8_t state = UNSENT;
  uint8_t mag = 0;      // its magnitude class
  uint8_t flags = 0;    // FLAG_DROPPABLE, FLAG_LAST_CHUNK
};

struct Outbound {
  uint32_t iteration = 0, tensor_id = 0;
  uint8_t priority = 7;
  uint8_t tclass = wire::TCLASS_GRADIENT;
  uint32_t count = 0;
  int64_t cs = 0, total = 0;
  std::shared_ptr<const Buffer> buf;
  std::vector<Chunk> ch;
  uint32_t next_new = 0, cum = 0, acked = 0;
  int64_t inflight = 0, abandoned = 0, bound = 0;
  Ring<uint32_t> retx;
  std::vector<std::vector<uint8_t>> probes;
  int64_t probe_rounds = 0;
  int64_t probe_ts = -1;
  bool probe_due = false, in_ready = false;
  int64_t order = 0, start_ns = 0, packets = 0, retransmits = 0;
  int lane_base = 0;
  uint32_t slot = 0, gen = 0;  // where it lives (Outbounds)
  uint32_t prev = 0, next = 0;  // its neighbours in sending order

  int64_t size(uint32_t c) const { return c + 1 < count ? cs : total - int64_t(c) * cs; }
  OutRef ref() const { return {slot, gen}; }
};

// The messages under way, in the order they were sent (Python's dict order), found by key or
// by reference. A finished message's slot is reused with its vectors' blocks, so a message at
// steady state allocates nothing; blocks grown past REUSE_CHUNKS chunks are given back.
class Outbounds {
  struct KeyBits {  // (iteration << 32 | tensor_id): every bit is the key's already
    uint64_t operator()(uint64_t key) const { return key; }
  };
  using Index = KeyIndex<uint64_t, KeyBits>;

 public:
  static constexpr uint32_t NONE = Index::NONE;
  static constexpr size_t REUSE_CHUNKS = 4096;

  // A slot for a new message of `key` (absent), last in sending order; its fields but the
  // vectors' contents are reset.
  Outbound& add(uint64_t key);
  // The message is finished: its slot is free and every reference to it stale.
  void remove(Outbound& m, uint64_t key);

  Outbound* find(uint64_t key) {
    const uint32_t s = index_.find(key);
    return s == NONE ? nullptr : &slab_[s];
  }
  Outbound& at(uint32_t slot) { return slab_[slot]; }
  bool contains(uint64_t key) const { return index_.find(key) != NONE; }
  // The message referred to, or null once it finished.
  Outbound* live(OutRef r) {
    Outbound& m = slab_[r.slot];
    return m.gen == r.gen ? &m : nullptr;
  }
  const Outbound* live(OutRef r) const {
    const Outbound& m = slab_[r.slot];
    return m.gen == r.gen ? &m : nullptr;
  }
  size_t size() const { return index_.size(); }
  bool empty() const { return index_.size() == 0; }
  // Every message in sending order.
  template <class F>
  void each(F f) {
    for (uint32_t s = head_; s != NONE; s = slab_[s].next) f(slab_[s]);
  }

 private:
  std::vector<Outbound> slab_;
  std::vector<uint32_t> free_;
  Index index_;
  uint32_t head_ = NONE, tail_ = NONE;
};

}  // namespace dlcp::transport
