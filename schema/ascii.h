// schema/ascii.h: ASCII character classes and case mapping, as LDAP uses them: attribute
// descriptions, OIDs' names, keywords and DN attribute types compare case-insensitively in
// ASCII only (RFC 4512 §2.5, RFC 4514 §2.3), whatever the C locale says. Bytes outside 'A'-'Z'
// are left as they are, so UTF-8 passes through untouched.
//
// Every folder that may include schema/ uses these; threadpool/ and base/ may not (DESIGN.md's
// arrows) and need none today.
//
// Thread contract: stateless constexpr functions over caller-owned bytes; any thread.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace numadir::schema {

// RFC 4512 ALPHA: 'A'-'Z' and 'a'-'z'.
constexpr bool is_ascii_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// RFC 4512 DIGIT: '0'-'9'.
constexpr bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }

// RFC 4512 keychar: ALPHA / DIGIT / HYPHEN.
constexpr bool is_keychar(char c) { return is_ascii_alpha(c) || is_ascii_digit(c) || c == '-'; }

// Returns: the value (0-15) of hex digit `c` in either case, or -1 if `c` is not one.
constexpr int ascii_hex_value(char c) {
  if (is_ascii_digit(c)) {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

// Returns: whether every byte of `text` is ASCII (below 0x80). The empty string is.
constexpr bool is_ascii(std::string_view text) {
  unsigned char any = 0;
  for (char c : text) {
    any |= static_cast<unsigned char>(c);  // No early exit: the loop vectorizes.
  }
  return any < 0x80;
}

// Returns: `c` with 'A'-'Z' mapped to 'a'-'z'; every other byte as it is.
constexpr char ascii_lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c;
}

// Returns: `c` with 'a'-'z' mapped to 'A'-'Z'; every other byte as it is.
constexpr char ascii_upper(char c) {
  return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c;
}

// Applies ascii_lower to each byte of `text`, in place (keeping the string's capacity).
constexpr void ascii_lower_in_place(std::string& text) {
  for (char& c : text) {
    c = ascii_lower(c);
  }
}

// Returns: a copy of `text` with ascii_lower applied to each byte.
inline std::string ascii_lowered(std::string_view text) {
  std::string out(text);
  ascii_lower_in_place(out);
  return out;
}

// Returns: whether `a` and `b` are equal once ascii_lower is applied to both.
constexpr bool ascii_iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  if (a == b) {  // The usual case when names match, and a fast one.
    return true;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ascii_lower(a[i]) != ascii_lower(b[i])) {
      return false;
    }
  }
  return true;
}

}  // namespace numadir::schema
