// tests/listener/wire/framing_test.cc: frame_pdu (listener/wire/framing.h): complete PDUs,
// partial ones (every prefix), long-form lengths, the size limit and malformed headers.
#include "listener/wire/framing.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <string>
#include <string_view>

#include "base/check.h"
#include "tests/listener/wire/pdu_bytes.h"

namespace numadir::listener::wire {
namespace {

using testing::hex;

const char* state_name(FrameState state) {
  switch (state) {
    case FrameState::kComplete:
      return "complete";
    case FrameState::kNeedMore:
      return "need more";
    case FrameState::kTooLarge:
      return "too large";
    case FrameState::kMalformed:
      return "malformed";
  }
  return "?";
}

// Returns: the frame as text, e.g. "complete 7" or "need more 3", for readable CHECKs.
std::string describe(const Frame& frame) {
  std::string out = state_name(frame.state);
  switch (frame.state) {
    case FrameState::kComplete:
    case FrameState::kTooLarge:
      out += ' ' + std::to_string(frame.pdu_bytes);
      break;
    case FrameState::kNeedMore:
      out += ' ' + std::to_string(frame.need_bytes);
      break;
    case FrameState::kMalformed:
      break;
  }
  if (frame.state == FrameState::kTooLarge || frame.state == FrameState::kMalformed) {
    out += ": ";
    out += frame.error != nullptr ? frame.error : "(no error text)";
  }
  return out;
}

// An UnbindRequest, message ID 1.
const std::string kUnbind = hex("30 05 02 01 01 42 00");

TEST_CASE("frame_pdu: a complete PDU is framed") {
  CHECK(describe(frame_pdu(kUnbind)) == "complete 7");
  CHECK(describe(frame_pdu(hex("30 00"))) == "complete 2");
}

TEST_CASE("frame_pdu: of two PDUs back to back frames the first") {
  // A DelRequest (ID 2, "cn=a") after the UnbindRequest.
  const std::string del = hex("30 09 02 01 02 4a 04 63 6e 3d 61");
  const std::string buffer = kUnbind + del;
  const Frame first = frame_pdu(buffer);
  REQUIRE(describe(first) == "complete 7");
  const std::string_view rest = std::string_view(buffer).substr(first.pdu_bytes);
  CHECK(describe(frame_pdu(rest)) == "complete 11");
  SUBCASE("and the first even when the second is incomplete") {
    CHECK(describe(frame_pdu(kUnbind + del.substr(0, 3))) == "complete 7");
  }
  SUBCASE("and the first even when the second is garbage") {
    CHECK(describe(frame_pdu(kUnbind + hex("ff ff ff"))) == "complete 7");
  }
}

TEST_CASE("frame_pdu: the empty buffer needs two bytes") {
  CHECK(describe(frame_pdu(std::string_view{})) == "need more 2");
}

TEST_CASE("frame_pdu: every prefix of a PDU needs more bytes") {
  struct Case {
    const char* name;
    std::string pdu;
    std::size_t header;  // Identifier and length octets.
  };
  const std::string body_200(200, 'x');
  const std::string body_300(300, 'y');
  const Case cases[] = {
      {"short form", kUnbind, 2},
      {"81 form", hex("30 81 c8") + body_200, 3},
      {"82 form", hex("30 82 01 2c") + body_300, 4},
      {"84 form", hex("30 84 00 00 00 c8") + body_200, 6},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    for (std::size_t size = 0; size < c.pdu.size(); ++size) {
      INFO("prefix bytes: ", size);
      const Frame frame = frame_pdu(std::string_view(c.pdu).substr(0, size));
      REQUIRE(frame.state == FrameState::kNeedMore);
      if (size < 2) {
        // Not even the first length octet: the two-byte minimum header.
        CHECK(frame.need_bytes == 2 - size);
      } else if (size < c.header) {
        // Long-form length octets still missing: at least those.
        CHECK(frame.need_bytes == c.header - size);
      } else {
        // The length is known: exactly the rest of the PDU.
        CHECK(frame.need_bytes == c.pdu.size() - size);
      }
    }
    CHECK(describe(frame_pdu(c.pdu)) == "complete " + std::to_string(c.pdu.size()));
  }
  SUBCASE("concrete values for the 84 form") {
    const std::string pdu = hex("30 84 00 00 00 c8") + body_200;
    CHECK(describe(frame_pdu(pdu.substr(0, 1))) == "need more 1");
    CHECK(describe(frame_pdu(pdu.substr(0, 2))) == "need more 4");
    CHECK(describe(frame_pdu(pdu.substr(0, 5))) == "need more 1");
    CHECK(describe(frame_pdu(pdu.substr(0, 6))) == "need more 200");
    CHECK(describe(frame_pdu(pdu.substr(0, 205))) == "need more 1");
  }
}

TEST_CASE("frame_pdu: long-form lengths are read") {
  SUBCASE("81") {
    const std::string pdu = hex("30 81 80") + std::string(128, 'a');
    CHECK(describe(frame_pdu(pdu)) == "complete 131");
  }
  SUBCASE("81 for a length that fits the short form") {
    CHECK(describe(frame_pdu(hex("30 81 05 02 01 01 42 00"))) == "complete 8");
  }
  SUBCASE("82") {
    const std::string pdu = hex("30 82 01 00") + std::string(256, 'a');
    CHECK(describe(frame_pdu(pdu)) == "complete 260");
  }
  SUBCASE("84") {
    const std::string pdu = hex("30 84 00 01 00 00") + std::string(65536, 'a');
    CHECK(describe(frame_pdu(pdu)) == "complete 65542");
  }
}

TEST_CASE("frame_pdu: a PDU announcing more than max_pdu_bytes is too large") {
  SUBCASE("with the whole PDU buffered") {
    const std::string pdu = hex("30 81 c8") + std::string(200, 'x');
    CHECK(describe(frame_pdu(pdu, 202)) == "too large 203: PDU larger than the maximum PDU size");
    CHECK(describe(frame_pdu(pdu, 203)) == "complete 203");
  }
  SUBCASE("before the body has arrived") {
    CHECK(describe(frame_pdu(hex("30 81 c8"), 100)) ==
          "too large 203: PDU larger than the maximum PDU size");
  }
  SUBCASE("the default limit, 4 MiB") {
    // 4 MiB of content plus 6 header bytes, with only the header buffered.
    CHECK(describe(frame_pdu(hex("30 84 00 40 00 00"))) ==
          "too large 4194310: PDU larger than the maximum PDU size");
    // 4 MiB in all: within the limit, so wait for the rest.
    CHECK(describe(frame_pdu(hex("30 84 00 3f ff fa"))) == "need more 4194298");
  }
  SUBCASE("the largest 4-octet length") {
    CHECK(describe(frame_pdu(hex("30 84 ff ff ff ff"))) ==
          "too large 4294967301: PDU larger than the maximum PDU size");
  }
  SUBCASE("a short-form length over a tiny limit") {
    CHECK(describe(frame_pdu(kUnbind, 6)) == "too large 7: PDU larger than the maximum PDU size");
  }
}

TEST_CASE("frame_pdu: a first byte other than SEQUENCE is malformed") {
  std::string buffer;
  SUBCASE("SET") { buffer = hex("31 05 02 01 01 42 00"); }
  SUBCASE("an application tag") { buffer = hex("60 00"); }
  SUBCASE("text") { buffer = "GET / HTTP/1.1\r\n"; }
  SUBCASE("two bytes") { buffer = hex("ff ff"); }
  CHECK(describe(frame_pdu(buffer)) == "malformed: PDU does not start with a SEQUENCE tag");
}

TEST_CASE("frame_pdu: a single byte other than SEQUENCE is malformed at once") {
  // No number of further bytes can make this a PDU, so the listener should not wait for more.
  CHECK(describe(frame_pdu(hex("31"))) == "malformed: PDU does not start with a SEQUENCE tag");
  CHECK(describe(frame_pdu("G")) == "malformed: PDU does not start with a SEQUENCE tag");
}

TEST_CASE("frame_pdu: an indefinite length is malformed") {
  CHECK(describe(frame_pdu(hex("30 80"))) ==
        "malformed: indefinite length (LDAP allows only definite lengths)");
  CHECK(describe(frame_pdu(hex("30 80 02 01 01 42 00 00 00"))) ==
        "malformed: indefinite length (LDAP allows only definite lengths)");
}

TEST_CASE("frame_pdu: a length of more than 4 octets is malformed") {
  SUBCASE("85, before the length octets arrive") {
    CHECK(describe(frame_pdu(hex("30 85"))) == "malformed: length of more than 4 octets");
  }
  SUBCASE("85, with a small length") {
    CHECK(describe(frame_pdu(hex("30 85 00 00 00 00 05 02 01 01 42 00"))) ==
          "malformed: length of more than 4 octets");
  }
  SUBCASE("ff") {
    CHECK(describe(frame_pdu(hex("30 ff"))) == "malformed: length of more than 4 octets");
  }
}

}  // namespace
}  // namespace numadir::listener::wire
