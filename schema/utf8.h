// schema/utf8.h: the one UTF-8 well-formedness rule of the project, RFC 3629 §4 (no overlong
// forms, no surrogates U+D800-DFFF, nothing above U+10FFFF, no five- or six-byte forms), in the
// shapes its callers need: a whole-string check, the offset of the first bad byte, the length of
// the sequence at the start of a string, and a byte-at-a-time checker for parsers that assemble
// a value from raw text and escapes. Every DN, filter, schema description, syntax, RFC 4518
// preparation and LDIF check goes through this file, so they all accept the same strings.
//
// Thread contract: stateless constexpr functions over caller-owned bytes; any thread. A
// Utf8Checker belongs to the thread using it.
#pragma once

#include <cstddef>
#include <string_view>

namespace numadir::schema {

// What a first byte starts (RFC 3629 §4's table): the sequence's length in bytes (0: the byte
// cannot start one) and the range of its second byte, which is what excludes overlong forms
// (E0, F0), surrogates (ED) and code points above U+10FFFF (F4). Bytes after the second are
// 0x80-0xBF.
struct Utf8Lead {
  std::size_t length = 0;
  unsigned char second_min = 0x80;
  unsigned char second_max = 0xBF;
};

// Returns: what `byte` starts; length 1 for ASCII, 0 for a continuation byte, C0, C1 or F5-FF.
constexpr Utf8Lead utf8_lead(unsigned char byte) {
  if (byte < 0x80) {
    return {1, 0x80, 0xBF};
  }
  if (byte >= 0xC2 && byte <= 0xDF) {
    return {2, 0x80, 0xBF};
  }
  if (byte == 0xE0) {
    return {3, 0xA0, 0xBF};
  }
  if (byte == 0xED) {
    return {3, 0x80, 0x9F};
  }
  if (byte >= 0xE1 && byte <= 0xEF) {
    return {3, 0x80, 0xBF};
  }
  if (byte == 0xF0) {
    return {4, 0x90, 0xBF};
  }
  if (byte >= 0xF1 && byte <= 0xF3) {
    return {4, 0x80, 0xBF};
  }
  if (byte == 0xF4) {
    return {4, 0x80, 0x8F};
  }
  return {0, 0x80, 0xBF};
}

// Returns: the length (1 to 4) of the well-formed UTF-8 sequence that starts `s`, or 0 if `s` is
//   empty or does not start with one (a truncated sequence is not one).
constexpr std::size_t utf8_sequence_length(std::string_view s) {
  if (s.empty()) {
    return 0;
  }
  const Utf8Lead lead = utf8_lead(static_cast<unsigned char>(s[0]));
  if (lead.length <= 1 || s.size() < lead.length) {
    return lead.length == 1 ? 1 : 0;
  }
  const auto second = static_cast<unsigned char>(s[1]);
  if (second < lead.second_min || second > lead.second_max) {
    return 0;
  }
  for (std::size_t k = 2; k < lead.length; ++k) {
    if ((static_cast<unsigned char>(s[k]) & 0xC0) != 0x80) {
      return 0;
    }
  }
  return lead.length;
}

// Returns: the offset of the first byte of `text` that does not belong to a well-formed UTF-8
//   sequence, or npos if `text` is well-formed (the empty string is).
constexpr std::size_t find_invalid_utf8(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {
      ++i;  // The common case, without the table.
      continue;
    }
    const std::size_t length = utf8_sequence_length(text.substr(i));
    if (length == 0) {
      return i;
    }
    i += length;
  }
  return std::string_view::npos;
}

// Returns: true if `text` is well-formed UTF-8. The empty string is.
constexpr bool is_valid_utf8(std::string_view text) {
  return find_invalid_utf8(text) == std::string_view::npos;
}

// Checks UTF-8 one byte at a time, for a parser whose value bytes come from raw text and
// escapes interleaved (RFC 4514 DNs), so that it can name the offset in its own input.
class Utf8Checker {
 public:
  // Returns: false if `byte` cannot continue a well-formed UTF-8 string; the checker is then
  //   in an unspecified state.
  constexpr bool feed(unsigned char byte) {
    if (remaining_ == 0) {
      const Utf8Lead lead = utf8_lead(byte);
      if (lead.length == 0) {
        return false;
      }
      remaining_ = lead.length - 1;
      min_ = lead.second_min;
      max_ = lead.second_max;
      return true;
    }
    if (byte < min_ || byte > max_) {
      return false;
    }
    --remaining_;
    min_ = 0x80;
    max_ = 0xBF;
    return true;
  }

  // Returns: true if no sequence is open (every byte fed so far is a whole sequence).
  constexpr bool complete() const { return remaining_ == 0; }

 private:
  std::size_t remaining_ = 0;  // Continuation bytes still expected.
  unsigned char min_ = 0x80;   // Range of the next one.
  unsigned char max_ = 0xBF;
};

}  // namespace numadir::schema
