// tests/listener/wire/ber_writer_test.cc: BerWriter (listener/wire/ber_writer.h): the exact bytes
// of each primitive, the short and long length forms, begin()/end() moving content when a length
// needs the long form, and reuse after clear().
#include "listener/wire/ber_writer.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "base/check.h"
#include "listener/wire/ber_reader.h"
#include "tests/listener/wire/pdu_bytes.h"

namespace numadir::listener::wire {
namespace {

using testing::hex;

// Returns: `bytes` as lower-case hex pairs separated by spaces, for readable CHECK failures.
std::string to_hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (char c : bytes) {
    const auto b = static_cast<std::uint8_t>(c);
    if (!out.empty()) {
      out += ' ';
    }
    out += kDigits[b >> 4];
    out += kDigits[b & 0xf];
  }
  return out;
}

// `count` bytes of filler that never look like a length or tag boundary by accident.
std::string filler(std::size_t count) {
  std::string out(count, '\0');
  for (std::size_t i = 0; i < count; ++i) {
    out[i] = static_cast<char>('a' + i % 26);
  }
  return out;
}

TEST_CASE("BerWriter: integers use the minimal two's complement form") {
  struct Case {
    std::int64_t value;
    const char* bytes;
  };
  const Case cases[] = {
      {0, "02 01 00"},
      {1, "02 01 01"},
      {127, "02 01 7f"},
      {128, "02 02 00 80"},
      {255, "02 02 00 ff"},
      {256, "02 02 01 00"},
      {32767, "02 02 7f ff"},
      {32768, "02 03 00 80 00"},
      {-1, "02 01 ff"},
      {-128, "02 01 80"},
      {-129, "02 02 ff 7f"},
      {-256, "02 02 ff 00"},
      {-32769, "02 03 ff 7f ff"},
      {std::numeric_limits<std::int32_t>::max(), "02 04 7f ff ff ff"},
      {std::numeric_limits<std::int32_t>::min(), "02 04 80 00 00 00"},
      {std::int64_t{1} << 31, "02 05 00 80 00 00 00"},
      {std::numeric_limits<std::int64_t>::max(), "02 08 7f ff ff ff ff ff ff ff"},
      {std::numeric_limits<std::int64_t>::min(), "02 08 80 00 00 00 00 00 00 00"},
  };
  for (const Case& c : cases) {
    INFO("value: ", c.value);
    BerWriter writer;
    writer.write_integer(ber::kInteger, c.value);
    CHECK(to_hex(writer.view()) == to_hex(hex(c.bytes)));
  }
}

TEST_CASE("BerWriter: the tag argument is written as given") {
  BerWriter writer;
  writer.write_integer(ber::kEnumerated, 2);
  writer.write_integer(ber::application(16), 5);
  writer.write_octets(ber::context(0), "pw");
  writer.write_boolean(ber::context(4), true);
  writer.write_null(ber::application(2));
  CHECK(to_hex(writer.view()) == "0a 01 02 50 01 05 80 02 70 77 84 01 ff 42 00");
}

TEST_CASE("BerWriter: booleans are 0xFF and 0x00 and NULL is empty") {
  BerWriter writer;
  SUBCASE("TRUE") {
    writer.write_boolean(ber::kBoolean, true);
    CHECK(to_hex(writer.view()) == "01 01 ff");
  }
  SUBCASE("FALSE") {
    writer.write_boolean(ber::kBoolean, false);
    CHECK(to_hex(writer.view()) == "01 01 00");
  }
  SUBCASE("NULL") {
    writer.write_null(ber::kNull);
    CHECK(to_hex(writer.view()) == "05 00");
  }
}

TEST_CASE("BerWriter: octet string lengths use the short form below 128 then 81 82 83") {
  struct Case {
    std::size_t length;
    const char* header;
  };
  const Case cases[] = {
      {0, "04 00"},      {1, "04 01"},         {127, "04 7f"},         {128, "04 81 80"},
      {255, "04 81 ff"}, {256, "04 82 01 00"}, {65535, "04 82 ff ff"}, {65536, "04 83 01 00 00"},
  };
  for (const Case& c : cases) {
    INFO("length: ", c.length);
    const std::string value = filler(c.length);
    BerWriter writer;
    writer.write_octets(ber::kOctetString, value);
    const std::string header = hex(c.header);
    REQUIRE(writer.size() == header.size() + c.length);
    CHECK(to_hex(writer.view().substr(0, header.size())) == to_hex(header));
    CHECK(writer.view().substr(header.size()) == value);
  }
}

TEST_CASE("BerWriter: end() writes the short form and widens it to the long form as needed") {
  struct Case {
    std::size_t content;  // Bytes of content inside the constructed element.
    const char* header;
  };
  // The content is one OCTET STRING (2 header bytes below 128, 3 up to 255, 4 up to 65535).
  const Case cases[] = {
      {0, "30 00"},      {2, "30 02"},         {127, "30 7f"},         {128, "30 81 80"},
      {255, "30 81 ff"}, {256, "30 82 01 00"}, {65535, "30 82 ff ff"}, {65536, "30 83 01 00 00"},
  };
  for (const Case& c : cases) {
    INFO("content bytes: ", c.content);
    std::string content;
    if (c.content != 0) {
      const std::size_t octets_header = c.content - 2 < 128 ? 2 : (c.content - 3 < 256 ? 3 : 4);
      BerWriter element;
      element.write_octets(ber::kOctetString, filler(c.content - octets_header));
      content = std::string(element.view());
      REQUIRE(content.size() == c.content);
    }
    BerWriter writer;
    writer.begin(ber::kSequence);
    CHECK(writer.open_depth() == 1);
    writer.write_raw(content);
    writer.end();
    CHECK(writer.open_depth() == 0);
    const std::string header = hex(c.header);
    REQUIRE(writer.size() == header.size() + c.content);
    CHECK(to_hex(writer.view().substr(0, header.size())) == to_hex(header));
    // The content was moved up intact, not overwritten by the wider length.
    CHECK(writer.view().substr(header.size()) == content);
  }
}

TEST_CASE("BerWriter: nested elements crossing 127 and 255 bytes shift their content correctly") {
  SUBCASE("inner over 127, outer over 127") {
    // SEQUENCE { INTEGER 5, SEQUENCE { OCTET STRING (200 bytes) }, BOOLEAN TRUE }
    const std::string value = filler(200);
    BerWriter writer;
    writer.begin(ber::kSequence);
    writer.write_integer(ber::kInteger, 5);
    writer.begin(ber::kSequence);
    writer.write_octets(ber::kOctetString, value);
    writer.end();
    writer.write_boolean(ber::kBoolean, true);
    writer.end();
    // Inner: 3 + 200 = 203 (0xcb) bytes of content; outer: 3 + (3 + 203) + 3 = 212 (0xd4).
    const std::string expected =
        hex("30 81 d4 02 01 05 30 81 cb 04 81 c8") + value + hex("01 01 ff");
    CHECK(writer.view() == expected);
  }
  SUBCASE("inner over 255, outer over 255") {
    const std::string value = filler(300);
    BerWriter writer;
    writer.begin(ber::kSequence);
    writer.write_integer(ber::kInteger, 5);
    writer.begin(ber::context_constructed(3));
    writer.write_octets(ber::kOctetString, value);
    writer.end();
    writer.write_boolean(ber::kBoolean, true);
    writer.end();
    // Inner: 4 + 300 = 304 (0x130); outer: 3 + (4 + 304) + 3 = 314 (0x13a).
    const std::string expected =
        hex("30 82 01 3a 02 01 05 a3 82 01 30 04 82 01 2c") + value + hex("01 01 ff");
    CHECK(writer.view() == expected);
  }
  SUBCASE("only the outer element crosses 127") {
    // Two inner SEQUENCEs of 100 bytes of content each: 2 * 102 = 204 (0xcc) bytes outside.
    const std::string value = filler(98);
    BerWriter writer;
    writer.begin(ber::kSequence);
    for (int i = 0; i < 2; ++i) {
      writer.begin(ber::kSequence);
      writer.write_octets(ber::kOctetString, value);
      writer.end();
    }
    writer.end();
    const std::string inner = hex("30 64 04 62") + value;
    CHECK(writer.view() == hex("30 81 cc") + inner + inner);
  }
}

TEST_CASE("BerWriter: begin/end nest up to kMaxDepth levels") {
  BerWriter writer;
  for (std::size_t i = 0; i < BerWriter::kMaxDepth; ++i) {
    writer.begin(ber::kSequence);
  }
  CHECK(writer.open_depth() == BerWriter::kMaxDepth);
  writer.write_null(ber::kNull);
  for (std::size_t i = 0; i < BerWriter::kMaxDepth; ++i) {
    writer.end();
  }
  CHECK(writer.open_depth() == 0);
  // Level k from the inside holds 2 * k bytes up to 128 (level 64); above that each level adds
  // 3 bytes (81 form) and, past 255, 4 bytes (82 form): the outermost holds 341 (0x155).
  std::string expected = hex("05 00");
  for (std::size_t i = 0; i < BerWriter::kMaxDepth; ++i) {
    const std::size_t length = expected.size();
    std::string header = hex("30");
    if (length >= 0x100) {
      header += static_cast<char>(0x82);
      header += static_cast<char>(length >> 8);
    } else if (length >= 0x80) {
      header += static_cast<char>(0x81);
    }
    header += static_cast<char>(length & 0xff);
    expected = header + expected;
  }
  CHECK(to_hex(writer.view().substr(0, 4)) == "30 82 01 55");
  CHECK(writer.view() == expected);
}

TEST_CASE("BerWriter: several elements are appended one after another") {
  BerWriter writer;
  writer.begin(ber::kSequence);
  writer.write_integer(ber::kInteger, 1);
  writer.write_null(ber::application(2));
  writer.end();
  writer.write_raw(hex("30 05 02 01 02 42 00"));
  writer.begin(ber::kSequence);
  writer.end();
  CHECK(to_hex(writer.view()) == "30 05 02 01 01 42 00 30 05 02 01 02 42 00 30 00");
}

// Writes a SearchRequest-like PDU of about 300 bytes (long-form lengths included).
void write_sample(BerWriter& writer, std::string_view value) {
  writer.begin(ber::kSequence);
  writer.write_integer(ber::kInteger, 42);
  writer.begin(ber::application_constructed(3));
  writer.write_octets(ber::kOctetString, "ou=people,dc=example,dc=com");
  writer.write_integer(ber::kEnumerated, 2);
  writer.write_integer(ber::kEnumerated, 0);
  writer.write_integer(ber::kInteger, 0);
  writer.write_integer(ber::kInteger, 0);
  writer.write_boolean(ber::kBoolean, false);
  writer.begin(ber::context_constructed(3));
  writer.write_octets(ber::kOctetString, "uid");
  writer.write_octets(ber::kOctetString, value);
  writer.end();
  writer.begin(ber::kSequence);
  writer.write_octets(ber::kOctetString, "1.1");
  writer.end();
  writer.end();
  writer.end();
}

TEST_CASE("BerWriter: clear() empties the writer and keeps its buffer for the next message") {
  const std::string value = filler(250);
  BerWriter writer;
  write_sample(writer, value);
  const std::string first(writer.view());
  REQUIRE(first.size() > 256);
  const std::size_t capacity = writer.capacity();
  const char* const data = writer.view().data();

  writer.clear();
  CHECK(writer.size() == 0);
  CHECK(writer.view().empty());
  CHECK(writer.open_depth() == 0);
  CHECK(writer.capacity() == capacity);

  // The same message again: identical bytes, written where the first ones were (no
  // reallocation; under ASan a freed block is quarantined, so a new one would lie elsewhere).
  write_sample(writer, value);
  CHECK(writer.view() == first);
  CHECK(writer.capacity() == capacity);
  CHECK(writer.view().data() == data);

  SUBCASE("many times over") {
    for (int i = 0; i < 100; ++i) {
      writer.clear();
      write_sample(writer, value);
    }
    CHECK(writer.view() == first);
    CHECK(writer.capacity() == capacity);
    CHECK(writer.view().data() == data);
  }
}

TEST_CASE("BerWriter: reserve() makes room ahead of the first message") {
  const std::string value = filler(250);
  BerWriter sample;
  write_sample(sample, value);
  const std::string one(sample.view());

  BerWriter writer;
  writer.reserve(4096);
  REQUIRE(writer.capacity() >= 4096);
  const std::size_t capacity = writer.capacity();
  writer.write_octets(ber::kOctetString, filler(100));
  const char* const data = writer.view().data();
  write_sample(writer, value);
  writer.clear();
  for (int i = 0; i < 10; ++i) {
    write_sample(writer, value);
  }
  REQUIRE(writer.size() == 10 * one.size());
  CHECK(writer.view().substr(9 * one.size()) == one);
  CHECK(writer.capacity() == capacity);
  CHECK(writer.view().data() == data);

  SUBCASE("and growing past it keeps what was written") {
    const std::string before(writer.view());
    writer.write_octets(ber::kOctetString, filler(5000));
    CHECK(writer.capacity() >= writer.size());
    CHECK(writer.view().substr(0, before.size()) == before);
    CHECK(to_hex(writer.view().substr(before.size(), 4)) == "04 82 13 88");
  }
}

TEST_CASE("BerWriter: end() keeps earlier bytes when widening a length needs a bigger buffer") {
  // Fill the buffer to its capacity so that widening the length must grow it.
  BerWriter writer;
  writer.begin(ber::kSequence);
  writer.write_raw(filler(200));
  const std::size_t to_fill = writer.capacity() - writer.size();
  writer.write_raw(filler(to_fill));
  REQUIRE(writer.size() == writer.capacity());
  writer.end();
  const std::size_t content = 200 + to_fill;
  REQUIRE(content < 0x10000);
  std::string header = hex("30");
  if (content >= 0x100) {
    header += static_cast<char>(0x82);
    header += static_cast<char>(content >> 8);
  } else {
    header += static_cast<char>(0x81);
  }
  header += static_cast<char>(content & 0xff);
  CHECK(writer.view() == header + filler(200) + filler(to_fill));
}

TEST_CASE("BerWriter: BerReader reads back what it writes") {
  BerWriter writer;
  const std::string long_value = filler(300);
  writer.begin(ber::kSequence);
  writer.write_integer(ber::kInteger, -129);
  writer.write_integer(ber::kEnumerated, 3);
  writer.write_boolean(ber::kBoolean, true);
  writer.write_octets(ber::kOctetString, long_value);
  writer.write_null(ber::kNull);
  writer.end();

  BerError error;
  BerReader top(writer.view(), error, 4);
  BerReader sequence = top.enter(ber::kSequence);
  std::int64_t negative = 0;
  std::int64_t three = 0;
  bool flag = false;
  std::string_view octets;
  CHECK(sequence.read_integer(ber::kInteger, -1000, 1000, negative));
  CHECK(negative == -129);
  CHECK(sequence.read_integer(ber::kEnumerated, 0, 3, three));
  CHECK(three == 3);
  CHECK(sequence.read_boolean(ber::kBoolean, flag));
  CHECK(flag);
  CHECK(sequence.read_octets(ber::kOctetString, octets));
  CHECK(octets == long_value);
  CHECK(sequence.read_null(ber::kNull));
  CHECK(sequence.expect_end());
  CHECK(top.expect_end());
  CHECK_FALSE(error.failed());
}

}  // namespace
}  // namespace numadir::listener::wire
