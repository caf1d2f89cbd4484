// tests/listener/wire/message_decoder_filter_test.cc: decode_message on search filters: every
// filter choice, a bad-input test for every filter rejection rule, the nesting limit, and what
// RFC 4511 / RFC 4526 allow but OpenLDAP does not send.
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

TEST_CASE("decode_message: every filter choice") {
  // (&(a=1)(b>=2)(c<=3)(d~=4)(e=*)(f=x*y*z)(!(g=*))(|(h=5))(i:2.5:=6))
  const std::string filter =
      tlv(ber::context_constructed(0), hex("a3 06 04 01 61 04 01 31"
                                           " a5 06 04 01 62 04 01 32"
                                           " a6 06 04 01 63 04 01 33"
                                           " a8 06 04 01 64 04 01 34"
                                           " 87 01 65"
                                           " a4 0e 04 01 66 30 09 80 01 78 81 01 79 82 01 7a"
                                           " a2 03 87 01 67"
                                           " a1 08 a3 06 04 01 68 04 01 35"
                                           " a9 0b 81 03 32 2e 35 82 01 69 83 01 36"));
  LdapMessage m;
  const std::string pdu = search_with_filter(filter);
  REQUIRE(decode(pdu, m) == "ok");
  const schema::Filter& f = m.search_request.filter;
  struct Expected {
    FilterKind kind;
    std::uint32_t end;
    std::string_view attribute;
    std::string_view value;
  };
  const Expected expected[] = {
      {FilterKind::kAnd, 15, "", ""},
      {FilterKind::kEquality, 2, "a", "1"},
      {FilterKind::kGreaterOrEqual, 3, "b", "2"},
      {FilterKind::kLessOrEqual, 4, "c", "3"},
      {FilterKind::kApprox, 5, "d", "4"},
      {FilterKind::kPresent, 6, "e", ""},
      {FilterKind::kSubstrings, 10, "f", ""},
      {FilterKind::kSubInitial, 8, "", "x"},
      {FilterKind::kSubAny, 9, "", "y"},
      {FilterKind::kSubFinal, 10, "", "z"},
      {FilterKind::kNot, 12, "", ""},
      {FilterKind::kPresent, 12, "g", ""},
      {FilterKind::kOr, 14, "", ""},
      {FilterKind::kEquality, 14, "h", "5"},
      {FilterKind::kExtensible, 15, "i", "6"},
  };
  REQUIRE(f.size() == std::size(expected));
  for (std::uint32_t i = 0; i < f.size(); ++i) {
    INFO("node ", i);
    const FilterNode& node = f.node(i);
    CHECK(schema::filter_kind_name(node.kind) == schema::filter_kind_name(expected[i].kind));
    CHECK(node.end == expected[i].end);
    CHECK(node.attribute == expected[i].attribute);
    CHECK(node.value == expected[i].value);
  }
  CHECK(f.node(14).matching_rule == "2.5");
  CHECK_FALSE(f.node(14).dn_attributes);
}

TEST_CASE("decode_message: rejects a malformed filter") {
  // Offsets are counted from the start of the filter element.
  const auto bad = [](const char* name, std::string_view filter, std::size_t offset,
                      const char* what) {
    return Rejected{name, search_with_filter(hex(filter)), kFilterOffset + offset, what};
  };
  const char* const unknown = "unknown filter choice";
  check_rejected(
      2, {
             bad("an unknown choice tag, [10]", "8a 01 78", 0, unknown),
             bad("present encoded constructed", "a7 03 04 01 78", 0, unknown),
             bad("equality encoded primitive", "83 01 78", 0, unknown),
             bad("no filter (attributes in its place)", "", 0, unknown),
             bad("a substring filter with no pieces", "a4 06 04 02 63 6e 30 00", 8,
                 "substring filter without substrings"),
             bad("initial not first", "a4 0c 04 02 63 6e 30 06 81 01 61 80 01 62", 11,
                 "substring initial not first"),
             bad("two initials", "a4 0c 04 02 63 6e 30 06 80 01 61 80 01 62", 11,
                 "substring initial not first"),
             bad("any after final", "a4 0c 04 02 63 6e 30 06 82 01 61 81 01 62", 11,
                 "substring after the final one"),
             bad("two finals", "a4 0c 04 02 63 6e 30 06 82 01 61 82 01 62", 11,
                 "substring after the final one"),
             bad("an unknown substring choice", "a4 09 04 02 63 6e 30 03 83 01 61", 8,
                 "unknown substring choice"),
             bad("an element after the substrings", "a4 0b 04 02 63 6e 30 03 80 01 61 04 00", 11,
                 kTrailing),
             bad("extensible match without rule and type", "a9 03 83 01 78", 5,
                 "extensible match without a matching rule or a type"),
             bad("extensible match without matchValue", "a9 04 82 02 63 6e", 6, kNoElement),
             bad("extensible match with type before rule", "a9 0a 82 02 63 6e 81 01 72 83 01 78", 6,
                 "unexpected tag"),
             bad("extensible match with dnAttributes 0x01", "a9 09 82 01 61 83 01 78 84 01 01", 10,
                 kBadBoolean),
             bad("an AVA with three elements", "a3 0c 04 03 75 69 64 04 02 6a 64 04 01 78", 11,
                 kTrailing),
             bad("an AVA with one element", "a3 05 04 03 75 69 64", 7, kNoElement),
             bad("not with two filters", "a2 06 87 01 61 87 01 62", 5, kTrailing),
             bad("not with no filter", "a2 00", 2, "filter expected"),
             bad("and holding a non-filter", "a0 05 87 01 61 04 00", 5, unknown),
         });
}

TEST_CASE("decode_message: filters nest up to DecodeLimits.max_depth levels") {
  // max_depth counts constructed levels below the outer SEQUENCE: the SearchRequest is level 1,
  // so max_depth - 1 nested NOTs fit and one more does not.
  LdapMessage m;
  SUBCASE("the default limit, 64") {
    const std::string fits = search_with_filter(nested_nots(63));
    REQUIRE(decode(fits, m) == "ok");
    REQUIRE(m.search_request.filter.size() == 64);
    CHECK(m.search_request.filter.node(0).kind == FilterKind::kNot);
    CHECK(m.search_request.filter.node(0).end == 64);
    CHECK(m.search_request.filter.node(62).kind == FilterKind::kNot);
    CHECK(m.search_request.filter.node(63).kind == FilterKind::kPresent);
    CHECK(m.search_request.filter.node(63).attribute == "a");

    const std::string too_deep = search_with_filter(nested_nots(64));
    // The innermost NOT (5 bytes, before the 2-byte attribute list) is the one refused.
    CHECK(decode(too_deep, m) == malformed_at(too_deep.size() - 7, "nesting too deep"));
    CHECK(m.message_id == 2);
  }
  SUBCASE("a limit of 5, with and/or/not") {
    const DecodeLimits limits{.max_depth = 5};
    // (&(|(!(&(a=*))))) is 4 levels of filter: with the operation, 5.
    const std::string fits = search_with_filter(hex("a0 09 a1 07 a2 05 a0 03 87 01 61"));
    REQUIRE(decode(fits, m, limits) == "ok");
    CHECK(m.search_request.filter.size() == 5);
    // (&(|(!(&(|)))))) is 5 levels of filter.
    const std::string too_deep = search_with_filter(hex("a0 08 a1 06 a2 04 a0 02 a1 00"));
    CHECK(decode(too_deep, m, limits) == malformed_at(kFilterOffset + 8, "nesting too deep"));
  }
  SUBCASE("an equality leaf is one more level") {
    const DecodeLimits limits{.max_depth = 3};
    // (!(uid=jd)): NOT at level 2, the AVA's SEQUENCE at level 3.
    const std::string fits = search_with_filter(hex("a2 0b a3 09 04 03 75 69 64 04 02 6a 64"));
    REQUIRE(decode(fits, m, limits) == "ok");
    const std::string too_deep =
        search_with_filter(hex("a2 0d a2 0b a3 09 04 03 75 69 64 04 02 6a 64"));
    CHECK(decode(too_deep, m, limits) == malformed_at(kFilterOffset + 4, "nesting too deep"));
  }
  SUBCASE("a thousand levels are refused without recursing that deep") {
    const std::string pdu = search_with_filter(nested_nots(1000));
    const Status status = decode_message(pdu, m);
    CHECK(status.code() == StatusCode::kMalformed);
    CHECK(status.message().find(": nesting too deep") != std::string::npos);
  }
}

TEST_CASE("decode_message: accepts an explicit dnAttributes FALSE and TRUE") {
  LdapMessage m;
  std::string pdu;
  SUBCASE("FALSE, with a type") {
    pdu = search_with_filter(hex("a9 0a 82 02 63 6e 83 01 78 84 01 00"));
    REQUIRE(decode(pdu, m) == "ok");
    REQUIRE(m.search_request.filter.size() == 1);
    const FilterNode& node = m.search_request.filter.node(0);
    CHECK(node.kind == FilterKind::kExtensible);
    CHECK(node.attribute == "cn");
    CHECK(node.value == "x");
    CHECK(node.matching_rule.empty());
    CHECK_FALSE(node.dn_attributes);
  }
  SUBCASE("TRUE, with a rule") {
    pdu = search_with_filter(hex("a9 0b 81 03 32 2e 35 83 01 78 84 01 ff"));
    REQUIRE(decode(pdu, m) == "ok");
    REQUIRE(m.search_request.filter.size() == 1);
    const FilterNode& node = m.search_request.filter.node(0);
    CHECK(node.kind == FilterKind::kExtensible);
    CHECK(node.attribute.empty());
    CHECK(node.matching_rule == "2.5");
    CHECK(node.value == "x");
    CHECK(node.dn_attributes);
  }
}

TEST_CASE("decode_message: accepts empty and/or filters (RFC 4526)") {
  LdapMessage m;
  std::string pdu;
  SUBCASE("(&)") {
    pdu = search_with_filter(hex("a0 00"));
    REQUIRE(decode(pdu, m) == "ok");
    REQUIRE(m.search_request.filter.size() == 1);
    CHECK(m.search_request.filter.node(0).kind == FilterKind::kAnd);
    CHECK(m.search_request.filter.node(0).end == 1);
  }
  SUBCASE("(|)") {
    pdu = search_with_filter(hex("a1 00"));
    REQUIRE(decode(pdu, m) == "ok");
    REQUIRE(m.search_request.filter.size() == 1);
    CHECK(m.search_request.filter.node(0).kind == FilterKind::kOr);
    CHECK(m.search_request.filter.node(0).end == 1);
  }
  SUBCASE("(&(|)(a=*))") {
    pdu = search_with_filter(hex("a0 05 a1 00 87 01 61"));
    REQUIRE(decode(pdu, m) == "ok");
    REQUIRE(m.search_request.filter.size() == 3);
    CHECK(m.search_request.filter.node(0).end == 3);
    CHECK(m.search_request.filter.node(1).kind == FilterKind::kOr);
    CHECK(m.search_request.filter.node(1).end == 2);
    CHECK(m.search_request.filter.node(2).kind == FilterKind::kPresent);
  }
}

}  // namespace
}  // namespace numadir::listener::wire
