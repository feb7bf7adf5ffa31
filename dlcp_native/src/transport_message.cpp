#include "transport_message.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "transport_packet.hpp"

namespace dlcp::transport {

int64_t chunk_payload_size(int64_t mtu) {
  if (mtu <= 0 || mtu > 0xFFFF)
    throw std::invalid_argument("mtu must be an integer in 1..65535, got " + std::to_string(mtu));
  const int64_t size = std::min(mtu - IPV4_LEN - UDP_LEN - HEADER_LEN, MAX_PAYLOAD) & ~int64_t{3};
  if (size < 4)
    throw std::invalid_argument("mtu " + std::to_string(mtu) + " leaves no room for one float32 after the " +
                                std::to_string(IPV4_LEN + UDP_LEN + HEADER_LEN) + " header bytes");
  return size;
}

int64_t transport_payload_size(int64_t mtu) {
  const int64_t size = chunk_payload_size(mtu);
  if (size < MIN_TRANSPORT_PAYLOAD)
    throw std::invalid_argument("mtu " + std::to_string(mtu) + " is too small for the transports: need at least " +
                                std::to_string(MIN_TRANSPORT_PAYLOAD + IPV4_LEN + UDP_LEN + HEADER_LEN));
  return size;
}

}  // namespace dlcp::transport
