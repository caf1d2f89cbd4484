// listener/wire/ber_reader.h: a BER reader over views into a caller's buffer (RFC 4511 §5.1:
// definite lengths only, primitive OCTET STRINGs, BOOLEAN TRUE as 0xFF).
//
// A BerReader walks the elements of one constructed value (or of a whole PDU). Values come back
// as std::string_view into the caller's buffer: nothing is copied, and the views live as long as
// that buffer. Nested readers share one BerError so the first failure anywhere is kept with its
// byte offset from the start of the PDU. Depth is bounded: entering a constructed element past
// the reader's depth budget fails instead of recursing further.
//
// Thread contract: a BerReader and its BerError belong to the thread decoding the PDU; the
// buffer must not change while they are in use.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace numadir::listener::wire {

// Identifier octets of the universal types LDAP uses, and builders for tagged ones.
namespace ber {
inline constexpr std::uint8_t kBoolean = 0x01;
inline constexpr std::uint8_t kInteger = 0x02;
inline constexpr std::uint8_t kOctetString = 0x04;
inline constexpr std::uint8_t kNull = 0x05;
inline constexpr std::uint8_t kEnumerated = 0x0a;
inline constexpr std::uint8_t kSequence = 0x30;
inline constexpr std::uint8_t kSet = 0x31;

inline constexpr std::uint8_t kConstructed = 0x20;
constexpr std::uint8_t application(std::uint8_t number) { return 0x40 | number; }
constexpr std::uint8_t application_constructed(std::uint8_t number) {
  return 0x40 | kConstructed | number;
}
constexpr std::uint8_t context(std::uint8_t number) { return 0x80 | number; }
constexpr std::uint8_t context_constructed(std::uint8_t number) {
  return 0x80 | kConstructed | number;
}
}  // namespace ber

// The first decoding failure of a PDU. `what` is a static string.
struct BerError {
  const char* what = nullptr;
  std::size_t offset = 0;  // Bytes from the start of the PDU.

  bool failed() const { return what != nullptr; }
};

class BerReader {
 public:
  // A reader over `data`, the content of an element that starts `base_offset` bytes into the
  // PDU. `depth_budget` is how many more constructed levels may be entered.
  BerReader(std::string_view data, BerError& error, std::uint32_t depth_budget,
            std::size_t base_offset = 0)
      : data_(data), error_(&error), depth_budget_(depth_budget), base_offset_(base_offset) {}

  bool at_end() const { return pos_ == data_.size(); }
  bool failed() const { return error_->failed(); }

  // Returns: true and the next identifier octet, without consuming it; false at the end.
  bool peek_tag(std::uint8_t& tag) const {
    if (at_end()) {
      return false;
    }
    tag = static_cast<std::uint8_t>(data_[pos_]);
    return true;
  }

  // Each reader below consumes one element whose identifier must be `tag`. On any failure
  // (wrong tag, bad length, bad content) it records the first error and returns false; the
  // reader must then be abandoned.

  // The element's content octets.
  [[gnu::always_inline]] bool read_octets(std::uint8_t tag, std::string_view& value) {
    std::size_t content_pos = 0;
    return next_with_tag(tag, value, content_pos);
  }
  // A minimally encoded INTEGER or ENUMERATED within [min, max].
  [[gnu::always_inline]] bool read_integer(std::uint8_t tag, std::int64_t min, std::int64_t max,
                                           std::int64_t& value) {
    std::string_view content;
    std::size_t content_pos = 0;
    if (!next_with_tag(tag, content, content_pos)) [[unlikely]] {
      return false;
    }
    if (content.size() == 1) [[likely]] {  // Message IDs, result codes, enumerations.
      const auto parsed = static_cast<std::int64_t>(static_cast<std::int8_t>(content[0]));
      if (parsed >= min && parsed <= max) [[likely]] {
        value = parsed;
        return true;
      }
    }
    return integer_content(content, content_pos, min, max, value);
  }
  [[gnu::always_inline]] bool read_int32(std::uint8_t tag, std::int32_t min, std::int32_t max,
                                         std::int32_t& value) {
    std::int64_t wide = 0;
    if (!read_integer(tag, min, max, wide)) {
      return false;
    }
    value = static_cast<std::int32_t>(wide);
    return true;
  }
  // A one-octet BOOLEAN: 0x00 or 0xFF.
  [[gnu::always_inline]] bool read_boolean(std::uint8_t tag, bool& value) {
    std::string_view content;
    std::size_t content_pos = 0;
    if (!next_with_tag(tag, content, content_pos)) [[unlikely]] {
      return false;
    }
    const auto b = content.size() == 1 ? static_cast<std::uint8_t>(content[0]) : 0x01;
    if (b != 0x00 && b != 0xff) [[unlikely]] {
      return fail_at(content_pos, content.size() != 1
                                      ? "boolean of length other than 1"
                                      : "boolean TRUE not encoded as 0xFF (RFC 4511 5.1)");
    }
    value = b == 0xff;
    return true;
  }
  // A NULL: empty content.
  bool read_null(std::uint8_t tag);
  // A constructed element. Returns: a reader over its content with one less level of depth
  // budget, sharing this reader's BerError; on failure, an empty reader (check failed()).
  [[gnu::always_inline]] BerReader enter(std::uint8_t tag) {
    std::string_view content;
    std::size_t content_pos = 0;
    const std::size_t start = pos_;
    if (!next_with_tag(tag, content, content_pos)) [[unlikely]] {
      return BerReader(std::string_view{}, *error_, 0, base_offset_ + start);
    }
    if (depth_budget_ == 0) [[unlikely]] {
      fail_at(start, "nesting too deep");
      return BerReader(std::string_view{}, *error_, 0, base_offset_ + start);
    }
    return BerReader(content, *error_, depth_budget_ - 1, base_offset_ + content_pos);
  }
  // Any element: its identifier and content.
  bool read_any(std::uint8_t& tag, std::string_view& value) {
    std::size_t content_pos = 0;
    return next(tag, value, content_pos);
  }

  // Fails unless every byte has been consumed.
  bool expect_end() {
    if (error_->failed()) [[unlikely]] {
      return false;
    }
    if (!at_end()) [[unlikely]] {
      return fail("unexpected data after the last element");
    }
    return true;
  }

  // Records `what` at the current position (if no error is recorded yet). Returns false.
  bool fail(const char* what) { return fail_at(pos_, what); }

 private:
  // Records the first error; cold. Returns false.
  bool fail_at(std::size_t pos, const char* what);
  // Decodes and range-checks integer content of any size; the slow path of read_integer().
  bool integer_content(std::string_view content, std::size_t content_pos, std::int64_t min,
                       std::int64_t max, std::int64_t& value);
  // Parses a long-form length or reports why it cannot; cold on the auth path.
  bool next_long(std::uint8_t& tag, std::string_view& content, std::size_t& content_pos);

  // Parses the identifier and length at pos_; on success `content` is the content octets, and
  // pos_ moves past the element. The short-form case is inline; the rest goes to next_long().
  [[gnu::always_inline]] bool next(std::uint8_t& tag, std::string_view& content,
                                   std::size_t& content_pos) {
    const std::size_t pos = pos_;
    // Failures are sticky: after one, every read of every reader of the PDU fails.
    if (data_.size() - pos >= 2 && !error_->failed()) [[likely]] {
      tag = static_cast<std::uint8_t>(data_[pos]);
      const auto length = static_cast<std::uint8_t>(data_[pos + 1]);
      if ((tag & 0x1f) != 0x1f && length < 0x80 && data_.size() - pos - 2 >= length) [[likely]] {
        content = std::string_view(data_.data() + pos + 2, length);  // Bounds checked above.
        content_pos = pos + 2;
        pos_ = pos + 2 + length;
        return true;
      }
    }
    return next_long(tag, content, content_pos);
  }
  [[gnu::always_inline]] bool next_with_tag(std::uint8_t tag, std::string_view& content,
                                            std::size_t& content_pos) {
    // Fast path: the expected identifier (never a multi-octet tag) and a short-form length.
    const std::size_t pos = pos_;
    if (data_.size() - pos >= 2 && static_cast<std::uint8_t>(data_[pos]) == tag &&
        !error_->failed()) [[likely]] {
      const auto length = static_cast<std::uint8_t>(data_[pos + 1]);
      if (length < 0x80 && data_.size() - pos - 2 >= length) [[likely]] {
        content = std::string_view(data_.data() + pos + 2, length);  // Bounds checked above.
        content_pos = pos + 2;
        pos_ = pos + 2 + length;
        return true;
      }
    }
    std::uint8_t actual = 0;
    if (!next(actual, content, content_pos)) [[unlikely]] {
      return false;
    }
    if (actual != tag) [[unlikely]] {
      pos_ = pos;
      return fail_at(pos, "unexpected tag");
    }
    return true;
  }

  std::string_view data_;
  BerError* error_;
  std::uint32_t depth_budget_;
  std::size_t base_offset_;
  std::size_t pos_ = 0;
};

}  // namespace numadir::listener::wire
