// See frames.hpp. Offsets and rules are those of dlcp_emu/wire/layout.py and
// dlcp_emu/emu/datapath/frames.py, in the same order.
#include "datapath/frames.hpp"

#include <netinet/in.h>  // IPPROTO_TCP, IPPROTO_UDP

#include "wire/header_codec.hpp"
#include "wire/wire_layout.hpp"
#include "host/host_stack.hpp"  // python_tuple_hash
#include "switch/nic.hpp"         // ETH_MIN
#include "wire/transport_packet.hpp"

namespace dlcp {

namespace {

// Offsets, lengths and rules of the wire (wire_layout.hpp, generated from layout.py).
using transport::FLAG_DROPPABLE, transport::FLAG_TRIMMED, transport::TENSOR_LAYER_SHIFT;
using wire::DLCP_OFF, wire::ETH_LEN, wire::ETHERTYPE_IPV4, wire::FRAME_OVERHEAD, wire::HDR_FLAGS, wire::HDR_MAGIC,
    wire::HDR_PAYLOAD_LEN, wire::HDR_PRIORITY, wire::HDR_VERSION, wire::HEADER_LEN, wire::IPV4_LEN, wire::OFF_ETHERTYPE,
    wire::OFF_IP_CHECKSUM, wire::OFF_IP_DST, wire::OFF_IP_FRAG, wire::OFF_IP_PROTO, wire::OFF_IP_SRC, wire::OFF_IP_TOS,
    wire::OFF_IP_TOTAL_LEN, wire::OFF_IP_VER_IHL, wire::OFF_UDP_CHECKSUM, wire::OFF_UDP_DPORT, wire::OFF_UDP_LEN,
    wire::OFF_UDP_SPORT, wire::PAYLOAD_OFF, wire::UDP_LEN;

constexpr size_t IP_MIN = ETH_LEN + IPV4_LEN;           // Ethernet and an IPv4 header without options
constexpr size_t PORTS_END = OFF_UDP_DPORT + 2;         // where the ports end, IPv4 without options
constexpr uint8_t TCP = IPPROTO_TCP, UDP = wire::IPPROTO_UDP;
constexpr uint16_t FRAG = wire::IP_FLAG_MF | wire::IP_FRAG_OFFSET_MASK;  // not a whole datagram

uint16_t u16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }
uint32_t u32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }
void put16(uint8_t* p, uint32_t v) {
  p[0] = uint8_t(v >> 8);
  p[1] = uint8_t(v);
}

// hash(int.from_bytes(frame[:12], "big")): CPython hashes a non-negative int as its value
// modulo 2**61 - 1.
int64_t mac_pair_hash(const uint8_t* f) {
  unsigned __int128 v = 0;
  for (int i = 0; i < 12; ++i) v = v << 8 | f[i];
  const unsigned __int128 modulus = ((unsigned __int128)1 << 61) - 1;
  return int64_t(v % modulus);
}

void plain(Packet& pkt, size_t n, int64_t flow, uint8_t prio = NOT_DLCP_PRIORITY, bool ect = false, bool ce = false) {
  pkt.size = static_cast<int32_t>(int64_t(n) > ETH_MIN ? int64_t(n) : ETH_MIN);
  pkt.flow = flow;
  pkt.prio = prio;
  pkt.mag = 0;
  pkt.tclass = 0;
  pkt.layer = 0;
  pkt.droppable = false;
  pkt.dlcp = false;
  pkt.ect = ect;
  pkt.ce = ce;
  pkt.header_size = FRAME_OVERHEAD;
  pkt.job = NO_JOB;
}

// RFC 1071/1624, as dlcp_emu/wire/checksum.py: a ones' complement sum folded to 0..0xFFFF,
// 0xFFFF for a non-zero total.
uint32_t fold(uint64_t total) {
  if (total == 0) return 0;
  const uint32_t r = uint32_t(total % 0xFFFF);
  return r ? r : 0xFFFF;
}
uint32_t update(uint32_t checksum, uint64_t old_sum, uint64_t new_sum) {
  return 0xFFFF - fold((0xFFFF - checksum) + (0xFFFF - fold(old_sum)) + new_sum);
}
// The bytes as big-endian 16-bit words, summed (odd length zero-padded): congruent mod 0xFFFF
// to _words() of checksum.py.
uint64_t word_sum(const uint8_t* p, size_t n) {
  uint64_t s = 0;
  size_t i = 0;
  for (; i + 1 < n; i += 2) s += uint32_t(p[i]) << 8 | p[i + 1];
  if (i < n) s += uint32_t(p[i]) << 8;
  return s;
}

}  // namespace

Parsed parse_frame(const uint8_t* f, size_t n, Packet& pkt, uint16_t dlcp_port) {
  if (n < PORTS_END) {
    if (n < ETH_LEN) return Parsed::MALFORMED;
    // IPv4 without room for its header
    if (n < IP_MIN && u16(f + OFF_ETHERTYPE) == ETHERTYPE_IPV4) return Parsed::MALFORMED;
    plain(pkt, n, mac_pair_hash(f));
    return Parsed::PACKET;
  }
  const uint8_t vihl = f[OFF_IP_VER_IHL];
  if (u16(f + OFF_ETHERTYPE) != ETHERTYPE_IPV4 || vihl >> 4 != 4) {
    plain(pkt, n, mac_pair_hash(f));
    return Parsed::PACKET;
  }
  const size_t ihl = size_t(vihl & 15) * 4, total = u16(f + OFF_IP_TOTAL_LEN);
  if (ihl < 20 || total < ihl || ETH_LEN + total > n) return Parsed::MALFORMED;
  const uint8_t tos = f[OFF_IP_TOS];
  const uint8_t prio = uint8_t(7 - (tos >> 5));
  const bool ect = (tos & 3) != 0, ce = (tos & 3) == 3;
  const uint8_t proto = f[OFF_IP_PROTO];
  const int64_t src = u32(f + OFF_IP_SRC), dst = u32(f + OFF_IP_DST);
  if ((u16(f + OFF_IP_FRAG) & FRAG) == 0 && (proto == UDP || proto == TCP)) {
    int64_t sport = u16(f + OFF_UDP_SPORT), dport = u16(f + OFF_UDP_DPORT);  // TCP's sit there too
    if (vihl != 0x45) {  // IP options move the ports
      const size_t off = ETH_LEN + ihl;
      if (off + 4 > n) return Parsed::MALFORMED;
      sport = u16(f + off);
      dport = u16(f + off + 2);
    } else if (dport == dlcp_port && proto == UDP) {
      const uint8_t* h = f + DLCP_OFF;
      if (n < PAYLOAD_OFF) {
        if (n >= DLCP_OFF + 2 && u16(h + HDR_MAGIC) == wire::MAGIC) return Parsed::INVALID_DLCP;  // cut short
      } else if (u16(h + HDR_MAGIC) == wire::MAGIC) {
        transport::Header hdr;
        if (transport::unpack_header(h, n - DLCP_OFF, hdr) != transport::HeaderError::NONE)
          return Parsed::INVALID_DLCP;
        plain(pkt, n, python_tuple_hash({src, dst, proto, sport, dport}), hdr.priority, ect, ce);
        pkt.mag = hdr.mag_class;
        pkt.tclass = hdr.tclass;
        pkt.layer = static_cast<int32_t>(hdr.tensor_id >> TENSOR_LAYER_SHIFT);
        pkt.droppable = hdr.flags & FLAG_DROPPABLE;
        pkt.dlcp = true;
        pkt.job = hdr.job;
        if (hdr.type != wire::DATA) pkt.header_size = pkt.size;  // a control packet: never cut
        return Parsed::PACKET;
      }
    }
    plain(pkt, n, python_tuple_hash({src, dst, proto, sport, dport}), prio, ect, ce);
    return Parsed::PACKET;
  }
  plain(pkt, n, python_tuple_hash({src, dst, proto}), prio, ect, ce);
  return Parsed::PACKET;
}

bool trim_frame(std::vector<uint8_t>& f) {
  const size_t size = f.size();
  if (size < size_t(FRAME_OVERHEAD)) return false;
  if (u16(&f[OFF_ETHERTYPE]) != ETHERTYPE_IPV4 || f[OFF_IP_VER_IHL] != 0x45 || f[OFF_IP_PROTO] != UDP) return false;
  const uint8_t* h = &f[DLCP_OFF];
  if (u16(h + HDR_MAGIC) != wire::MAGIC || h[HDR_VERSION] != wire::VERSION) return false;
  const uint32_t total_len = u16(&f[OFF_IP_TOTAL_LEN]), udp_len = u16(&f[OFF_UDP_LEN]);
  const uint32_t payload_len = u16(h + HDR_PAYLOAD_LEN);
  if (ETH_LEN + total_len > size || udp_len + IPV4_LEN != total_len || udp_len < UDP_LEN + HEADER_LEN) return false;
  const uint32_t carried = udp_len - UDP_LEN - HEADER_LEN;
  const uint8_t flags = h[HDR_FLAGS];
  if (flags & FLAG_TRIMMED) {
    if (carried) return false;
    f.resize(PAYLOAD_OFF);
    return true;
  }
  if (payload_len != carried) return false;
  const uint32_t new_total = IPV4_LEN + UDP_LEN + HEADER_LEN, new_udp = UDP_LEN + HEADER_LEN;
  const uint64_t payload_words = word_sum(&f[PAYLOAD_OFF], ETH_LEN + total_len - PAYLOAD_OFF);
  put16(&f[OFF_IP_TOTAL_LEN], new_total);
  put16(&f[OFF_UDP_LEN], new_udp);
  f[DLCP_OFF + HDR_FLAGS] = flags | FLAG_TRIMMED;
  put16(&f[OFF_IP_CHECKSUM], update(u16(&f[OFF_IP_CHECKSUM]), total_len, new_total));
  const uint32_t udp_sum = u16(&f[OFF_UDP_CHECKSUM]);
  if (udp_sum) {  // 0: the sender sent none; keep it that way
    const uint32_t prio = f[DLCP_OFF + HDR_PRIORITY];
    // UDP length counts twice (pseudo-header and header); flags share a word with priority;
    // the payload's words leave the sum.
    const uint64_t old_sum = 2 * uint64_t(udp_len) + (uint32_t(flags) << 8 | prio) + fold(payload_words);
    const uint64_t new_sum = 2 * uint64_t(new_udp) + (uint32_t(flags | FLAG_TRIMMED) << 8 | prio);
    const uint32_t sum = update(udp_sum, old_sum, new_sum);
    put16(&f[OFF_UDP_CHECKSUM], sum ? sum : 0xFFFF);
  }
  f.resize(PAYLOAD_OFF);
  return true;
}

bool mark_ce(std::vector<uint8_t>& f) {
  if (f.size() < IP_MIN || u16(&f[OFF_ETHERTYPE]) != ETHERTYPE_IPV4) return false;
  const uint8_t vihl = f[OFF_IP_VER_IHL];
  if (vihl >> 4 != 4) return false;
  const uint8_t tos = f[OFF_IP_TOS];
  const uint8_t ecn = tos & 3;
  if (ecn == 0) return false;
  if (ecn == 3) return true;
  f[OFF_IP_TOS] = tos | 3;
  put16(&f[OFF_IP_CHECKSUM], update(u16(&f[OFF_IP_CHECKSUM]), uint32_t(vihl) << 8 | tos, uint32_t(vihl) << 8 | tos | 3));
  return true;
}

}  // namespace dlcp
