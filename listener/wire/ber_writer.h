// listener/wire/ber_writer.h: a BER writer into a reusable buffer, producing the encoding
// OpenLDAP's liblber does in DER mode: minimal definite lengths, minimal integers, BOOLEAN TRUE
// as 0xFF.
//
// Constructed elements are written with begin()/end(): begin() leaves one length octet, end()
// fills it in, moving the content up when the length needs the long form. clear() keeps the
// buffer's capacity, so a writer reused for message after message stops allocating once it has
// seen its largest message. The small writers are inline: they are the encoder's inner loop.
//
// Thread contract: owned by one thread (a worker encoding a response, a client building a
// request). view() is valid until the next call that writes or clears.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

#include "base/check.h"

namespace numadir::listener::wire {

class BerWriter {
 public:
  // Most nested constructed elements open at once. LDAP messages nest a handful of levels; a
  // filter adds one per and/or/not, and decoded filters are bounded by the decoder's depth.
  static constexpr std::size_t kMaxDepth = 128;

  BerWriter() = default;
  BerWriter(const BerWriter&) = delete;
  BerWriter& operator=(const BerWriter&) = delete;

  // Drops the bytes written, keeping capacity. Requires: no open constructed element.
  void clear() {
    NUMADIR_DCHECK(depth_ == 0, "BerWriter::clear with an open element");
    size_ = 0;
    depth_ = 0;
  }
  // Makes room for `bytes` bytes in total without further allocation.
  void reserve(std::size_t bytes) {
    if (bytes > capacity_) {
      grow(bytes - size_);
    }
  }

  // Returns: everything written so far. Requires (for a complete encoding): no open element.
  std::string_view view() const { return std::string_view(data_.get(), size_); }
  std::size_t size() const { return size_; }
  std::size_t capacity() const { return capacity_; }
  std::size_t open_depth() const { return depth_; }

  // Opens a constructed element with identifier `tag`. Requires: fewer than kMaxDepth open.
  void begin(std::uint8_t tag) {
    NUMADIR_CHECK(depth_ < kMaxDepth, "BerWriter: constructed elements nested too deep");
    char* out = room(2);
    out[0] = static_cast<char>(tag);
    out[1] = 0;  // Short-form length; end() widens it if needed.
    open_[depth_++] = size_ + 1;
    size_ += 2;
  }
  // Closes the innermost open element. Requires: one is open.
  void end() {
    NUMADIR_CHECK(depth_ > 0, "BerWriter::end without begin");
    const std::size_t length_at = open_[--depth_];
    const std::size_t length = size_ - length_at - 1;
    if (length < 0x80) [[likely]] {
      data_[length_at] = static_cast<char>(length);
      return;
    }
    widen_length(length_at, length);
  }

  void write_integer(std::uint8_t tag, std::int64_t value) {
    // Minimal two's complement: enough octets for the magnitude bits plus a sign bit.
    const auto magnitude = static_cast<std::uint64_t>(value < 0 ? ~value : value);
    const std::size_t count = (static_cast<std::size_t>(std::bit_width(magnitude)) + 8) / 8;
    char* out = room(2 + count);
    out[0] = static_cast<char>(tag);
    out[1] = static_cast<char>(count);
    const auto bits = static_cast<std::uint64_t>(value);
    for (std::size_t i = 0; i < count; ++i) {
      out[2 + i] = static_cast<char>(bits >> (8 * (count - 1 - i)));
    }
    size_ += 2 + count;
  }
  void write_boolean(std::uint8_t tag, bool value) {
    char* out = room(3);
    out[0] = static_cast<char>(tag);
    out[1] = 1;
    out[2] = value ? static_cast<char>(0xff) : '\0';
    size_ += 3;
  }
  void write_octets(std::uint8_t tag, std::string_view value) {
    char* out = room(10 + value.size());  // Tag, up to 9 length octets, content.
    out[0] = static_cast<char>(tag);
    const std::size_t header = 1 + put_length(out + 1, value.size());
    if (!value.empty()) {
      std::memcpy(out + header, value.data(), value.size());
    }
    size_ += header + value.size();
  }
  void write_null(std::uint8_t tag) {
    char* out = room(2);
    out[0] = static_cast<char>(tag);
    out[1] = 0;
    size_ += 2;
  }
  // Appends bytes that are already a complete BER encoding.
  void write_raw(std::string_view encoded) {
    char* out = room(encoded.size());
    if (!encoded.empty()) {
      std::memcpy(out, encoded.data(), encoded.size());
    }
    size_ += encoded.size();
  }

 private:
  // Returns: where the next `bytes` bytes go, growing the buffer if needed.
  char* room(std::size_t bytes) {
    if (capacity_ - size_ < bytes) [[unlikely]] {
      grow(bytes);
    }
    return data_.get() + size_;
  }
  // Writes the length octets of `length` at `out`. Returns: how many.
  static std::size_t put_length(char* out, std::size_t length) {
    if (length < 0x80) [[likely]] {
      out[0] = static_cast<char>(length);
      return 1;
    }
    const std::size_t count = (static_cast<std::size_t>(std::bit_width(length)) + 7) / 8;
    out[0] = static_cast<char>(0x80 | count);
    for (std::size_t i = 0; i < count; ++i) {
      out[count - i] = static_cast<char>(length >> (8 * i));
    }
    return 1 + count;
  }
  void grow(std::size_t bytes);
  void widen_length(std::size_t length_at, std::size_t length);

  std::unique_ptr<char[]> data_;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
  std::array<std::size_t, kMaxDepth> open_;  // Offset of each open element's length octet.
  std::size_t depth_ = 0;
};

}  // namespace numadir::listener::wire
