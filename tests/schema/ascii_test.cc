// Tests for schema/ascii.h: character classes and case mapping touch ASCII letters only.
#include "schema/ascii.h"

#include <doctest/doctest.h>

#include <string>
#include <string_view>

namespace numadir::schema {
namespace {

TEST_CASE("Ascii: classes and case mapping cover exactly the bytes they name") {
  for (int byte = 0; byte < 256; ++byte) {
    CAPTURE(byte);
    const char c = static_cast<char>(byte);
    const bool upper = byte >= 'A' && byte <= 'Z';
    const bool lower = byte >= 'a' && byte <= 'z';
    const bool digit = byte >= '0' && byte <= '9';
    CHECK(is_ascii_alpha(c) == (upper || lower));
    CHECK(is_ascii_digit(c) == digit);
    CHECK(is_keychar(c) == (upper || lower || digit || byte == '-'));
    CHECK(ascii_lower(c) == (upper ? static_cast<char>(byte - 'A' + 'a') : c));
    CHECK(ascii_upper(c) == (lower ? static_cast<char>(byte - 'a' + 'A') : c));
    const bool hex = digit || (byte >= 'a' && byte <= 'f') || (byte >= 'A' && byte <= 'F');
    CHECK((ascii_hex_value(c) >= 0) == hex);
    CHECK(is_ascii(std::string_view(&c, 1)) == (byte < 0x80));
  }
  CHECK(ascii_hex_value('0') == 0);
  CHECK(ascii_hex_value('9') == 9);
  CHECK(ascii_hex_value('a') == 10);
  CHECK(ascii_hex_value('F') == 15);
  static_assert(ascii_lower('Q') == 'q' && ascii_upper('q') == 'Q' && is_keychar('-'));
}

TEST_CASE("Ascii: ascii_iequals folds ASCII letters and nothing else") {
  CHECK(ascii_iequals("", ""));
  CHECK(ascii_iequals("objectClass", "OBJECTCLASS"));
  CHECK(ascii_iequals("cn;Lang-EN", "CN;lang-en"));
  CHECK_FALSE(ascii_iequals("cn", "cn "));
  CHECK_FALSE(ascii_iequals("cn", "sn"));
  CHECK_FALSE(ascii_iequals("@", "`"));  // 0x40 and 0x60 differ by the case bit, not letters.
  CHECK_FALSE(ascii_iequals("[", "{"));
  CHECK_FALSE(ascii_iequals("\xc3\x89", "\xc3\xa9"));  // É and é: UTF-8 is not folded.
  static_assert(ascii_iequals("Top", "tOP"));
}

TEST_CASE("Ascii: ascii_lowered and ascii_lower_in_place change letters only") {
  CHECK(ascii_lowered("") == "");
  CHECK(ascii_lowered("uid=JDoe,DC=Example") == "uid=jdoe,dc=example");
  CHECK(ascii_lowered("\xc3\x89Z@[") == "\xc3\x89z@[");
  std::string text = "GivenName;X-Option";
  text.reserve(64);
  const std::size_t capacity = text.capacity();
  ascii_lower_in_place(text);
  CHECK(text == "givenname;x-option");
  CHECK(text.capacity() == capacity);
  CHECK(is_ascii(""));
  CHECK(is_ascii("plain text ~"));
  CHECK_FALSE(is_ascii("caf\xc3\xa9"));
}

}  // namespace
}  // namespace numadir::schema
