// tests/listener/wire/message_decoder_reject_test.cc: decode_message
// (listener/wire/message_decoder.h): a bad-input test for every rejection rule at the message
// level (each checking the offset and problem in the Status), and what RFC 4511 allows but
// OpenLDAP does not send. Positive decodes and reuse: message_decoder_test.cc; filters:
// message_decoder_filter_test.cc.
#include "listener/wire/message_decoder.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>

#include "base/check.h"
#include "base/status.h"
#include "listener/wire/ber_reader.h"
#include "listener/wire/ldap_message.h"
#include "schema/filter.h"
#include "tests/listener/wire/pdu_bytes.h"

namespace numadir::listener::wire {
namespace {

using schema::FilterKind;
using schema::FilterNode;
using namespace testing;  // NOLINT: test helpers.

// ---------------------------------------------------------------------------------------------
// Rejections at the message level. Each checks the whole Status text (code kMalformed, the
// offset and the problem) and what message_id holds afterwards.

TEST_CASE("decode_message: the Status is kMalformed and names the offset") {
  LdapMessage m;
  const Status status = decode_message(hex("31 05 02 01 01 42 00"), m);
  CHECK(status.code() == StatusCode::kMalformed);
  CHECK(status.message().find("offset") != std::string::npos);
  CHECK(status.message() == "LDAPMessage: offset 0: unexpected tag");
}

TEST_CASE("decode_message: rejects a PDU that is not one SEQUENCE") {
  check_rejected(
      0, {
             {"SET", hex("31 05 02 01 01 42 00"), 0, "unexpected tag"},
             {"OCTET STRING", hex("04 05 02 01 01 42 00"), 0, "unexpected tag"},
             {"empty", "", 0, kNoElement},
             {"truncated", hex("30 05 02 01 01 42"), 0,
              "length past the end of the enclosing element"},
             {"indefinite length", hex("30 80 02 01 01 42 00 00 00"), 1,
              "indefinite length (LDAP allows only definite lengths)"},
             {"a trailing byte", hex("30 05 02 01 01 42 00 00"), 7, kTrailing},
             {"a second PDU", hex("30 05 02 01 01 42 00 30 05 02 01 02 42 00"), 7, kTrailing},
         });
}

TEST_CASE("decode_message: rejects a bad message ID") {
  check_rejected(
      0, {
             {"negative", hex("30 05 02 01 ff 42 00"), 4, "negative integer not allowed here"},
             {"non-minimal", hex("30 06 02 02 00 01 42 00"), 4, "integer not minimally encoded"},
             {"over 2^31 - 1", hex("30 09 02 05 00 80 00 00 00 42 00"), 4, "integer out of range"},
             {"empty", hex("30 04 02 00 42 00"), 4, "empty integer"},
             {"missing", hex("30 02 42 00"), 2, "unexpected tag"},
             {"an ENUMERATED", hex("30 05 0a 01 01 42 00"), 2, "unexpected tag"},
             {"an empty SEQUENCE", hex("30 00"), 2, kNoElement},
         });
}

TEST_CASE("decode_message: rejects an unknown or missing protocolOp") {
  const char* const unknown = "unknown protocolOp";
  check_rejected(
      1, {
             {"[APPLICATION 30] primitive", hex("30 05 02 01 01 5e 00"), 5, unknown},
             {"[APPLICATION 30] constructed", hex("30 05 02 01 01 7e 00"), 5, unknown},
             {"[APPLICATION 17] (unassigned)", hex("30 05 02 01 01 71 00"), 5, unknown},
             {"[APPLICATION 31+] (multi-octet)", hex("30 06 02 01 01 7f 20 00"), 5, unknown},
             {"a context-class tag", hex("30 05 02 01 01 a0 00"), 5, unknown},
             {"a private tag with an op's number", hex("30 05 02 01 01 c2 00"), 5, unknown},
             {"a universal tag", hex("30 05 02 01 01 04 00"), 5, unknown},
             {"missing", hex("30 03 02 01 01"), 5, "protocolOp expected"},
         });
}

TEST_CASE("decode_message: rejects an operation in the wrong form") {
  check_rejected(
      1, {
             {"UnbindRequest constructed (0x62)", hex("30 05 02 01 01 62 00"), 5, "unexpected tag"},
             {"DelRequest constructed (0x6a)", hex("30 0b 02 01 01 6a 06 04 04 63 6e 3d 61"), 5,
              "unexpected tag"},
             {"AbandonRequest constructed (0x70)", hex("30 08 02 01 01 70 03 02 01 05"), 5,
              "unexpected tag"},
             {"BindRequest primitive (0x40)", with_byte(kSimpleBind, 5, 0x40), 5, "unexpected tag"},
             {"SearchResultDone primitive (0x45)", hex("30 0c 02 01 01 45 07 0a 01 00 04 00 04 00"),
              5, "unexpected tag"},
         });
}

TEST_CASE("decode_message: rejects an UnbindRequest with content") {
  check_rejected(1,
                 {
                     {"NULL of length 1", hex("30 06 02 01 01 42 01 00"), 7, "NULL with content"},
                 });
}

TEST_CASE("decode_message: rejects a BindRequest with a bad version") {
  check_rejected(
      1, {
             {"0", with_byte(kSimpleBind, 9, 0x00), 9, "integer out of range"},
             {"128", hex("30 13 02 01 01 60 0e 02 02 00 80 04 04 63 6e 3d 61 80 02 70 77"), 9,
              "integer out of range"},
             {"-1", with_byte(kSimpleBind, 9, 0xff), 9, "negative integer not allowed here"},
         });
}

TEST_CASE("decode_message: rejects a BindRequest with a bad authentication choice") {
  const char* const unknown = "unknown bind authentication choice";
  check_rejected(
      1,
      {
          {"[0] constructed", with_byte(kSimpleBind, 16, 0xa0), 16, unknown},
          {"[3] primitive", with_byte(kSimpleBind, 16, 0x83), 16, unknown},
          {"a universal OCTET STRING", with_byte(kSimpleBind, 16, 0x04), 16, unknown},
          {"an application tag", with_byte(kSimpleBind, 16, 0x41), 16, unknown},
          {"a private tag", with_byte(kSimpleBind, 16, 0xc1), 16, unknown},
          {"a multi-octet context tag",
           hex("30 11 02 01 01 60 0c 02 01 03 04 04 63 6e 3d 61 9f 21 00"), 16, unknown},
          {"[1] with a length past its end",
           hex("30 12 02 01 01 60 0d 02 01 03 04 04 63 6e 3d 61 81 05 70 77"), 16,
           "length past the end of the enclosing element"},
          {"missing", hex("30 0e 02 01 01 60 09 02 01 03 04 04 63 6e 3d 61"), 16,
           "bind authentication choice expected"},
          {"an element after the password",
           hex("30 15 02 01 01 60 10 02 01 03 04 04 63 6e 3d 61 80 02 70 77 04 01 78"), 20,
           kTrailing},
          {"SASL with an element after the credentials",
           hex("30 19 02 01 01 60 14 02 01 03 04 00 a3 0d 04 05 50 4c 41 49 4e 04 01 78 04 01 79"),
           24, kTrailing},
          {"SASL without a mechanism", hex("30 0c 02 01 01 60 07 02 01 03 04 00 a3 00"), 14,
           kNoElement},
      });
}

TEST_CASE(
    "decode_message: rejects a SearchRequest with a bad scope or deref or limit or typesOnly") {
  // kSearch with typesOnly of length 2 (01 02 00 00).
  const std::string long_boolean =
      hex("30 40 02 01 02 63 3b 04 04 64 63 3d 78 0a 01 02 0a 01 03 02 01 0a 02 01 14 01 02 00 00"
          " a0 18 a3 09 04 03 75 69 64 04 02 6a 64 87 0b 6f 62 6a 65 63 74 43 6c 61 73 73"
          " 30 09 04 02 63 6e 04 03 31 2e 31");
  const std::size_t last_attribute = kSearch.size() - 5;
  check_rejected(
      2,
      {
          {"scope 4", with_byte(kSearch, kScopeOffset, 0x04), kScopeOffset, "integer out of range"},
          {"scope as an INTEGER", with_byte(kSearch, kScopeOffset - 2, ber::kInteger),
           kScopeOffset - 2, "unexpected tag"},
          {"derefAliases 4", with_byte(kSearch, kDerefOffset, 0x04), kDerefOffset,
           "integer out of range"},
          {"sizeLimit -1", with_byte(kSearch, kSizeLimitOffset, 0xff), kSizeLimitOffset,
           "negative integer not allowed here"},
          {"timeLimit -1", with_byte(kSearch, kTimeLimitOffset, 0xff), kTimeLimitOffset,
           "negative integer not allowed here"},
          {"typesOnly 0x01", with_byte(kSearch, kTypesOnlyOffset, 0x01), kTypesOnlyOffset,
           kBadBoolean},
          {"typesOnly of length 2", long_boolean, kTypesOnlyOffset,
           "boolean of length other than 1"},
          {"an attribute that is not an OCTET STRING",
           with_byte(kSearch, last_attribute, ber::kInteger), last_attribute, "unexpected tag"},
      });
}

TEST_CASE("decode_message: max_depth also bounds the levels outside filters") {
  // DelRequest with one control: controls at level 1, the control's SEQUENCE at level 2.
  const std::string pdu = hex("30 12 02 01 06 4a 04 63 6e 3d 61 a0 07 30 05 04 03 31 2e 34");
  LdapMessage m;
  CHECK(decode(pdu, m, DecodeLimits{.max_depth = 2}) == "ok");
  CHECK(decode(pdu, m, DecodeLimits{.max_depth = 1}) == malformed_at(13, "nesting too deep"));
  CHECK(decode(pdu, m, DecodeLimits{.max_depth = 0}) == malformed_at(11, "nesting too deep"));
  // A primitive operation needs no level below the message.
  CHECK(decode(hex("30 05 02 01 01 42 00"), m, DecodeLimits{.max_depth = 0}) == "ok");
}

TEST_CASE("decode_message: rejects a bad LDAPResult") {
  check_rejected(
      2, {
             {"an empty referral", hex("30 0e 02 01 02 65 09 0a 01 0a 04 00 04 00 a3 00"), 16,
              "empty referral (SIZE (1..MAX))"},
             {"a referral holding a non-string",
              hex("30 10 02 01 02 65 0b 0a 01 0a 04 00 04 00 a3 02 30 00"), 16, "unexpected tag"},
             {"resultCode as an INTEGER", hex("30 0c 02 01 02 65 07 02 01 00 04 00 04 00"), 7,
              "unexpected tag"},
             {"no diagnosticMessage", hex("30 0a 02 01 02 65 05 0a 01 00 04 00"), 12, kNoElement},
             {"an element after the LDAPResult",
              hex("30 0e 02 01 02 65 09 0a 01 00 04 00 04 00 04 00"), 14, kTrailing},
         });
}

TEST_CASE("decode_message: rejects an empty SearchResultReference") {
  check_rejected(2, {
                        {"no URI", hex("30 05 02 01 02 73 00"), 7, "empty search result reference"},
                    });
}

TEST_CASE("decode_message: rejects an ExtendedRequest without requestName") {
  check_rejected(
      1, {
             {"only a requestValue", hex("30 08 02 01 01 77 03 81 01 76"), 7, "unexpected tag"},
             {"empty", hex("30 05 02 01 01 77 00"), 7, kNoElement},
             {"requestValue before requestName",
              hex("30 0f 02 01 01 77 0a 81 01 76 80 05 31 2e 32 2e 33"), 7, "unexpected tag"},
         });
}

TEST_CASE("decode_message: rejects malformed controls") {
  // All are DelRequest "cn=a", ID 6, followed by controls at offset 11.
  const auto bad = [](const char* name, std::string_view controls, std::size_t offset,
                      const char* what) {
    return Rejected{name, tlv(ber::kSequence, hex("02 01 06 4a 04 63 6e 3d 61") + hex(controls)),
                    offset, what};
  };
  check_rejected(
      6, {
             bad("criticality 0x01", "a0 0a 30 08 04 03 31 2e 34 01 01 01", 22, kBadBoolean),
             bad("criticality of length 0", "a0 09 30 07 04 03 31 2e 34 01 00", 22,
                 "boolean of length other than 1"),
             bad("an extra element inside a control",
                 "a0 10 30 0e 04 03 31 2e 34 01 01 ff 04 01 76 04 01 77", 26, kTrailing),
             bad("controlValue before criticality", "a0 0d 30 0b 04 03 31 2e 34 04 01 76 01 01 ff",
                 23, kTrailing),
             bad("a control that is not a SEQUENCE", "a0 05 04 03 31 2e 34", 13, "unexpected tag"),
             bad("a control without controlType", "a0 05 30 03 01 01 ff", 15, "unexpected tag"),
             bad("trailing garbage after the controls", "a0 07 30 05 04 03 31 2e 34 04 00", 20,
                 kTrailing),
             bad("a second controls element", "a0 07 30 05 04 03 31 2e 34 a0 00", 20, kTrailing),
             bad("controls encoded primitive", "80 00", 11, kTrailing),
         });
}

// ---------------------------------------------------------------------------------------------
// What RFC 4511 allows but OpenLDAP does not itself send.

TEST_CASE("decode_message: accepts an explicit criticality FALSE") {
  LdapMessage m;
  const std::string pdu =
      hex("30 15 02 01 06 4a 04 63 6e 3d 61 a0 0a 30 08 04 03 31 2e 34 01 01 00");
  REQUIRE(decode(pdu, m) == "ok");
  REQUIRE(m.controls.size() == 1);
  CHECK(m.controls[0].type == "1.4");
  CHECK_FALSE(m.controls[0].criticality);
  CHECK_FALSE(m.controls[0].value.has_value());
}

TEST_CASE("decode_message: accepts long-form lengths for short values") {
  LdapMessage m;
  std::string pdu;
  SUBCASE("an OCTET STRING with 81") {
    pdu = hex("30 0a 02 01 06 4a 81 04 63 6e 3d 61");
    REQUIRE(decode(pdu, m) == "ok");
    CHECK(m.dn == "cn=a");
  }
  SUBCASE("every element, with 81 to 84") {
    pdu = hex("30 84 00 00 00 0c 02 81 01 06 4a 82 00 04 63 6e 3d 61");
    REQUIRE(decode(pdu, m) == "ok");
    CHECK(m.message_id == 6);
    CHECK(m.dn == "cn=a");
  }
  SUBCASE("the search base, 04 81 03 'abc'") {
    pdu = tlv(ber::kSequence,
              hex("02 01 02") + tlv(ber::application_constructed(3),
                                    hex("04 81 03 61 62 63 0a 01 00 0a 01 00 02 01 00 02 01 00"
                                        " 01 01 00 87 01 61 30 00")));
    REQUIRE(decode(pdu, m) == "ok");
    CHECK(m.search_request.base_object == "abc");
  }
}

TEST_CASE("decode_message: accepts scope 3 (subordinateSubtree)") {
  LdapMessage m;
  const std::string pdu = with_byte(kSearch, kScopeOffset, 0x03);
  REQUIRE(decode(pdu, m) == "ok");
  CHECK(m.search_request.scope == SearchScope::kSubordinateSubtree);
}

}  // namespace
}  // namespace numadir::listener::wire
