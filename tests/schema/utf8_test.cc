// Tests for schema/utf8.h: RFC 3629 well-formedness in each of its shapes (whole string, first
// bad offset, sequence length, byte-at-a-time), which must all agree.
#include "schema/utf8.h"

#include <doctest/doctest.h>

#include <cstddef>
#include <random>
#include <string>
#include <string_view>

namespace numadir::schema {
namespace {

using namespace std::string_view_literals;

// Returns: whether feeding `text` byte by byte leaves a Utf8Checker content and complete.
bool checker_accepts(std::string_view text) {
  Utf8Checker checker;
  for (char c : text) {
    if (!checker.feed(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return checker.complete();
}

TEST_CASE("Utf8: find_invalid_utf8 names the first byte outside RFC 3629") {
  CHECK(find_invalid_utf8("") == std::string_view::npos);
  CHECK(find_invalid_utf8("plain ascii") == std::string_view::npos);
  CHECK(find_invalid_utf8("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf") ==
        std::string_view::npos);
  CHECK(find_invalid_utf8("ab\x80") == 2);                // A lone continuation byte.
  CHECK(find_invalid_utf8("\xc0\x80") == 0);              // Overlong NUL.
  CHECK(find_invalid_utf8("\xc1\xbf") == 0);              // Overlong two-byte form.
  CHECK(find_invalid_utf8("\xe0\x9f\xbf") == 0);          // Overlong three-byte form.
  CHECK(find_invalid_utf8("\xf0\x8f\xbf\xbf") == 0);      // Overlong four-byte form.
  CHECK(find_invalid_utf8("x\xed\xa0\x80") == 1);         // A surrogate (U+D800).
  CHECK(find_invalid_utf8("x\xed\xbf\xbf") == 1);         // A surrogate (U+DFFF).
  CHECK(find_invalid_utf8("\xf4\x90\x80\x80") == 0);      // Above U+10FFFF.
  CHECK(find_invalid_utf8("\xe2\x82") == 0);              // Truncated.
  CHECK(find_invalid_utf8("ok\xe2\x82z") == 2);           // Cut short by ASCII.
  CHECK(find_invalid_utf8("\xf8\x88\x80\x80\x80") == 0);  // Five-byte form.
  CHECK(find_invalid_utf8("\xff") == 0);
  CHECK(find_invalid_utf8("\xed\x9f\xbf\xee\x80\x80") == std::string_view::npos);  // Around.
}

TEST_CASE("Utf8: utf8_sequence_length measures the sequence at the start only") {
  CHECK(utf8_sequence_length("") == 0);
  CHECK(utf8_sequence_length("a\x80") == 1);
  CHECK(utf8_sequence_length("\xc3\xa9rest") == 2);
  CHECK(utf8_sequence_length("\xe2\x82\xac\x80") == 3);
  CHECK(utf8_sequence_length("\xf0\x9f\x98\x80") == 4);
  CHECK(utf8_sequence_length("\xe2\x82") == 0);
  CHECK(utf8_sequence_length("\xe0\x80\x80") == 0);
  CHECK(utf8_sequence_length("\x80") == 0);
  static_assert(utf8_sequence_length("\xc3\xa9") == 2);
  static_assert(is_valid_utf8("\xf4\x8f\xbf\xbf") && !is_valid_utf8("\xf4\x90\x80\x80"));
}

TEST_CASE("Utf8: Utf8Checker accepts exactly the well-formed strings") {
  CHECK(checker_accepts(""));
  CHECK(checker_accepts("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
  CHECK_FALSE(checker_accepts("\xc3"));  // Open at the end: not complete.
  CHECK_FALSE(checker_accepts("\xed\xa0\x80"));
  CHECK_FALSE(checker_accepts("\xf0\x80\x80\x80"));
  Utf8Checker checker;
  CHECK(checker.feed(0xe2));
  CHECK_FALSE(checker.complete());
  CHECK(checker.feed(0x82));
  CHECK(checker.feed(0xac));
  CHECK(checker.complete());
}

TEST_CASE("Utf8: every shape agrees on every string of up to two bytes and on random ones") {
  std::string text;
  for (int a = 0; a < 256; ++a) {
    for (int b = -1; b < 256; ++b) {
      text.assign(1, static_cast<char>(a));
      if (b >= 0) {
        text += static_cast<char>(b);
      }
      const bool valid = is_valid_utf8(text);
      CHECK(checker_accepts(text) == valid);
      CHECK((utf8_sequence_length(text) == text.size()) ==
            (valid && (text.size() == 1 || a >= 0x80)));
    }
  }
  const unsigned seed = 20240611;
  INFO("seed: ", seed);
  std::mt19937 random(seed);
  // Bytes around every boundary of RFC 3629's table, so that random strings hit them often.
  constexpr unsigned char kBytes[] = {0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf,
                                      0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xec, 0xed, 0xee,
                                      0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff};
  for (int round = 0; round < 20000; ++round) {
    text.clear();
    const std::size_t length = random() % 9;
    for (std::size_t i = 0; i < length; ++i) {
      text += static_cast<char>(kBytes[random() % std::size(kBytes)]);
    }
    const std::size_t bad = find_invalid_utf8(text);
    REQUIRE(checker_accepts(text) == (bad == std::string_view::npos));
    // Everything before the first bad byte is whole sequences, so it is valid on its own.
    CHECK(is_valid_utf8(std::string_view(text).substr(0, bad)));
    if (bad != std::string_view::npos) {
      CHECK(utf8_sequence_length(std::string_view(text).substr(bad)) == 0);
    }
  }
}

}  // namespace
}  // namespace numadir::schema
