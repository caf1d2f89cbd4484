#include "listener/wire/ber_reader.h"

namespace numadir::listener::wire {

bool BerReader::fail_at(std::size_t pos, const char* what) {
  if (!error_->failed()) {
    error_->what = what;
    error_->offset = base_offset_ + pos;
  }
  return false;
}

bool BerReader::next_long(std::uint8_t& tag, std::string_view& content, std::size_t& content_pos) {
  if (error_->failed()) {
    return false;
  }
  std::size_t pos = pos_;
  if (pos >= data_.size()) {
    return fail_at(pos, "element expected, end of data found");
  }
  tag = static_cast<std::uint8_t>(data_[pos++]);
  if ((tag & 0x1f) == 0x1f) {
    return fail_at(pos - 1, "multi-octet tag (not used by LDAP)");
  }
  if (pos >= data_.size()) {
    return fail_at(pos, "length expected, end of data found");
  }
  const auto first = static_cast<std::uint8_t>(data_[pos++]);
  std::size_t length = first;
  if (first == 0x80) {
    return fail_at(pos - 1, "indefinite length (LDAP allows only definite lengths)");
  }
  if (first > 0x80) {
    const std::size_t count = first & 0x7f;
    if (count > 4) {
      return fail_at(pos - 1, "length of more than 4 octets");
    }
    if (data_.size() - pos < count) {
      return fail_at(pos - 1, "length octets past the end of data");
    }
    length = 0;
    for (std::size_t i = 0; i < count; ++i) {
      length = (length << 8) | static_cast<std::uint8_t>(data_[pos++]);
    }
  }
  if (data_.size() - pos < length) {
    return fail_at(pos_, "length past the end of the enclosing element");
  }
  content = data_.substr(pos, length);
  content_pos = pos;
  pos_ = pos + length;
  return true;
}

bool BerReader::integer_content(std::string_view content, std::size_t content_pos, std::int64_t min,
                                std::int64_t max, std::int64_t& value) {
  if (content.empty()) {
    return fail_at(content_pos, "empty integer");
  }
  if (content.size() > 8) {
    return fail_at(content_pos, "integer too large");
  }
  const auto b0 = static_cast<std::uint8_t>(content[0]);
  if (content.size() > 1) {
    const auto b1 = static_cast<std::uint8_t>(content[1]);
    // X.690 §8.3.2: the first nine bits must not be all zeros or all ones.
    if ((b0 == 0x00 && (b1 & 0x80) == 0) || (b0 == 0xff && (b1 & 0x80) != 0)) {
      return fail_at(content_pos, "integer not minimally encoded");
    }
  }
  // Two's complement, sign-extended from the first octet.
  std::uint64_t bits = (b0 & 0x80) ? ~std::uint64_t{0} : 0;
  for (char c : content) {
    bits = (bits << 8) | static_cast<std::uint8_t>(c);
  }
  const auto parsed = static_cast<std::int64_t>(bits);
  if (parsed < min || parsed > max) {
    return fail_at(content_pos, parsed < 0 && min >= 0 ? "negative integer not allowed here"
                                                       : "integer out of range");
  }
  value = parsed;
  return true;
}

bool BerReader::read_null(std::uint8_t tag) {
  std::string_view content;
  std::size_t content_pos = 0;
  if (!next_with_tag(tag, content, content_pos)) {
    return false;
  }
  if (!content.empty()) {
    return fail_at(content_pos, "NULL with content");
  }
  return true;
}

}  // namespace numadir::listener::wire
