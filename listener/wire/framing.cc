#include "listener/wire/framing.h"

#include <cstdint>

#include "listener/wire/ber_reader.h"

namespace numadir::listener::wire {

Frame frame_pdu(std::string_view buffer, std::size_t max_pdu_bytes) {
  Frame frame;
  // Garbage is refused from its first byte, without waiting for more.
  if (!buffer.empty() && static_cast<std::uint8_t>(buffer[0]) != ber::kSequence) {
    frame.state = FrameState::kMalformed;
    frame.error = "PDU does not start with a SEQUENCE tag";
    return frame;
  }
  if (buffer.size() < 2) {
    frame.state = FrameState::kNeedMore;
    frame.need_bytes = 2 - buffer.size();
    return frame;
  }
  const auto first = static_cast<std::uint8_t>(buffer[1]);
  std::size_t header = 2;
  std::size_t length = first;
  if (first == 0x80) {
    frame.state = FrameState::kMalformed;
    frame.error = "indefinite length (LDAP allows only definite lengths)";
    return frame;
  }
  if (first > 0x80) {
    const std::size_t count = first & 0x7f;
    if (count > 4) {
      frame.state = FrameState::kMalformed;
      frame.error = "length of more than 4 octets";
      return frame;
    }
    header += count;
    if (buffer.size() < header) {
      frame.state = FrameState::kNeedMore;
      frame.need_bytes = header - buffer.size();
      return frame;
    }
    length = 0;
    for (std::size_t i = 0; i < count; ++i) {
      length = (length << 8) | static_cast<std::uint8_t>(buffer[2 + i]);
    }
  }
  const std::size_t total = header + length;
  if (total > max_pdu_bytes) {
    frame.state = FrameState::kTooLarge;
    frame.pdu_bytes = total;
    frame.error = "PDU larger than the maximum PDU size";
    return frame;
  }
  if (buffer.size() < total) {
    frame.state = FrameState::kNeedMore;
    frame.need_bytes = total - buffer.size();
    return frame;
  }
  frame.state = FrameState::kComplete;
  frame.pdu_bytes = total;
  return frame;
}

}  // namespace numadir::listener::wire
