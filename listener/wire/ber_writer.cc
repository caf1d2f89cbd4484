#include "listener/wire/ber_writer.h"

#include <algorithm>

namespace numadir::listener::wire {

void BerWriter::grow(std::size_t bytes) {
  const std::size_t capacity = std::max({capacity_ * 2, size_ + bytes, std::size_t{256}});
  auto data = std::make_unique<char[]>(capacity);
  if (size_ != 0) {
    std::memcpy(data.get(), data_.get(), size_);
  }
  data_ = std::move(data);
  capacity_ = capacity;
}

void BerWriter::widen_length(std::size_t length_at, std::size_t length) {
  // Content over 127 bytes: make room for the long form and move the content up.
  const std::size_t count = (static_cast<std::size_t>(std::bit_width(length)) + 7) / 8;
  room(count);
  char* content = data_.get() + length_at + 1;
  std::memmove(content + count, content, length);
  size_ += count;
  put_length(data_.get() + length_at, length);
}

}  // namespace numadir::listener::wire
