// listener/input_stamps.cc: see input_stamps.h.
#include "listener/input_stamps.h"

#include "listener/wire/framing.h"
#include "threadpool/thread_counters.h"

namespace numadir::listener {

void InputStamps::after_read(std::string_view input, std::size_t max_pdu_bytes,
                             std::int64_t& round_ns) {
  std::size_t end = scanned();
  // Stops without a look at an empty rest: the common read ends on a PDU's last byte.
  while (end < input.size()) {
    const wire::Frame frame = wire::frame_pdu(input.substr(end), max_pdu_bytes);
    if (frame.state != wire::FrameState::kComplete) {
      break;
    }
    end += frame.pdu_bytes;
  }
  if (end == scanned()) {
    return;  // This read completed no PDU: no clock read.
  }
  if (round_ns == 0) {
    round_ns = static_cast<std::int64_t>(threadpool::steady_ns());
  }
  if (count_ == kStamps) {
    stamps_[count_ - 1].end = end;  // Shares the last stamp (see kStamps).
    return;
  }
  stamps_[count_] = Stamp{end, round_ns};
  ++count_;
}

std::int64_t InputStamps::stamp_of(std::size_t end) const {
  for (std::size_t i = 0; i < count_; ++i) {
    if (end <= stamps_[i].end) {
      return stamps_[i].ns;
    }
  }
  return 0;
}

void InputStamps::consumed(std::size_t bytes) {
  std::size_t kept = 0;
  for (std::size_t i = 0; i < count_; ++i) {
    if (stamps_[i].end > bytes) {
      stamps_[kept++] = Stamp{stamps_[i].end - bytes, stamps_[i].ns};
    }
  }
  count_ = static_cast<std::uint8_t>(kept);
}

}  // namespace numadir::listener
