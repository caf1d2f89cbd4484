// listener/input_stamps.cc: see input_stamps.h.
#include "listener/input_stamps.h"

#include "threadpool/thread_counters.h"

namespace numadir::listener {

void InputStamps::after_read(std::size_t input_bytes, std::int64_t& round_ns) {
  if (input_bytes <= stamped()) {
    return;  // Nothing new (a TLS record that carried no data).
  }
  if (round_ns == 0) {
    round_ns = static_cast<std::int64_t>(threadpool::steady_ns());
  }
  if (count_ == kStamps) {
    // The two oldest merge under the older time (see kStamps).
    stamps_[0].end = stamps_[1].end;
    stamps_[1] = stamps_[2];
    --count_;
  }
  stamps_[count_] = Stamp{input_bytes, round_ns};
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
