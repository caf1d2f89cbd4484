// Tests for schema/string_prep.h: RFC 4518 mapping, normalization, prohibition and insignificant
// character handling, on the ASCII fast path and the ICU path.
#include "schema/string_prep.h"

#include <doctest/doctest.h>

#include <random>
#include <string>
#include <string_view>

#include "schema/utf8.h"

namespace numadir::schema {
namespace {

using namespace std::string_view_literals;

constexpr std::string_view kInvalid = "<invalid>";

std::string prep(std::string_view in, PrepOptions options) {
  std::string out = "garbage";  // prepare() must replace, not append.
  if (!prepare(in, options, out)) {
    return std::string(kInvalid);
  }
  return out;
}

std::string fold(std::string_view in) { return prep(in, {true}); }
std::string exact(std::string_view in) { return prep(in, {false}); }
std::string piece(std::string_view in, PrepTarget target) {
  return prep(in, {true, PrepInsignificant::kSpace, target});
}

TEST_CASE("StringPrep: ASCII is folded only when asked") {
  CHECK(fold("User4711") == "user4711");
  CHECK(exact("User4711") == "User4711");
  CHECK(fold("ABC xyz 09 !~") == "abc xyz 09 !~");
  CHECK(fold("") == " ");
}

TEST_CASE("StringPrep: insignificant spaces in the equality form") {
  SUBCASE("leading and trailing spaces are removed") {
    CHECK(fold("  foo  ") == "foo");
    CHECK(exact(" Foo") == "Foo");
  }
  SUBCASE("inner runs collapse to one space") {
    CHECK(fold("foo   bar  baz") == "foo bar baz");
    CHECK(fold("foo bar") == fold("  foo    bar "));
  }
  SUBCASE("a value of only spaces (or empty) is one space") {
    CHECK(fold("    ") == " ");
    CHECK(fold(" ") == " ");
    CHECK(fold("") == " ");
    CHECK(fold("\t\n") == " ");
  }
  SUBCASE("the same on the ICU path") {
    CHECK(fold("  Grüße   aus\u00A0\u00A0Köln ") == "grüsse aus köln");
    CHECK(fold("\u3000\u2003") == " ");
  }
}

TEST_CASE("StringPrep: the substring value form is RFC 4518's") {
  const PrepTarget v = PrepTarget::kSubstringValue;
  CHECK(piece("foo bar  ", v) == " foo  bar ");
  CHECK(piece("  foo", v) == " foo ");
  CHECK(piece("   ", v) == "  ");
  CHECK(piece("", v) == "  ");
  CHECK(piece("Ärger  im Büro", v) == " ärger  im  büro ");
}

TEST_CASE("StringPrep: substring pieces keep the RFC 4518 edge spaces") {
  using enum PrepTarget;
  SUBCASE("initial pieces start with one space") {
    CHECK(piece("foo", kInitial) == " foo");
    CHECK(piece("   foo", kInitial) == " foo");
    CHECK(piece("foo  ", kInitial) == " foo ");
    CHECK(piece("foo bar  ", kInitial) == " foo  bar ");
  }
  SUBCASE("any pieces keep one space at an edge that had spaces") {
    CHECK(piece("foo", kAny) == "foo");
    CHECK(piece("  foo", kAny) == " foo");
    CHECK(piece("foo ", kAny) == "foo ");
    CHECK(piece(" o  b ", kAny) == " o  b ");
  }
  SUBCASE("final pieces end with one space") {
    CHECK(piece("bar", kFinal) == "bar ");
    CHECK(piece("bar   ", kFinal) == "bar ");
    CHECK(piece("  bar", kFinal) == " bar ");
    CHECK(piece("foo bar  ", kFinal) == "foo  bar ");
  }
  SUBCASE("a piece of only spaces is one space") {
    CHECK(piece("   ", kInitial) == " ");
    CHECK(piece(" ", kAny) == " ");
    CHECK(piece("\u00A0", kFinal) == " ");
  }
}

TEST_CASE("StringPrep: controls and separators map to space or to nothing") {
  CHECK(fold("a\tb\nc\rd\ve\ff") == "a b c d e f");
  CHECK(fold("a\x01\x1F\x7F"
             "b") == "ab");
  CHECK(fold("a\u0085b") == "a b");           // NEL
  CHECK(fold("a\u00A0b") == "a b");           // NO-BREAK SPACE
  CHECK(fold("a\u2028b\u2029c") == "a b c");  // LINE / PARAGRAPH SEPARATOR
  CHECK(fold("a\u3000b") == "a b");           // IDEOGRAPHIC SPACE
  CHECK(fold("a\u0080\u009Fb") == "ab");      // C1 controls
  CHECK(exact("a\u202Ab\u202E") == "ab");     // Bidi embedding controls
}

TEST_CASE("StringPrep: map-to-nothing characters vanish") {
  CHECK(fold("Soft\u00ADhyphen") == "softhyphen");
  CHECK(exact("zero\u200Bwidth") == "zerowidth");
  CHECK(exact("zw\u200Cn\u200Dj") == "zwnj");
  CHECK(exact("\uFEFFbom") == "bom");
  CHECK(exact("cgj\u034F") == "cgj");
  CHECK(exact("vs\uFE0F") == "vs");
  CHECK(exact("obj\uFFFC") == "obj");
  CHECK(exact("mongolian\u1806") == "mongolian");
  CHECK(exact("tag\U000E0041") == "tag");
  CHECK(fold("\u00AD") == " ");  // Nothing left: the empty value's form.
}

TEST_CASE("StringPrep: NFKC normalization") {
  CHECK(exact("\uFB01le") == "file");           // LATIN SMALL LIGATURE FI
  CHECK(exact("\uFF21\uFF22\uFF23") == "ABC");  // FULLWIDTH A B C
  CHECK(fold("\uFF21\uFF22\uFF23") == "abc");
  CHECK(exact("\u2460") == "1");        // CIRCLED DIGIT ONE
  CHECK(exact("e\u0301") == "\u00E9");  // composed
  CHECK(exact("\u212B") == "\u00C5");   // ANGSTROM SIGN
  CHECK(exact("x\u00B2") == "x2");      // SUPERSCRIPT TWO
  CHECK(fold("\u2160") == "i");         // ROMAN NUMERAL ONE
  CHECK(fold("\U0001D400") == "a");     // MATHEMATICAL BOLD CAPITAL A
}

TEST_CASE("StringPrep: Unicode case folding") {
  SUBCASE("sharp s folds to ss") {
    CHECK(fold("Straße") == "strasse");
    CHECK(fold("STRASSE") == fold("Straße"));
    CHECK(exact("Straße") != exact("STRASSE"));
  }
  SUBCASE("Greek sigma forms fold together") {
    CHECK(fold("ΣΊΣΥΦΟΣ") == fold("σίσυφος"));
    CHECK(fold("ς") == "σ");
  }
  SUBCASE("Turkish dotted and dotless i follow the default folding") {
    CHECK(fold("I") == "i");
    CHECK(fold("\u0131") == "\u0131");   // dotless i stays
    CHECK(fold("\u0130") == "i\u0307");  // capital dotted I: i + COMBINING DOT ABOVE
    CHECK(fold("\u0131") != fold("I"));
  }
  SUBCASE("other scripts") {
    CHECK(fold("ПРИВЕТ") == "привет");
    CHECK(fold("ÉCOLE") == fold("école"));
    CHECK(fold("\u01C5") == "dž");  // TITLECASE DZ WITH CARON
  }
}

TEST_CASE("StringPrep: prohibited code points make the value invalid") {
  CHECK(exact("a\uFFFDb") == kInvalid);          // REPLACEMENT CHARACTER
  CHECK(exact("\uE000") == kInvalid);            // private use
  CHECK(fold("x\U000F0000") == kInvalid);        // supplementary private use
  CHECK(exact("\u0378") == kInvalid);            // unassigned
  CHECK(exact("\xEF\xBF\xBF") == kInvalid);      // U+FFFF non-character
  CHECK(exact("\xEF\xB7\x90") == kInvalid);      // U+FDD0 non-character
  CHECK(exact("\xF4\x8F\xBF\xBF") == kInvalid);  // U+10FFFF non-character
}

TEST_CASE("StringPrep: invalid UTF-8 is rejected") {
  for (std::string_view bad : {"\x80"sv, "a\xC0\x80"sv, "\xC3"sv, "\xE2\x82"sv,
                               "\xED\xA0\x80"sv,      // surrogate U+D800
                               "\xF4\x90\x80\x80"sv,  // above U+10FFFF
                               "\xF0\x82\x82\xAC"sv,  // overlong
                               "\xFF"sv, "ok\xFE"sv}) {
    INFO("bytes: ", std::string(bad));
    CHECK(exact(bad) == kInvalid);
    CHECK(fold(bad) == kInvalid);
    CHECK_FALSE(is_valid_utf8(bad));
  }
  CHECK(is_valid_utf8(""));
  CHECK(is_valid_utf8("plain"));
  CHECK(is_valid_utf8("\u00E9\u20AC\U0001F600"));
}

TEST_CASE("StringPrep: numericString handling removes every space") {
  const PrepOptions numeric{true, PrepInsignificant::kNumeric, PrepTarget::kValue};
  CHECK(prep(" 12 34  5 ", numeric) == "12345");
  CHECK(prep("   ", numeric).empty());
  CHECK(prep(" 1 2", {true, PrepInsignificant::kNumeric, PrepTarget::kInitial}) == "12");
  CHECK(prep("1\u00A02", numeric) == "12");
}

TEST_CASE("StringPrep: telephoneNumber handling removes spaces and hyphens") {
  const PrepOptions phone{true, PrepInsignificant::kTelephone, PrepTarget::kValue};
  CHECK(prep("+1 555-123 4567", phone) == "+15551234567");
  CHECK(prep(" - ", phone).empty());
  CHECK(prep("+1\u2010555\u2212123\uFF0D4567", phone) == "+15551234567");
  CHECK(prep("Ext-12", phone) == "ext12");
  CHECK(prep("1-2", {true, PrepInsignificant::kTelephone, PrepTarget::kFinal}) == "12");
}

TEST_CASE("StringPrep: a space followed by a combining mark is significant") {
  // U+00B4 ACUTE ACCENT is NFKC SPACE + COMBINING ACUTE ACCENT.
  CHECK(exact("a \u00B4") == "a  \u0301");  // The inner space, then the accent's.
  CHECK(exact("\u00B4") == " \u0301");
  CHECK(exact("a \u0301  b") == "a \u0301 b");
  // On the telephone path a hyphen before a combining mark is kept too.
  CHECK(prep("1-\u0301", {true, PrepInsignificant::kTelephone, PrepTarget::kValue}) == "1-\u0301");
}

TEST_CASE("StringPrep: the ASCII fast path and the ICU path agree") {
  for (std::string_view ascii : {"  Foo   Bar  "sv, "user4711"sv, "A-B C"sv, ""sv, "   "sv}) {
    const std::string with_unicode = std::string(ascii) + "\u00AD";  // forces the ICU path
    for (PrepTarget target : {PrepTarget::kValue, PrepTarget::kSubstringValue, PrepTarget::kInitial,
                              PrepTarget::kAny, PrepTarget::kFinal}) {
      for (bool case_fold : {false, true}) {
        const PrepOptions options{case_fold, PrepInsignificant::kSpace, target};
        CHECK(prep(ascii, options) == prep(with_unicode, options));
      }
    }
  }
}

TEST_CASE("StringPrep: random ASCII takes the fast path to the ICU path's answer") {
  // Spaces, the other white-space controls, controls mapped to nothing, DEL, upper and lower
  // case and punctuation, in random runs.
  constexpr std::string_view kAlphabet =
      " \t\n\r\x01\x1f\x7f"
      "aZ9-,.\\";
  std::mt19937 rng(4518);
  for (int round = 0; round < 2000; ++round) {
    std::string ascii;
    const std::size_t length = rng() % 12;
    for (std::size_t i = 0; i < length; ++i) {
      ascii += kAlphabet[rng() % kAlphabet.size()];
    }
    CAPTURE(ascii);
    const std::string with_unicode = ascii + "\u00AD";
    for (PrepInsignificant insignificant :
         {PrepInsignificant::kSpace, PrepInsignificant::kNumeric, PrepInsignificant::kTelephone}) {
      for (bool case_fold : {false, true}) {
        const PrepOptions options{case_fold, insignificant, PrepTarget::kValue};
        CHECK(prep(ascii, options) == prep(with_unicode, options));
      }
    }
  }
}

}  // namespace
}  // namespace numadir::schema
