// What the receiver sends (dlcp_emu/transport/receiver.py `_feedback` and the pull pacer's
// releases): its one ACK a data packet, written without a heap block, every other answer,
// and the PULLs.
#include "transport/transport_receiver.hpp"

#include "transport/transport_feedback.hpp"

namespace dlcp::transport {

namespace fb = feedback;

namespace {

constexpr uint8_t CONTROL_PRIORITY = 0;  // feedback is small and drives every sender's clock
constexpr uint8_t CONTROL_MAG = 7;

}  // namespace

// A PULL, if the pacer has one due (an ACK with FB_PULL: a pull number alone).
void Receiver::release_pull(int64_t now) {
  const std::optional<PullSource> src = pacer_->release(now);
  if (!src) return;
  const PullHeader& ph = pacer_->header(*src);
  std::vector<uint8_t> payload = fb::encode_ack(0, 0, fb::FB_PULL, nullptr, 0, pacer_->released(*src));
  OutPacket& p = out_.emplace_back();
  p.h = {ACK, 0, CONTROL_PRIORITY, CONTROL_MAG, src->job, rank, src->src, uint16_t(payload.size()), ph.iteration,
         ph.tensor_id, ph.chunk_index, ph.chunk_count, 0, now, ph.tclass};
  p.control = std::move(payload);
}

void Receiver::ack(const Header& h, int64_t now, uint32_t cum, uint8_t fb_flags, const uint32_t* extra,
                   size_t n_extra) {
  uint8_t payload[fb::ACK_MAX_SIZE];
  const size_t n = fb::encode_ack_into(payload, uint64_t(h.send_ts_ns), cum, fb_flags, extra, n_extra);
  feedback(h, now, payload, n, ACK);
}

void Receiver::feedback(const Header& h, int64_t now, std::vector<uint8_t> payload, uint8_t type, int64_t chunk) {
  feedback(h, now, payload.data(), payload.size(), type, chunk);
}

void Receiver::feedback(const Header& h, int64_t now, uint8_t* payload, size_t n, uint8_t type, int64_t chunk) {
  if (pacer_) {  // every answer carries the sender's latest pull number
    const uint16_t pull = pacer_->released({h.job, h.src_rank});
    payload[14] = uint8_t(pull >> 8);
    payload[15] = uint8_t(pull);
  }
  OutPacket& p = out_.emplace_back();
  p.h = {type, 0, CONTROL_PRIORITY, CONTROL_MAG, h.job, rank, h.src_rank, uint16_t(n), h.iteration,
         h.tensor_id, chunk < 0 ? h.chunk_index : uint32_t(chunk), h.chunk_count, 0, now, h.tclass};
  p.control.assign(payload, n);
}

}  // namespace dlcp::transport
