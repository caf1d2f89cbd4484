// tests/listener/wire/ber_reader_test.cc: BerReader (listener/wire/ber_reader.h): reading each
// primitive type as views into the input, nesting, and one bad-input test per rejection rule,
// each checking the recorded problem and its byte offset.
#include "listener/wire/ber_reader.h"
#include "tests/listener/wire/pdu_bytes.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>

#include "base/check.h"

namespace numadir::listener::wire {
namespace {

using testing::hex;
using testing::points_into;

// Returns: "ok", or "<what> @ <offset>", so a failed CHECK shows both.
std::string describe(const BerError& error) {
  if (!error.failed()) {
    return "ok";
  }
  return std::string(error.what) + " @ " + std::to_string(error.offset);
}

constexpr std::uint32_t kDepth = 8;
constexpr std::int32_t kMinInt = std::numeric_limits<std::int32_t>::min();
constexpr std::int32_t kMaxInt = std::numeric_limits<std::int32_t>::max();
constexpr std::int64_t kMinInt64 = std::numeric_limits<std::int64_t>::min();
constexpr std::int64_t kMaxInt64 = std::numeric_limits<std::int64_t>::max();

TEST_CASE("BerReader: reads integers and enumerateds in two's complement") {
  struct Case {
    const char* bytes;
    std::int64_t value;
  };
  const Case cases[] = {
      {"02 01 00", 0},
      {"02 01 7f", 127},
      {"02 02 00 80", 128},
      {"02 02 00 ff", 255},
      {"02 02 01 00", 256},
      {"02 01 ff", -1},
      {"02 01 80", -128},
      {"02 02 ff 7f", -129},
      {"02 04 7f ff ff ff", kMaxInt},
      {"02 04 80 00 00 00", kMinInt},
      {"02 08 7f ff ff ff ff ff ff ff", kMaxInt64},
      {"02 08 80 00 00 00 00 00 00 00", kMinInt64},
  };
  for (const Case& c : cases) {
    INFO("bytes: ", c.bytes);
    const std::string data = hex(c.bytes);
    BerError error;
    BerReader reader(data, error, kDepth);
    std::int64_t value = 12345;
    CHECK(reader.read_integer(ber::kInteger, kMinInt64, kMaxInt64, value));
    CHECK(value == c.value);
    CHECK(reader.at_end());
    CHECK(describe(error) == "ok");
  }

  SUBCASE("read_int32 and ENUMERATED") {
    const std::string data = hex("0a 01 02 02 04 80 00 00 00");
    BerError error;
    BerReader reader(data, error, kDepth);
    std::int32_t scope = -1;
    std::int32_t minimum = 0;
    CHECK(reader.read_int32(ber::kEnumerated, 0, 3, scope));
    CHECK(scope == 2);
    CHECK(reader.read_int32(ber::kInteger, kMinInt, kMaxInt, minimum));
    CHECK(minimum == kMinInt);
    CHECK(reader.at_end());
  }
  SUBCASE("a context tag") {
    const std::string data = hex("80 01 05");
    BerError error;
    BerReader reader(data, error, kDepth);
    std::int64_t value = 0;
    CHECK(reader.read_integer(ber::context(0), 0, 10, value));
    CHECK(value == 5);
  }
}

TEST_CASE("BerReader: reads booleans and octet strings and NULLs and any element") {
  const std::string data = hex("01 01 ff 01 01 00 04 03 61 62 63 04 00 05 00 42 00 87 02 63 6e");
  BerError error;
  BerReader reader(data, error, kDepth);
  bool yes = false;
  bool no = true;
  std::string_view abc;
  std::string_view empty = "x";
  CHECK(reader.read_boolean(ber::kBoolean, yes));
  CHECK(yes);
  CHECK(reader.read_boolean(ber::kBoolean, no));
  CHECK_FALSE(no);
  CHECK(reader.read_octets(ber::kOctetString, abc));
  CHECK(abc == "abc");
  CHECK(reader.read_octets(ber::kOctetString, empty));
  CHECK(empty.empty());
  CHECK(reader.read_null(ber::kNull));
  CHECK(reader.read_null(ber::application(2)));
  std::uint8_t tag = 0;
  std::string_view content;
  CHECK(reader.read_any(tag, content));
  CHECK(tag == 0x87);
  CHECK(content == "cn");
  CHECK(reader.at_end());
  CHECK(reader.expect_end());
  CHECK(describe(error) == "ok");
}

TEST_CASE("BerReader: values are views into the input buffer and not copies") {
  const std::string data = hex("04 03 61 62 63 30 06 04 01 78 87 01 79");
  BerError error;
  BerReader reader(data, error, kDepth);
  std::string_view abc;
  REQUIRE(reader.read_octets(ber::kOctetString, abc));
  CHECK(abc.data() == data.data() + 2);
  CHECK(points_into(abc, data));

  BerReader inner = reader.enter(ber::kSequence);
  REQUIRE_FALSE(inner.failed());
  std::string_view x;
  REQUIRE(inner.read_octets(ber::kOctetString, x));
  CHECK(x == "x");
  CHECK(x.data() == data.data() + 9);
  std::uint8_t tag = 0;
  std::string_view y;
  REQUIRE(inner.read_any(tag, y));
  CHECK(y == "y");
  CHECK(y.data() == data.data() + 12);
  CHECK(points_into(y, data));
}

TEST_CASE("BerReader: enter() reads nested constructed elements and the outer reader resumes") {
  // SEQUENCE { INTEGER 1, SEQUENCE { OCTET STRING "ab", SET { } }, BOOLEAN TRUE }
  const std::string data = hex("30 0e 02 01 01 30 06 04 02 61 62 31 00 01 01 ff");
  BerError error;
  BerReader top(data, error, kDepth);
  BerReader outer = top.enter(ber::kSequence);
  REQUIRE_FALSE(outer.failed());
  CHECK(top.at_end());

  std::int64_t one = 0;
  CHECK(outer.read_integer(ber::kInteger, 0, 10, one));
  CHECK(one == 1);
  BerReader middle = outer.enter(ber::kSequence);
  std::string_view ab;
  CHECK(middle.read_octets(ber::kOctetString, ab));
  CHECK(ab == "ab");
  BerReader set = middle.enter(ber::kSet);
  CHECK_FALSE(set.failed());
  CHECK(set.at_end());
  CHECK(set.expect_end());
  CHECK(middle.at_end());
  bool flag = false;
  CHECK(outer.read_boolean(ber::kBoolean, flag));
  CHECK(flag);
  CHECK(outer.expect_end());
  CHECK(describe(error) == "ok");
}

TEST_CASE("BerReader: peek_tag shows the next identifier without consuming it") {
  const std::string data = hex("a3 00 04 01 7a");
  BerError error;
  BerReader reader(data, error, kDepth);
  std::uint8_t tag = 0;
  CHECK_FALSE(reader.at_end());
  REQUIRE(reader.peek_tag(tag));
  CHECK(tag == 0xa3);
  REQUIRE(reader.peek_tag(tag));
  CHECK(tag == 0xa3);
  BerReader empty = reader.enter(ber::context_constructed(3));
  CHECK(empty.at_end());
  std::uint8_t none = 0x55;
  CHECK_FALSE(empty.peek_tag(none));
  CHECK(none == 0x55);
  REQUIRE(reader.peek_tag(tag));
  CHECK(tag == 0x04);
  std::string_view z;
  CHECK(reader.read_octets(ber::kOctetString, z));
  CHECK(reader.at_end());
  CHECK_FALSE(reader.peek_tag(tag));

  SUBCASE("an empty reader is at its end") {
    BerError fresh;
    BerReader nothing(std::string_view{}, fresh, kDepth);
    CHECK(nothing.at_end());
    CHECK_FALSE(nothing.peek_tag(tag));
    CHECK(nothing.expect_end());
  }
}

TEST_CASE("BerReader: accepts a long-form length for a short value") {
  const std::string data = hex("04 81 03 61 62 63 04 84 00 00 00 01 64");
  BerError error;
  BerReader reader(data, error, kDepth);
  std::string_view abc;
  std::string_view d;
  CHECK(reader.read_octets(ber::kOctetString, abc));
  CHECK(abc == "abc");
  CHECK(reader.read_octets(ber::kOctetString, d));
  CHECK(d == "d");
  CHECK(reader.at_end());
}

TEST_CASE("BerReader: rejects an indefinite length") {
  BerError error;
  SUBCASE("on a primitive element") {
    const std::string data = hex("02 01 01 04 80 61 00 00");
    BerReader reader(data, error, kDepth);
    std::int64_t value = 0;
    std::string_view octets;
    REQUIRE(reader.read_integer(ber::kInteger, 0, 10, value));
    CHECK_FALSE(reader.read_octets(ber::kOctetString, octets));
    CHECK(describe(error) == "indefinite length (LDAP allows only definite lengths) @ 4");
  }
  SUBCASE("on a constructed element") {
    const std::string data = hex("30 80 02 01 01 00 00");
    BerReader reader(data, error, kDepth);
    BerReader inner = reader.enter(ber::kSequence);
    CHECK(inner.failed());
    CHECK(describe(error) == "indefinite length (LDAP allows only definite lengths) @ 1");
  }
}

TEST_CASE("BerReader: rejects a length of more than 4 octets") {
  const std::string data = hex("04 85 00 00 00 00 01 61");
  BerError error;
  BerReader reader(data, error, kDepth);
  std::string_view value;
  CHECK_FALSE(reader.read_octets(ber::kOctetString, value));
  CHECK(describe(error) == "length of more than 4 octets @ 1");
}

TEST_CASE("BerReader: rejects a length past the end of the enclosing element") {
  BerError error;
  SUBCASE("past the end of the data") {
    const std::string data = hex("02 01 01 04 05 61 62");
    BerReader reader(data, error, kDepth);
    std::int64_t value = 0;
    std::string_view octets;
    REQUIRE(reader.read_integer(ber::kInteger, 0, 10, value));
    CHECK_FALSE(reader.read_octets(ber::kOctetString, octets));
    CHECK(describe(error) == "length past the end of the enclosing element @ 3");
  }
  SUBCASE("past the end of the enclosing SEQUENCE, though the buffer holds more") {
    const std::string data = hex("30 04 04 05 61 62 63 64 65");
    BerReader reader(data, error, kDepth);
    BerReader inner = reader.enter(ber::kSequence);
    REQUIRE_FALSE(inner.failed());
    std::string_view octets;
    CHECK_FALSE(inner.read_octets(ber::kOctetString, octets));
    CHECK(describe(error) == "length past the end of the enclosing element @ 2");
  }
  SUBCASE("one byte past the end of the data") {
    const std::string data = hex("04 03 61 62");
    BerReader reader(data, error, kDepth);
    std::string_view octets;
    CHECK_FALSE(reader.read_octets(ber::kOctetString, octets));
    CHECK(describe(error) == "length past the end of the enclosing element @ 0");
  }
  SUBCASE("one byte past the end of the enclosing SEQUENCE") {
    const std::string data = hex("30 04 04 03 61 62 63");
    BerReader reader(data, error, kDepth);
    BerReader inner = reader.enter(ber::kSequence);
    REQUIRE_FALSE(inner.failed());
    std::string_view octets;
    CHECK_FALSE(inner.read_octets(ber::kOctetString, octets));
    CHECK(describe(error) == "length past the end of the enclosing element @ 2");
  }
  SUBCASE("a long-form length of 2^32 - 1") {
    const std::string data = hex("04 84 ff ff ff ff 61");
    BerReader reader(data, error, kDepth);
    std::string_view octets;
    CHECK_FALSE(reader.read_octets(ber::kOctetString, octets));
    CHECK(describe(error) == "length past the end of the enclosing element @ 0");
  }
}

TEST_CASE("BerReader: rejects truncated identifier or length octets") {
  BerError error;
  std::string_view value;
  SUBCASE("long-form length octets cut short") {
    const std::string data = hex("04 82 01");
    BerReader reader(data, error, kDepth);
    CHECK_FALSE(reader.read_octets(ber::kOctetString, value));
    CHECK(describe(error) == "length octets past the end of data @ 1");
  }
  SUBCASE("no length octet") {
    const std::string data = hex("02 01 07 04");
    BerReader reader(data, error, kDepth);
    std::int64_t seven = 0;
    REQUIRE(reader.read_integer(ber::kInteger, 0, 10, seven));
    CHECK_FALSE(reader.read_octets(ber::kOctetString, value));
    CHECK(describe(error) == "length expected, end of data found @ 4");
  }
  SUBCASE("no element at all") {
    BerReader reader(std::string_view{}, error, kDepth);
    CHECK_FALSE(reader.read_octets(ber::kOctetString, value));
    CHECK(describe(error) == "element expected, end of data found @ 0");
  }
}

TEST_CASE("BerReader: rejects a multi-octet (high tag number) identifier") {
  BerError error;
  std::uint8_t tag = 0;
  std::string_view value;
  SUBCASE("universal") {
    const std::string data = hex("1f 81 00 00");
    BerReader reader(data, error, kDepth);
    CHECK_FALSE(reader.read_any(tag, value));
    CHECK(describe(error) == "multi-octet tag (not used by LDAP) @ 0");
  }
  SUBCASE("application constructed, with a length that would fit") {
    const std::string data = hex("7f 01 00");
    BerReader reader(data, error, kDepth);
    CHECK_FALSE(reader.read_any(tag, value));
    CHECK(describe(error) == "multi-octet tag (not used by LDAP) @ 0");
  }
  SUBCASE("context constructed, after another element") {
    const std::string data = hex("05 00 bf 1f 00");
    BerReader reader(data, error, kDepth);
    REQUIRE(reader.read_null(ber::kNull));
    CHECK_FALSE(reader.read_any(tag, value));
    CHECK(describe(error) == "multi-octet tag (not used by LDAP) @ 2");
  }
}

TEST_CASE("BerReader: rejects a wrong tag") {
  const std::string data = hex("04 01 61 02 01 01");
  BerError error;
  BerReader reader(data, error, kDepth);
  std::string_view a;
  REQUIRE(reader.read_octets(ber::kOctetString, a));
  SUBCASE("a primitive read") {
    std::string_view value;
    CHECK_FALSE(reader.read_octets(ber::kOctetString, value));
  }
  SUBCASE("enter() on a primitive element") {
    BerReader inner = reader.enter(ber::kSequence);
    CHECK(inner.failed());
    CHECK(inner.at_end());
  }
  SUBCASE("the constructed form of the right number") {
    std::int64_t value = 0;
    CHECK_FALSE(reader.read_integer(ber::kInteger | ber::kConstructed, 0, 10, value));
  }
  CHECK(describe(error) == "unexpected tag @ 3");
}

TEST_CASE("BerReader: rejects an empty integer") {
  const std::string data = hex("0a 00");
  BerError error;
  BerReader reader(data, error, kDepth);
  std::int64_t value = 0;
  CHECK_FALSE(reader.read_integer(ber::kEnumerated, 0, 10, value));
  CHECK(describe(error) == "empty integer @ 2");
}

TEST_CASE("BerReader: rejects a non-minimal integer") {
  BerError error;
  std::string data;
  SUBCASE("a redundant leading 0x00") { data = hex("02 01 01 02 02 00 7f"); }
  SUBCASE("a redundant leading 0xff") { data = hex("02 01 01 02 02 ff 80"); }
  SUBCASE("a redundant leading 0x00 on a large value") {
    data = hex("02 01 01 02 05 00 00 80 00 00");
  }
  BerReader reader(data, error, kDepth);
  std::int64_t value = 0;
  REQUIRE(reader.read_integer(ber::kInteger, kMinInt64, kMaxInt64, value));
  CHECK_FALSE(reader.read_integer(ber::kInteger, kMinInt64, kMaxInt64, value));
  CHECK(describe(error) == "integer not minimally encoded @ 5");
}

TEST_CASE("BerReader: rejects an integer of more than 8 octets") {
  const std::string data = hex("02 09 00 80 00 00 00 00 00 00 00");
  BerError error;
  BerReader reader(data, error, kDepth);
  std::int64_t value = 0;
  CHECK_FALSE(reader.read_integer(ber::kInteger, kMinInt64, kMaxInt64, value));
  CHECK(describe(error) == "integer too large @ 2");
}

TEST_CASE("BerReader: rejects an integer outside the allowed range") {
  BerError error;
  SUBCASE("2^31 as an int32") {
    const std::string data = hex("02 05 00 80 00 00 00");
    BerReader reader(data, error, kDepth);
    std::int32_t value = 0;
    CHECK_FALSE(reader.read_int32(ber::kInteger, kMinInt, kMaxInt, value));
    CHECK(describe(error) == "integer out of range @ 2");
  }
  SUBCASE("-2^31 - 1 as an int32") {
    const std::string data = hex("02 05 ff 7f ff ff ff");
    BerReader reader(data, error, kDepth);
    std::int32_t value = 0;
    CHECK_FALSE(reader.read_int32(ber::kInteger, kMinInt, kMaxInt, value));
    CHECK(describe(error) == "integer out of range @ 2");
  }
  SUBCASE("128 where the maximum is 127") {
    const std::string data = hex("02 02 00 80");
    BerReader reader(data, error, kDepth);
    std::int32_t value = 0;
    CHECK_FALSE(reader.read_int32(ber::kInteger, 1, 127, value));
    CHECK(describe(error) == "integer out of range @ 2");
  }
  SUBCASE("0 where the minimum is 1") {
    const std::string data = hex("02 01 00");
    BerReader reader(data, error, kDepth);
    std::int32_t value = 0;
    CHECK_FALSE(reader.read_int32(ber::kInteger, 1, 127, value));
    CHECK(describe(error) == "integer out of range @ 2");
  }
  SUBCASE("ENUMERATED 4 where the maximum is 3") {
    const std::string data = hex("0a 01 04");
    BerReader reader(data, error, kDepth);
    std::int32_t value = 0;
    CHECK_FALSE(reader.read_int32(ber::kEnumerated, 0, 3, value));
    CHECK(describe(error) == "integer out of range @ 2");
  }
}

TEST_CASE("BerReader: rejects a negative integer where the minimum is not negative") {
  BerError error;
  std::string data;
  SUBCASE("-1 (a message ID or sizeLimit)") { data = hex("02 01 ff"); }
  SUBCASE("-2^31") { data = hex("02 04 80 00 00 00"); }
  BerReader reader(data, error, kDepth);
  std::int32_t value = 7;
  CHECK_FALSE(reader.read_int32(ber::kInteger, 0, kMaxInt, value));
  CHECK(value == 7);
  CHECK(describe(error) == "negative integer not allowed here @ 2");
}

TEST_CASE("BerReader: rejects a boolean whose length is not 1") {
  BerError error;
  std::string data;
  SUBCASE("length 0") { data = hex("01 00"); }
  SUBCASE("length 2") { data = hex("01 02 ff ff"); }
  BerReader reader(data, error, kDepth);
  bool value = false;
  CHECK_FALSE(reader.read_boolean(ber::kBoolean, value));
  CHECK(describe(error) == "boolean of length other than 1 @ 2");
}

TEST_CASE("BerReader: rejects a boolean other than 0x00 and 0xFF (RFC 4511 5.1)") {
  BerError error;
  std::string data;
  SUBCASE("0x01") { data = hex("01 01 01"); }
  SUBCASE("0x80") { data = hex("01 01 80"); }
  SUBCASE("0xFE") { data = hex("01 01 fe"); }
  BerReader reader(data, error, kDepth);
  bool value = false;
  CHECK_FALSE(reader.read_boolean(ber::kBoolean, value));
  CHECK(describe(error) == "boolean TRUE not encoded as 0xFF (RFC 4511 5.1) @ 2");
}

TEST_CASE("BerReader: rejects a NULL with content") {
  const std::string data = hex("05 01 00");
  BerError error;
  BerReader reader(data, error, kDepth);
  CHECK_FALSE(reader.read_null(ber::kNull));
  CHECK(describe(error) == "NULL with content @ 2");
}

TEST_CASE("BerReader: rejects nesting deeper than the depth budget") {
  // Three nested SEQUENCEs: 30 { 30 { 30 { } } }.
  const std::string data = hex("30 04 30 02 30 00");
  BerError error;
  SUBCASE("a budget of 3 is enough") {
    BerReader top(data, error, 3);
    BerReader one = top.enter(ber::kSequence);
    BerReader two = one.enter(ber::kSequence);
    BerReader three = two.enter(ber::kSequence);
    CHECK_FALSE(three.failed());
    CHECK(three.at_end());
    CHECK(describe(error) == "ok");
  }
  SUBCASE("a budget of 2 is not") {
    BerReader top(data, error, 2);
    BerReader one = top.enter(ber::kSequence);
    BerReader two = one.enter(ber::kSequence);
    REQUIRE_FALSE(two.failed());
    BerReader three = two.enter(ber::kSequence);
    CHECK(three.failed());
    CHECK(three.at_end());
    CHECK(describe(error) == "nesting too deep @ 4");
  }
  SUBCASE("a budget of 0 allows no constructed element") {
    BerReader top(data, error, 0);
    BerReader one = top.enter(ber::kSequence);
    CHECK(one.failed());
    CHECK(describe(error) == "nesting too deep @ 0");
  }
}

TEST_CASE("BerReader: expect_end rejects trailing data") {
  BerError error;
  SUBCASE("at the top level") {
    const std::string data = hex("02 01 01 02 01 02");
    BerReader reader(data, error, kDepth);
    std::int64_t value = 0;
    REQUIRE(reader.read_integer(ber::kInteger, 0, 10, value));
    CHECK_FALSE(reader.at_end());
    CHECK_FALSE(reader.expect_end());
    CHECK(describe(error) == "unexpected data after the last element @ 3");
  }
  SUBCASE("inside a SEQUENCE, with the offset counted from the start of the PDU") {
    const std::string data = hex("04 00 30 06 02 01 01 04 01 78");
    BerReader reader(data, error, kDepth);
    std::string_view empty;
    REQUIRE(reader.read_octets(ber::kOctetString, empty));
    BerReader inner = reader.enter(ber::kSequence);
    std::int64_t value = 0;
    REQUIRE(inner.read_integer(ber::kInteger, 0, 10, value));
    CHECK_FALSE(inner.expect_end());
    CHECK(describe(error) == "unexpected data after the last element @ 7");
  }
}

TEST_CASE(
    "BerReader: a failure in a nested reader is seen by the outer one and the first error is "
    "kept") {
  // SEQUENCE { INTEGER 1, BOOLEAN (length 0) }, OCTET STRING "a"
  const std::string data = hex("30 05 02 01 01 01 00 04 01 61");
  BerError error;
  BerReader outer(data, error, kDepth);
  BerReader inner = outer.enter(ber::kSequence);
  std::int64_t one = 0;
  REQUIRE(inner.read_integer(ber::kInteger, 0, 10, one));
  bool flag = false;
  CHECK_FALSE(inner.read_boolean(ber::kBoolean, flag));
  CHECK(describe(error) == "boolean of length other than 1 @ 7");
  CHECK(inner.failed());
  CHECK(outer.failed());

  // Every later read fails, on either reader, and the first error stays.
  std::string_view a;
  CHECK_FALSE(outer.read_octets(ber::kOctetString, a));
  CHECK(a.empty());
  CHECK_FALSE(outer.expect_end());
  CHECK_FALSE(outer.fail("a later problem"));
  BerReader other = outer.enter(ber::kSequence);
  CHECK(other.failed());
  CHECK(describe(error) == "boolean of length other than 1 @ 7");
}

TEST_CASE("BerReader: fail() records a problem at the current position") {
  const std::string data = hex("30 03 04 01 61");
  BerError error;
  BerReader outer(data, error, kDepth);
  BerReader inner = outer.enter(ber::kSequence);
  std::string_view a;
  REQUIRE(inner.read_octets(ber::kOctetString, a));
  CHECK_FALSE(inner.fail("semantic problem"));
  CHECK(describe(error) == "semantic problem @ 5");
  CHECK(outer.failed());
}

}  // namespace
}  // namespace numadir::listener::wire
