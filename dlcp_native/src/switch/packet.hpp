// The packet as the switch model sees it (switch_models/packet.py): parsed metadata, never
// bytes. The driver applies `rewrite` flags (trim, ECN CE) to its frame. Times are integer
// nanoseconds on the caller's clock.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dlcp {

// Bits of Packet::rewrite: what the model changed that the driver must apply to the frame.
constexpr uint8_t REWRITE_TRIM = 1;
constexpr uint8_t REWRITE_CE = 2;

constexpr uint8_t NOT_DLCP_PRIORITY = 7;  // the lowest: what a switch gives traffic that says nothing
// Traffic class codes (switch_models/traffic.py): `none` says nothing; a packet is a gradient
// unless it says otherwise. The stages learn the others from their `loss_tolerant` flags.
constexpr uint8_t TCLASS_NONE = 0, TCLASS_GRADIENT = 1;
// Packet::job of traffic without a DLCP header: the switch cannot read a job from it.
constexpr uint16_t NO_JOB = 0xFFFF;

// One cache line: a wire's ring of packets and a switch's pool hold a packet a line, so that
// reading one (the loop's hottest loads at scale) touches one line, not two. The four 64-bit
// fields need their range (uids of carried packets from 2**60, flow hashes, times); sizes and
// layers fit 32 bits, and the adapters refuse what does not (packet_fields_out_of_range).
struct alignas(64) Packet {
  int64_t uid = 0;           // caller's id for per-packet records
  int64_t flow = 0;          // flow hash (5-tuple); ECMP and PIAS key on it
  int32_t size = 0;          // bytes on the wire (Ethernet frame without FCS)
  int32_t header_size = 90;  // size after trimming the payload (a control packet: its whole size)
  int32_t layer = 0;         // tensor / layer id, 0 = first layer of the model
  int32_t dst = -1;          // routing key as an index into the switch's routes; -1: none
  uint16_t job = NO_JOB;     // the DLCP header's job (several jobs on one fabric), else NO_JOB
  uint8_t prio = 7;          // sender's priority 0..7, 0 highest (DLCP header, else from DSCP)
  uint8_t mag = 0;           // gradient magnitude class 0..7, 7 = largest (DLCP data only)
  uint8_t tclass = TCLASS_GRADIENT;  // traffic class code (switch_models/traffic.py)
  bool droppable = false;    // the sender allows this packet to be lost (bounded-loss transport)
  bool dlcp = false;         // carries a DLCP header (only those can be trimmed)
  bool ect = false;          // ECN-capable transport
  bool ce = false;           // congestion experienced (already marked, or marked here)
  // Filled in by the switch:
  uint8_t cls = 0;           // class chosen by the classifier, 0 = most important
  uint8_t rewrite = 0;       // REWRITE_* bits
  int64_t arrival = 0;       // time the switch took it in
  int64_t depart = 0;        // scheduled time it leaves the egress port
};
static_assert(sizeof(Packet) == 64, "a packet is one cache line");

// What a Packet's 32-bit fields hold: a packet from outside the core (Python's integers, a
// batch's columns) is checked against it before it is built. The empty string if it fits, else
// the first field that does not, with its range.
std::string packet_fields_out_of_range(int64_t size, int64_t header_size, int64_t layer);


// A packet a trimming switch forwards whole, in its header class, and a priority host queue
// sends ahead of data (switch_models/packet.py is_header): a bare DLCP header or a control
// packet, whose `header_size` is its whole size.
inline bool is_header(const Packet& pkt) { return pkt.dlcp && pkt.size <= pkt.header_size; }

using Slot = uint32_t;
constexpr Slot NO_SLOT = 0xFFFFFFFFu;

// A queue's entry: a slot and the generation that slot had when the packet was queued.
// The Python model evicts lazily: an evicted packet stays in its deque, marked not queued,
// and is skipped at dequeue. There every packet is its own object; here slots are reused, so
// an entry also names the generation, and one whose slot has moved on is as stale as one
// whose packet was evicted.
struct Ref {
  Slot slot;
  uint32_t gen;
};

// The packets a switch holds (queued or in flight), in reusable slots.
class PacketPool {
 public:
  Slot alloc(const Packet& pkt);
  // The slot is free for the next alloc; its data stays readable until then (a driver reads
  // the arrival's final fields after the queue manager may have dropped it).
  void release(Slot slot);

  Packet& operator[](Slot slot) { return packets_[slot]; }
  const Packet& operator[](Slot slot) const { return packets_[slot]; }
  Ref ref(Slot slot) const { return {slot, meta_[slot].gen}; }
  // Python's `pkt.queued is port`: a slot belongs to one switch, and its packet to at most
  // one of that switch's ports, so a flag and the generation say as much.
  bool live(Ref r) const { return meta_[r.slot].gen == r.gen && meta_[r.slot].queued; }
  void set_queued(Slot slot, bool queued) { meta_[slot].queued = queued; }

 private:
  // Beside the packets, not in their line: a slot's generation and whether it is queued.
  struct Meta {
    uint32_t gen = 0;
    bool queued = false;
  };
  std::vector<Packet> packets_;
  std::vector<Meta> meta_;
  std::vector<Slot> free_;
};

}  // namespace dlcp
