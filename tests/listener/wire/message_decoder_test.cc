// tests/listener/wire/message_decoder_test.cc: decode_message (listener/wire/message_decoder.h):
// one hand-built PDU per operation, a bad-input test for every rejection rule (each checking the
// offset and problem in the Status), what RFC 4511 allows but OpenLDAP does not send, and reuse
// of one LdapMessage across operations.
#include "listener/wire/message_decoder.h"

#include <doctest/doctest.h>

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

namespace numadir::listener::wire {
namespace {

using schema::FilterKind;
using schema::FilterNode;

// Returns: the bytes spelled by `text`: pairs of hex digits, spaces ignored.
std::string hex(std::string_view text) {
  std::string out;
  int high = -1;
  for (char c : text) {
    if (c == ' ' || c == '\n') {
      continue;
    }
    int digit = -1;
    if (c >= '0' && c <= '9') {
      digit = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      digit = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      digit = c - 'A' + 10;
    }
    NUMADIR_CHECK(digit >= 0, "hex(): not a hex digit");
    if (high < 0) {
      high = digit;
    } else {
      out.push_back(static_cast<char>(high * 16 + digit));
      high = -1;
    }
  }
  NUMADIR_CHECK(high < 0, "hex(): odd number of digits");
  return out;
}

// Returns: the element with identifier `tag` and content `content`, with a minimal length.
// For inputs too big or too deep to spell out in hex.
std::string tlv(std::uint8_t tag, std::string_view content) {
  std::string out(1, static_cast<char>(tag));
  const std::size_t length = content.size();
  if (length < 0x80) {
    out += static_cast<char>(length);
  } else {
    std::string octets;
    for (std::size_t rest = length; rest != 0; rest >>= 8) {
      octets.insert(octets.begin(), static_cast<char>(rest & 0xff));
    }
    out += static_cast<char>(0x80 | octets.size());
    out += octets;
  }
  out += content;
  return out;
}

// Returns: `bytes` with the byte at `index` replaced by `value`.
std::string with_byte(std::string bytes, std::size_t index, std::uint8_t value) {
  NUMADIR_CHECK(index < bytes.size(), "with_byte(): index past the end");
  bytes[index] = static_cast<char>(value);
  return bytes;
}

// Returns: true if `view` lies inside `buffer` (a view into it, not a copy).
bool points_into(std::string_view view, std::string_view buffer) {
  const std::less_equal<const char*> le;
  return le(buffer.data(), view.data()) &&
         le(view.data() + view.size(), buffer.data() + buffer.size());
}

// Returns: "ok" or the Status as text ("malformed: LDAPMessage: offset N: ..."), so that a failed
// CHECK shows what the decoder said.
std::string decode(std::string_view pdu, LdapMessage& message, const DecodeLimits& limits = {}) {
  const Status status = decode_message(pdu, message, limits);
  return status.ok() ? "ok" : status.to_string();
}

// Returns: the text of the kMalformed Status decode_message gives for `what` at `offset`.
std::string malformed_at(std::size_t offset, std::string_view what) {
  return "malformed: LDAPMessage: offset " + std::to_string(offset) + ": " + std::string(what);
}

// SearchRequest, ID 2: base "dc=x", wholeSubtree, derefAlways, sizeLimit 10, timeLimit 20,
// typesOnly FALSE, (&(uid=jd)(objectClass=*)), attributes cn and 1.1. Byte offsets of the
// fields' content: scope 15, deref 18, sizeLimit 21, timeLimit 24, typesOnly 27; filter at 28.
const std::string kSearch =
    hex("30 3f 02 01 02 63 3a"
        " 04 04 64 63 3d 78 0a 01 02 0a 01 03 02 01 0a 02 01 14 01 01 00"
        " a0 18 a3 09 04 03 75 69 64 04 02 6a 64 87 0b 6f 62 6a 65 63 74 43 6c 61 73 73"
        " 30 09 04 02 63 6e 04 03 31 2e 31");
constexpr std::size_t kScopeOffset = 15;
constexpr std::size_t kDerefOffset = 18;
constexpr std::size_t kSizeLimitOffset = 21;
constexpr std::size_t kTimeLimitOffset = 24;
constexpr std::size_t kTypesOnlyOffset = 27;

// BindRequest, ID 1: version 3, "cn=a", simple "pw". The authentication choice is at 16.
const std::string kSimpleBind = hex("30 12 02 01 01 60 0d 02 01 03 04 04 63 6e 3d 61 80 02 70 77");

// Returns: a SearchRequest (ID 2, base "", baseObject, no limits, no attributes) with `filter`
// as its filter element, which starts at kFilterOffset while the PDU is under 128 bytes.
std::string search_with_filter(std::string_view filter) {
  return tlv(ber::kSequence,
             hex("02 01 02") + tlv(ber::application_constructed(3),
                                   hex("04 00 0a 01 00 0a 01 00 02 01 00 02 01 00 01 01 00") +
                                       std::string(filter) + hex("30 00")));
}
constexpr std::size_t kFilterOffset = 24;

// Returns: `count` nested NOT filters around (a=*).
std::string nested_nots(std::size_t count) {
  std::string filter = hex("87 01 61");
  for (std::size_t i = 0; i < count; ++i) {
    filter = tlv(ber::context_constructed(2), filter);
  }
  return filter;
}

// ---------------------------------------------------------------------------------------------
// One positive decode per operation.

TEST_CASE("decode_message: BindRequest, simple") {
  LdapMessage m;
  REQUIRE(decode(kSimpleBind, m) == "ok");
  CHECK(m.message_id == 1);
  CHECK(m.op == ProtocolOp::kBindRequest);
  CHECK(m.bind_request.version == 3);
  CHECK(m.bind_request.name == "cn=a");
  CHECK(m.bind_request.method == BindMethod::kSimple);
  CHECK(m.bind_request.simple_password == "pw");
  CHECK(m.controls.empty());
  // Strings are views into the PDU.
  CHECK(m.bind_request.name.data() == kSimpleBind.data() + 12);
  CHECK(points_into(m.bind_request.simple_password, kSimpleBind));
}

TEST_CASE("decode_message: BindRequest, SASL") {
  LdapMessage m;
  std::string pdu;
  SUBCASE("with credentials") {
    pdu = hex("30 19 02 01 02 60 14 02 01 03 04 00 a3 0d 04 05 50 4c 41 49 4e 04 04 00 75 00 70");
    REQUIRE(decode(pdu, m) == "ok");
    CHECK(m.bind_request.sasl_credentials == std::string_view("\0u\0p", 4));
    CHECK(points_into(*m.bind_request.sasl_credentials, pdu));
  }
  SUBCASE("without credentials") {
    pdu = hex("30 13 02 01 02 60 0e 02 01 03 04 00 a3 07 04 05 50 4c 41 49 4e");
    REQUIRE(decode(pdu, m) == "ok");
    CHECK_FALSE(m.bind_request.sasl_credentials.has_value());
  }
  CHECK(m.message_id == 2);
  CHECK(m.op == ProtocolOp::kBindRequest);
  CHECK(m.bind_request.version == 3);
  CHECK(m.bind_request.name.empty());
  CHECK(m.bind_request.method == BindMethod::kSasl);
  CHECK(m.bind_request.sasl_mechanism == "PLAIN");
}

TEST_CASE("decode_message: BindResponse with serverSaslCreds") {
  const std::string pdu = hex("30 10 02 01 01 61 0b 0a 01 0e 04 00 04 00 87 02 78 79");
  LdapMessage m;
  REQUIRE(decode(pdu, m) == "ok");
  CHECK(m.message_id == 1);
  CHECK(m.op == ProtocolOp::kBindResponse);
  CHECK(m.result.code == ResultCode::kSaslBindInProgress);
  CHECK(m.result.matched_dn.empty());
  CHECK(m.result.diagnostic_message.empty());
  CHECK(m.result.referrals.empty());
  CHECK(m.server_sasl_creds == std::string_view("xy"));
}

TEST_CASE("decode_message: UnbindRequest") {
  LdapMessage m;
  std::string pdu;
  pdu = hex("30 05 02 01 03 42 00");
  REQUIRE(decode(pdu, m) == "ok");
  CHECK(m.message_id == 3);
  CHECK(m.op == ProtocolOp::kUnbindRequest);
  CHECK(m.controls.empty());
}

TEST_CASE("decode_message: SearchRequest") {
  LdapMessage m;
  std::string pdu;
  REQUIRE(decode(kSearch, m) == "ok");
  CHECK(m.message_id == 2);
  CHECK(m.op == ProtocolOp::kSearchRequest);
  const SearchRequest& s = m.search_request;
  CHECK(s.base_object == "dc=x");
  CHECK(s.scope == SearchScope::kWholeSubtree);
  CHECK(s.deref_aliases == DerefAliases::kAlways);
  CHECK(s.size_limit == 10);
  CHECK(s.time_limit == 20);
  CHECK_FALSE(s.types_only);
  REQUIRE(s.filter.size() == 3);
  CHECK(s.filter.node(0).kind == FilterKind::kAnd);
  CHECK(s.filter.node(0).end == 3);
  CHECK(s.filter.node(1).kind == FilterKind::kEquality);
  CHECK(s.filter.node(1).attribute == "uid");
  CHECK(s.filter.node(1).value == "jd");
  CHECK(s.filter.node(1).end == 2);
  CHECK(s.filter.node(2).kind == FilterKind::kPresent);
  CHECK(s.filter.node(2).attribute == "objectClass");
  CHECK(s.filter.node(2).end == 3);
  REQUIRE(s.attributes.size() == 2);
  CHECK(s.attributes[0] == "cn");
  CHECK(s.attributes[1] == "1.1");
  CHECK(points_into(s.filter.node(1).value, kSearch));
  CHECK(points_into(s.attributes[1], kSearch));

  SUBCASE("typesOnly TRUE") {
    pdu = with_byte(kSearch, kTypesOnlyOffset, 0xff);
    REQUIRE(decode(pdu, m) == "ok");
    CHECK(m.search_request.types_only);
  }
}

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
  std::string pdu;
  pdu = search_with_filter(filter);
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

TEST_CASE("decode_message: SearchResultEntry") {
  const std::string pdu =
      hex("30 25 02 01 02 64 20 04 04 63 6e 3d 61 30 18"
          " 30 0c 04 02 63 6e 31 06 04 01 61 04 01 62"
          " 30 08 04 04 6d 61 69 6c 31 00");
  LdapMessage m;
  REQUIRE(decode(pdu, m) == "ok");
  CHECK(m.message_id == 2);
  CHECK(m.op == ProtocolOp::kSearchResultEntry);
  CHECK(m.search_entry.object_name == "cn=a");
  const AttributeList& attributes = m.search_entry.attributes;
  REQUIRE(attributes.size() == 2);
  CHECK(attributes[0].type == "cn");
  REQUIRE(attributes.values(attributes[0]).size() == 2);
  CHECK(attributes.values(attributes[0])[0] == "a");
  CHECK(attributes.values(attributes[0])[1] == "b");
  CHECK(attributes[1].type == "mail");
  CHECK(attributes.values(attributes[1]).empty());
}

TEST_CASE("decode_message: SearchResultDone with a referral") {
  const std::string pdu =
      hex("30 20 02 01 02 65 1b 0a 01 0a 04 04 64 63 3d 78 04 03 73 65 65"
          " a3 0b 04 09 6c 64 61 70 3a 2f 2f 61 2f");
  LdapMessage m;
  REQUIRE(decode(pdu, m) == "ok");
  CHECK(m.op == ProtocolOp::kSearchResultDone);
  CHECK(m.result.code == ResultCode::kReferral);
  CHECK(m.result.matched_dn == "dc=x");
  CHECK(m.result.diagnostic_message == "see");
  REQUIRE(m.result.referrals.size() == 1);
  CHECK(m.result.referrals[0] == "ldap://a/");
}

TEST_CASE("decode_message: responses made of an LDAPResult only") {
  struct Case {
    std::uint8_t tag;
    ProtocolOp op;
  };
  const Case cases[] = {
      {0x65, ProtocolOp::kSearchResultDone}, {0x67, ProtocolOp::kModifyResponse},
      {0x69, ProtocolOp::kAddResponse},      {0x6b, ProtocolOp::kDelResponse},
      {0x6d, ProtocolOp::kModifyDnResponse}, {0x6f, ProtocolOp::kCompareResponse},
  };
  for (const Case& c : cases) {
    INFO("tag: ", static_cast<int>(c.tag));
    // insufficientAccessRights (50), matchedDN "", diagnosticMessage "no".
    const std::string pdu =
        with_byte(hex("30 0e 02 01 04 00 09 0a 01 32 04 00 04 02 6e 6f"), 5, c.tag);
    LdapMessage m;
    REQUIRE(decode(pdu, m) == "ok");
    CHECK(m.message_id == 4);
    CHECK(protocol_op_name(m.op) == protocol_op_name(c.op));
    CHECK(m.result.code == ResultCode::kInsufficientAccessRights);
    CHECK(m.result.matched_dn.empty());
    CHECK(m.result.diagnostic_message == "no");
    CHECK(m.result.referrals.empty());
  }
}

TEST_CASE("decode_message: ModifyRequest") {
  const std::string pdu =
      hex("30 46 02 01 04 66 41 04 04 63 6e 3d 61 30 39"
          " 30 12 0a 01 02 30 0d 04 04 6d 61 69 6c 31 05 04 03 78 40 79"
          " 30 14 0a 01 01 30 0f 04 0b 64 65 73 63 72 69 70 74 69 6f 6e 31 00"
          " 30 0d 0a 01 03 30 08 04 01 6e 31 03 04 01 31");
  LdapMessage m;
  REQUIRE(decode(pdu, m) == "ok");
  CHECK(m.message_id == 4);
  CHECK(m.op == ProtocolOp::kModifyRequest);
  const ModifyRequest& modify = m.modify_request;
  CHECK(modify.object == "cn=a");
  REQUIRE(modify.operations.size() == 3);
  CHECK(modify.operations[0] == ModifyOperation::kReplace);
  CHECK(modify.operations[1] == ModifyOperation::kDelete);
  CHECK(modify.operations[2] == ModifyOperation::kIncrement);
  const AttributeList& mods = modify.modifications;
  REQUIRE(mods.size() == 3);
  CHECK(mods[0].type == "mail");
  REQUIRE(mods.values(mods[0]).size() == 1);
  CHECK(mods.values(mods[0])[0] == "x@y");
  CHECK(mods[1].type == "description");
  CHECK(mods.values(mods[1]).empty());
  CHECK(mods[2].type == "n");
  REQUIRE(mods.values(mods[2]).size() == 1);
  CHECK(mods.values(mods[2])[0] == "1");
}

TEST_CASE("decode_message: AddRequest") {
  const std::string pdu = hex(
      "30 36 02 01 05 68 31 04 04 63 6e 3d 61 30 29"
      " 30 1c 04 0b 6f 62 6a 65 63 74 43 6c 61 73 73 31 0d 04 06 70 65 72 73 6f 6e 04 03 74 6f 70"
      " 30 09 04 02 63 6e 31 03 04 01 61");
  LdapMessage m;
  REQUIRE(decode(pdu, m) == "ok");
  CHECK(m.message_id == 5);
  CHECK(m.op == ProtocolOp::kAddRequest);
  CHECK(m.add_request.entry == "cn=a");
  const AttributeList& attributes = m.add_request.attributes;
  REQUIRE(attributes.size() == 2);
  CHECK(attributes[0].type == "objectClass");
  REQUIRE(attributes.values(attributes[0]).size() == 2);
  CHECK(attributes.values(attributes[0])[0] == "person");
  CHECK(attributes.values(attributes[0])[1] == "top");
  CHECK(attributes[1].type == "cn");
  REQUIRE(attributes.values(attributes[1]).size() == 1);
  CHECK(attributes.values(attributes[1])[0] == "a");
}

TEST_CASE("decode_message: DelRequest") {
  const std::string pdu = hex("30 09 02 01 06 4a 04 63 6e 3d 61");
  LdapMessage m;
  REQUIRE(decode(pdu, m) == "ok");
  CHECK(m.message_id == 6);
  CHECK(m.op == ProtocolOp::kDelRequest);
  CHECK(m.dn == "cn=a");
  CHECK(m.dn.data() == pdu.data() + 7);
}

TEST_CASE("decode_message: ModifyDNRequest") {
  LdapMessage m;
  std::string pdu;
  SUBCASE("with newSuperior") {
    pdu =
        hex("30 1f 02 01 07 6c 1a 04 09 63 6e 3d 61 2c 64 63 3d 78 04 04 63 6e 3d 62"
            " 01 01 ff 80 04 64 63 3d 79");
    REQUIRE(decode(pdu, m) == "ok");
    CHECK(m.modify_dn_request.delete_old_rdn);
    CHECK(m.modify_dn_request.new_superior == std::string_view("dc=y"));
  }
  SUBCASE("without newSuperior") {
    pdu =
        hex("30 19 02 01 07 6c 14 04 09 63 6e 3d 61 2c 64 63 3d 78 04 04 63 6e 3d 62"
            " 01 01 00");
    REQUIRE(decode(pdu, m) == "ok");
    CHECK_FALSE(m.modify_dn_request.delete_old_rdn);
    CHECK_FALSE(m.modify_dn_request.new_superior.has_value());
  }
  CHECK(m.message_id == 7);
  CHECK(m.op == ProtocolOp::kModifyDnRequest);
  CHECK(m.modify_dn_request.entry == "cn=a,dc=x");
  CHECK(m.modify_dn_request.new_rdn == "cn=b");
}

TEST_CASE("decode_message: CompareRequest") {
  LdapMessage m;
  std::string pdu;
  pdu = hex("30 16 02 01 08 6e 11 04 04 63 6e 3d 61 30 09 04 03 75 69 64 04 02 6a 64");
  REQUIRE(decode(pdu, m) == "ok");
  CHECK(m.message_id == 8);
  CHECK(m.op == ProtocolOp::kCompareRequest);
  CHECK(m.compare_request.entry == "cn=a");
  CHECK(m.compare_request.attribute == "uid");
  CHECK(m.compare_request.value == "jd");
}

TEST_CASE("decode_message: AbandonRequest") {
  LdapMessage m;
  std::string pdu;
  pdu = hex("30 06 02 01 09 50 01 05");
  REQUIRE(decode(pdu, m) == "ok");
  CHECK(m.message_id == 9);
  CHECK(m.op == ProtocolOp::kAbandonRequest);
  CHECK(m.abandon_id == 5);
}

TEST_CASE("decode_message: SearchResultReference") {
  LdapMessage m;
  std::string pdu;
  pdu =
      hex("30 1b 02 01 02 73 16 04 09 6c 64 61 70 3a 2f 2f 61 2f"
          " 04 09 6c 64 61 70 3a 2f 2f 62 2f");
  REQUIRE(decode(pdu, m) == "ok");
  CHECK(m.message_id == 2);
  CHECK(m.op == ProtocolOp::kSearchResultReference);
  REQUIRE(m.uris.size() == 2);
  CHECK(m.uris[0] == "ldap://a/");
  CHECK(m.uris[1] == "ldap://b/");
}

TEST_CASE("decode_message: ExtendedRequest") {
  LdapMessage m;
  std::string pdu;
  SUBCASE("with a value") {
    pdu = hex("30 0f 02 01 0a 77 0a 80 05 31 2e 32 2e 33 81 01 76");
    REQUIRE(decode(pdu, m) == "ok");
    CHECK(m.extended.value == std::string_view("v"));
  }
  SUBCASE("without a value") {
    pdu = hex("30 0c 02 01 0a 77 07 80 05 31 2e 32 2e 33");
    REQUIRE(decode(pdu, m) == "ok");
    CHECK_FALSE(m.extended.value.has_value());
  }
  CHECK(m.message_id == 10);
  CHECK(m.op == ProtocolOp::kExtendedRequest);
  CHECK(m.extended.name == std::string_view("1.2.3"));
}

TEST_CASE("decode_message: ExtendedResponse") {
  LdapMessage m;
  std::string pdu;
  pdu =
      hex("30 19 02 01 00 78 14 0a 01 02 04 00 04 03 62 79 65"
          " 8a 05 31 2e 32 2e 33 8b 01 76");
  REQUIRE(decode(pdu, m) == "ok");
  CHECK(m.message_id == 0);
  CHECK(m.op == ProtocolOp::kExtendedResponse);
  CHECK(m.result.code == ResultCode::kProtocolError);
  CHECK(m.result.diagnostic_message == "bye");
  CHECK(m.extended.name == std::string_view("1.2.3"));
  CHECK(m.extended.value == std::string_view("v"));
}

TEST_CASE("decode_message: IntermediateResponse") {
  LdapMessage m;
  std::string pdu;
  SUBCASE("with name and value") {
    pdu = hex("30 0f 02 01 03 79 0a 80 05 31 2e 32 2e 33 81 01 76");
    REQUIRE(decode(pdu, m) == "ok");
    CHECK(m.extended.name == std::string_view("1.2.3"));
    CHECK(m.extended.value == std::string_view("v"));
  }
  SUBCASE("empty") {
    pdu = hex("30 05 02 01 03 79 00");
    REQUIRE(decode(pdu, m) == "ok");
    CHECK_FALSE(m.extended.name.has_value());
    CHECK_FALSE(m.extended.value.has_value());
  }
  CHECK(m.message_id == 3);
  CHECK(m.op == ProtocolOp::kIntermediateResponse);
}

TEST_CASE("decode_message: controls") {
  // DelRequest "cn=a" with controls { 1.2.3 critical "ab" }, { 1.4 }.
  const std::string pdu =
      hex("30 22 02 01 06 4a 04 63 6e 3d 61 a0 17"
          " 30 0e 04 05 31 2e 32 2e 33 01 01 ff 04 02 61 62"
          " 30 05 04 03 31 2e 34");
  LdapMessage m;
  REQUIRE(decode(pdu, m) == "ok");
  CHECK(m.op == ProtocolOp::kDelRequest);
  CHECK(m.dn == "cn=a");
  REQUIRE(m.controls.size() == 2);
  CHECK(m.controls[0].type == "1.2.3");
  CHECK(m.controls[0].criticality);
  CHECK(m.controls[0].value == std::string_view("ab"));
  CHECK(m.controls[1].type == "1.4");
  CHECK_FALSE(m.controls[1].criticality);
  CHECK_FALSE(m.controls[1].value.has_value());
  CHECK(points_into(m.controls[0].type, pdu));
}

TEST_CASE("decode_message: message IDs 0 and 2^31 - 1") {
  LdapMessage m;
  std::string pdu;
  pdu = hex("30 05 02 01 00 42 00");
  REQUIRE(decode(pdu, m) == "ok");
  CHECK(m.message_id == 0);
  pdu = hex("30 08 02 04 7f ff ff ff 42 00");
  REQUIRE(decode(pdu, m) == "ok");
  CHECK(m.message_id == std::numeric_limits<std::int32_t>::max());
}

// ---------------------------------------------------------------------------------------------
// Rejections at the message level. Each checks the whole Status text: code kMalformed, the
// offset and the problem.

TEST_CASE("decode_message: the Status is kMalformed and names the offset") {
  LdapMessage m;
  const Status status = decode_message(hex("31 05 02 01 01 42 00"), m);
  CHECK(status.code() == StatusCode::kMalformed);
  CHECK(status.message().find("offset") != std::string::npos);
  CHECK(status.message() == "LDAPMessage: offset 0: unexpected tag");
}

TEST_CASE("decode_message: rejects a PDU that is not one SEQUENCE") {
  std::string pdu;
  std::size_t offset = 0;
  const char* what = "";
  SUBCASE("SET") {
    pdu = hex("31 05 02 01 01 42 00");
    what = "unexpected tag";
  }
  SUBCASE("OCTET STRING") {
    pdu = hex("04 05 02 01 01 42 00");
    what = "unexpected tag";
  }
  SUBCASE("empty") { what = "element expected, end of data found"; }
  SUBCASE("truncated") {
    pdu = hex("30 05 02 01 01 42");
    what = "length past the end of the enclosing element";
  }
  SUBCASE("indefinite length") {
    pdu = hex("30 80 02 01 01 42 00 00 00");
    offset = 1;
    what = "indefinite length (LDAP allows only definite lengths)";
  }
  SUBCASE("a trailing byte") {
    pdu = hex("30 05 02 01 01 42 00 00");
    offset = 7;
    what = "unexpected data after the last element";
  }
  SUBCASE("a second PDU") {
    pdu = hex("30 05 02 01 01 42 00 30 05 02 01 02 42 00");
    offset = 7;
    what = "unexpected data after the last element";
  }
  LdapMessage m;
  CHECK(decode(pdu, m) == malformed_at(offset, what));
}

TEST_CASE("decode_message: rejects a bad message ID") {
  std::string pdu;
  std::size_t offset = 4;
  const char* what = "";
  SUBCASE("negative") {
    pdu = hex("30 05 02 01 ff 42 00");
    what = "negative integer not allowed here";
  }
  SUBCASE("non-minimal") {
    pdu = hex("30 06 02 02 00 01 42 00");
    what = "integer not minimally encoded";
  }
  SUBCASE("over 2^31 - 1") {
    pdu = hex("30 09 02 05 00 80 00 00 00 42 00");
    what = "integer out of range";
  }
  SUBCASE("empty") {
    pdu = hex("30 04 02 00 42 00");
    what = "empty integer";
  }
  SUBCASE("missing") {
    pdu = hex("30 02 42 00");
    offset = 2;
    what = "unexpected tag";
  }
  SUBCASE("an ENUMERATED") {
    pdu = hex("30 05 0a 01 01 42 00");
    offset = 2;
    what = "unexpected tag";
  }
  SUBCASE("an empty SEQUENCE") {
    pdu = hex("30 00");
    offset = 2;
    what = "element expected, end of data found";
  }
  LdapMessage m;
  m.message_id = 99;
  CHECK(decode(pdu, m) == malformed_at(offset, what));
  CHECK(m.message_id == 0);
}

TEST_CASE("decode_message: rejects an unknown or missing protocolOp") {
  std::string pdu;
  std::size_t offset = 5;
  const char* what = "unknown protocolOp";
  SUBCASE("[APPLICATION 30] primitive") { pdu = hex("30 05 02 01 01 5e 00"); }
  SUBCASE("[APPLICATION 30] constructed") { pdu = hex("30 05 02 01 01 7e 00"); }
  SUBCASE("[APPLICATION 17] (unassigned)") { pdu = hex("30 05 02 01 01 71 00"); }
  SUBCASE("[APPLICATION 31+] (multi-octet tag)") { pdu = hex("30 06 02 01 01 7f 20 00"); }
  SUBCASE("a context-class tag") { pdu = hex("30 05 02 01 01 a0 00"); }
  SUBCASE("a private-class tag with an operation's number") { pdu = hex("30 05 02 01 01 c2 00"); }
  SUBCASE("a universal tag") { pdu = hex("30 05 02 01 01 04 00"); }
  SUBCASE("missing") {
    pdu = hex("30 03 02 01 01");
    what = "protocolOp expected";
  }
  LdapMessage m;
  CHECK(decode(pdu, m) == malformed_at(offset, what));
  CHECK(m.message_id == 1);
}

TEST_CASE("decode_message: rejects an operation in the wrong form") {
  std::string pdu;
  SUBCASE("UnbindRequest constructed (0x62)") { pdu = hex("30 05 02 01 01 62 00"); }
  SUBCASE("DelRequest constructed (0x6a)") { pdu = hex("30 0b 02 01 01 6a 06 04 04 63 6e 3d 61"); }
  SUBCASE("AbandonRequest constructed (0x70)") { pdu = hex("30 08 02 01 01 70 03 02 01 05"); }
  SUBCASE("BindRequest primitive (0x40)") { pdu = with_byte(kSimpleBind, 5, 0x40); }
  SUBCASE("SearchResultDone primitive (0x45)") {
    pdu = hex("30 0c 02 01 01 45 07 0a 01 00 04 00 04 00");
  }
  LdapMessage m;
  CHECK(decode(pdu, m) == malformed_at(5, "unexpected tag"));
  CHECK(m.message_id == 1);
}

TEST_CASE("decode_message: rejects an UnbindRequest with content") {
  LdapMessage m;
  CHECK(decode(hex("30 06 02 01 01 42 01 00"), m) == malformed_at(7, "NULL with content"));
  CHECK(m.message_id == 1);
}

TEST_CASE("decode_message: rejects a BindRequest with a bad version") {
  std::string pdu;
  const char* what = "integer out of range";
  SUBCASE("0") { pdu = with_byte(kSimpleBind, 9, 0x00); }
  SUBCASE("128") { pdu = hex("30 13 02 01 01 60 0e 02 02 00 80 04 04 63 6e 3d 61 80 02 70 77"); }
  SUBCASE("-1") {
    pdu = with_byte(kSimpleBind, 9, 0xff);
    what = "negative integer not allowed here";
  }
  LdapMessage m;
  CHECK(decode(pdu, m) == malformed_at(9, what));
  CHECK(m.message_id == 1);
}

TEST_CASE("decode_message: rejects a BindRequest with a bad authentication choice") {
  std::string pdu;
  std::size_t offset = 16;
  const char* what = "unknown bind authentication choice";
  SUBCASE("[1] (unused by LDAPv3)") { pdu = with_byte(kSimpleBind, 16, 0x81); }
  SUBCASE("[0] constructed") { pdu = with_byte(kSimpleBind, 16, 0xa0); }
  SUBCASE("[3] primitive") { pdu = with_byte(kSimpleBind, 16, 0x83); }
  SUBCASE("missing") {
    pdu = hex("30 0e 02 01 01 60 09 02 01 03 04 04 63 6e 3d 61");
    what = "bind authentication choice expected";
  }
  SUBCASE("an element after the password") {
    pdu = hex("30 15 02 01 01 60 10 02 01 03 04 04 63 6e 3d 61 80 02 70 77 04 01 78");
    offset = 20;
    what = "unexpected data after the last element";
  }
  SUBCASE("SASL with an element after the credentials") {
    pdu = hex("30 19 02 01 01 60 14 02 01 03 04 00 a3 0d 04 05 50 4c 41 49 4e 04 01 78 04 01 79");
    offset = 24;
    what = "unexpected data after the last element";
  }
  SUBCASE("SASL without a mechanism") {
    pdu = hex("30 0c 02 01 01 60 07 02 01 03 04 00 a3 00");
    offset = 14;
    what = "element expected, end of data found";
  }
  LdapMessage m;
  CHECK(decode(pdu, m) == malformed_at(offset, what));
  CHECK(m.message_id == 1);
}

TEST_CASE("decode_message: rejects a SearchRequest with a bad scope, deref or limit") {
  std::string pdu;
  std::size_t offset = 0;
  const char* what = "";
  SUBCASE("scope 4") {
    pdu = with_byte(kSearch, kScopeOffset, 0x04);
    offset = kScopeOffset;
    what = "integer out of range";
  }
  SUBCASE("scope as an INTEGER") {
    pdu = with_byte(kSearch, kScopeOffset - 2, ber::kInteger);
    offset = kScopeOffset - 2;
    what = "unexpected tag";
  }
  SUBCASE("derefAliases 4") {
    pdu = with_byte(kSearch, kDerefOffset, 0x04);
    offset = kDerefOffset;
    what = "integer out of range";
  }
  SUBCASE("sizeLimit -1") {
    pdu = with_byte(kSearch, kSizeLimitOffset, 0xff);
    offset = kSizeLimitOffset;
    what = "negative integer not allowed here";
  }
  SUBCASE("timeLimit -1") {
    pdu = with_byte(kSearch, kTimeLimitOffset, 0xff);
    offset = kTimeLimitOffset;
    what = "negative integer not allowed here";
  }
  SUBCASE("typesOnly 0x01") {
    pdu = with_byte(kSearch, kTypesOnlyOffset, 0x01);
    offset = kTypesOnlyOffset;
    what = "boolean TRUE not encoded as 0xFF (RFC 4511 5.1)";
  }
  SUBCASE("typesOnly of length 2") {
    pdu =
        hex("30 40 02 01 02 63 3b"
            " 04 04 64 63 3d 78 0a 01 02 0a 01 03 02 01 0a 02 01 14 01 02 00 00"
            " a0 18 a3 09 04 03 75 69 64 04 02 6a 64 87 0b 6f 62 6a 65 63 74 43 6c 61 73 73"
            " 30 09 04 02 63 6e 04 03 31 2e 31");
    offset = kTypesOnlyOffset;
    what = "boolean of length other than 1";
  }
  SUBCASE("an attribute that is not an OCTET STRING") {
    pdu = with_byte(kSearch, kSearch.size() - 5, ber::kInteger);
    offset = kSearch.size() - 5;
    what = "unexpected tag";
  }
  LdapMessage m;
  CHECK(decode(pdu, m) == malformed_at(offset, what));
  CHECK(m.message_id == 2);
}

TEST_CASE("decode_message: rejects a malformed filter") {
  std::string filter;
  std::size_t offset = 0;  // From the start of the filter element.
  const char* what = "";
  SUBCASE("an unknown choice tag, [10]") {
    filter = hex("8a 01 78");
    what = "unknown filter choice";
  }
  SUBCASE("present encoded constructed") {
    filter = hex("a7 03 04 01 78");
    what = "unknown filter choice";
  }
  SUBCASE("equality encoded primitive") {
    filter = hex("83 01 78");
    what = "unknown filter choice";
  }
  SUBCASE("a substring filter with no pieces") {
    filter = hex("a4 06 04 02 63 6e 30 00");
    offset = 8;
    what = "substring filter without substrings";
  }
  SUBCASE("initial not first") {
    filter = hex("a4 0c 04 02 63 6e 30 06 81 01 61 80 01 62");
    offset = 11;
    what = "substring initial not first";
  }
  SUBCASE("two initials") {
    filter = hex("a4 0c 04 02 63 6e 30 06 80 01 61 80 01 62");
    offset = 11;
    what = "substring initial not first";
  }
  SUBCASE("any after final") {
    filter = hex("a4 0c 04 02 63 6e 30 06 82 01 61 81 01 62");
    offset = 11;
    what = "substring after the final one";
  }
  SUBCASE("two finals") {
    filter = hex("a4 0c 04 02 63 6e 30 06 82 01 61 82 01 62");
    offset = 11;
    what = "substring after the final one";
  }
  SUBCASE("an unknown substring choice") {
    filter = hex("a4 09 04 02 63 6e 30 03 83 01 61");
    offset = 8;
    what = "unknown substring choice";
  }
  SUBCASE("an element after the substrings") {
    filter = hex("a4 0b 04 02 63 6e 30 03 80 01 61 04 00");
    offset = 11;
    what = "unexpected data after the last element";
  }
  SUBCASE("extensible match without rule and type") {
    filter = hex("a9 03 83 01 78");
    offset = 5;
    what = "extensible match without a matching rule or a type";
  }
  SUBCASE("extensible match without matchValue") {
    filter = hex("a9 04 82 02 63 6e");
    offset = 6;
    what = "element expected, end of data found";
  }
  SUBCASE("extensible match with type before rule") {
    filter = hex("a9 0a 82 02 63 6e 81 01 72 83 01 78");
    offset = 6;
    what = "unexpected tag";
  }
  SUBCASE("extensible match with dnAttributes 0x01") {
    filter = hex("a9 09 82 01 61 83 01 78 84 01 01");
    offset = 10;
    what = "boolean TRUE not encoded as 0xFF (RFC 4511 5.1)";
  }
  SUBCASE("an AVA with three elements") {
    filter = hex("a3 0c 04 03 75 69 64 04 02 6a 64 04 01 78");
    offset = 11;
    what = "unexpected data after the last element";
  }
  SUBCASE("an AVA with one element") {
    filter = hex("a3 05 04 03 75 69 64");
    offset = 7;
    what = "element expected, end of data found";
  }
  SUBCASE("not with two filters") {
    filter = hex("a2 06 87 01 61 87 01 62");
    offset = 5;
    what = "unexpected data after the last element";
  }
  SUBCASE("not with no filter") {
    filter = hex("a2 00");
    offset = 2;
    what = "filter expected";
  }
  SUBCASE("and holding something that is not a filter") {
    filter = hex("a0 05 87 01 61 04 00");
    offset = 5;
    what = "unknown filter choice";
  }
  SUBCASE("no filter (the attribute list in its place)") { what = "unknown filter choice"; }
  LdapMessage m;
  CHECK(decode(search_with_filter(filter), m) == malformed_at(kFilterOffset + offset, what));
  CHECK(m.message_id == 2);
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

TEST_CASE("decode_message: rejects an LDAPResult with an empty referral") {
  LdapMessage m;
  CHECK(decode(hex("30 0e 02 01 02 65 09 0a 01 0a 04 00 04 00 a3 00"), m) ==
        malformed_at(16, "empty referral (SIZE (1..MAX))"));
  CHECK(m.message_id == 2);
}

TEST_CASE("decode_message: rejects a bad LDAPResult") {
  std::string pdu;
  std::size_t offset = 0;
  const char* what = "";
  SUBCASE("resultCode as an INTEGER") {
    pdu = hex("30 0c 02 01 02 65 07 02 01 00 04 00 04 00");
    offset = 7;
    what = "unexpected tag";
  }
  SUBCASE("no diagnosticMessage") {
    pdu = hex("30 0a 02 01 02 65 05 0a 01 00 04 00");
    offset = 12;
    what = "element expected, end of data found";
  }
  SUBCASE("a referral holding a non-string") {
    pdu = hex("30 10 02 01 02 65 0b 0a 01 0a 04 00 04 00 a3 02 30 00");
    offset = 16;
    what = "unexpected tag";
  }
  SUBCASE("an element after the LDAPResult") {
    pdu = hex("30 0e 02 01 02 65 09 0a 01 00 04 00 04 00 04 00");
    offset = 14;
    what = "unexpected data after the last element";
  }
  LdapMessage m;
  CHECK(decode(pdu, m) == malformed_at(offset, what));
}

TEST_CASE("decode_message: rejects an empty SearchResultReference") {
  LdapMessage m;
  CHECK(decode(hex("30 05 02 01 02 73 00"), m) == malformed_at(7, "empty search result reference"));
  CHECK(m.message_id == 2);
}

TEST_CASE("decode_message: rejects an ExtendedRequest without requestName") {
  std::string pdu;
  const char* what = "";
  SUBCASE("only a requestValue") {
    pdu = hex("30 08 02 01 01 77 03 81 01 76");
    what = "unexpected tag";
  }
  SUBCASE("empty") {
    pdu = hex("30 05 02 01 01 77 00");
    what = "element expected, end of data found";
  }
  SUBCASE("requestValue before requestName") {
    pdu = hex("30 0f 02 01 01 77 0a 81 01 76 80 05 31 2e 32 2e 33");
    what = "unexpected tag";
  }
  LdapMessage m;
  CHECK(decode(pdu, m) == malformed_at(7, what));
  CHECK(m.message_id == 1);
}

TEST_CASE("decode_message: rejects malformed controls") {
  // All are DelRequest "cn=a", ID 6; the controls start at offset 11.
  std::string pdu;
  std::size_t offset = 0;
  const char* what = "";
  SUBCASE("criticality 0x01") {
    pdu = hex("30 15 02 01 06 4a 04 63 6e 3d 61 a0 0a 30 08 04 03 31 2e 34 01 01 01");
    offset = 22;
    what = "boolean TRUE not encoded as 0xFF (RFC 4511 5.1)";
  }
  SUBCASE("criticality of length 0") {
    pdu = hex("30 14 02 01 06 4a 04 63 6e 3d 61 a0 09 30 07 04 03 31 2e 34 01 00");
    offset = 22;
    what = "boolean of length other than 1";
  }
  SUBCASE("an extra element inside a control") {
    pdu = hex(
        "30 1b 02 01 06 4a 04 63 6e 3d 61 a0 10 30 0e 04 03 31 2e 34 01 01 ff 04 01 76 04 01 77");
    offset = 26;
    what = "unexpected data after the last element";
  }
  SUBCASE("controlValue before criticality") {
    pdu = hex("30 18 02 01 06 4a 04 63 6e 3d 61 a0 0d 30 0b 04 03 31 2e 34 04 01 76 01 01 ff");
    offset = 23;
    what = "unexpected data after the last element";
  }
  SUBCASE("a control that is not a SEQUENCE") {
    pdu = hex("30 10 02 01 06 4a 04 63 6e 3d 61 a0 05 04 03 31 2e 34");
    offset = 13;
    what = "unexpected tag";
  }
  SUBCASE("a control without controlType") {
    pdu = hex("30 10 02 01 06 4a 04 63 6e 3d 61 a0 05 30 03 01 01 ff");
    offset = 15;
    what = "unexpected tag";
  }
  SUBCASE("trailing garbage after the controls") {
    pdu = hex("30 14 02 01 06 4a 04 63 6e 3d 61 a0 07 30 05 04 03 31 2e 34 04 00");
    offset = 20;
    what = "unexpected data after the last element";
  }
  SUBCASE("a second controls element") {
    pdu = hex("30 14 02 01 06 4a 04 63 6e 3d 61 a0 07 30 05 04 03 31 2e 34 a0 00");
    offset = 20;
    what = "unexpected data after the last element";
  }
  SUBCASE("controls encoded primitive") {
    pdu = hex("30 0b 02 01 06 4a 04 63 6e 3d 61 80 00");
    offset = 11;
    what = "unexpected data after the last element";
  }
  LdapMessage m;
  CHECK(decode(pdu, m) == malformed_at(offset, what));
  CHECK(m.message_id == 6);
}

// ---------------------------------------------------------------------------------------------
// What RFC 4511 allows but OpenLDAP does not itself send.

TEST_CASE("decode_message: accepts an explicit criticality FALSE") {
  LdapMessage m;
  std::string pdu;
  pdu = hex("30 15 02 01 06 4a 04 63 6e 3d 61 a0 0a 30 08 04 03 31 2e 34 01 01 00");
  REQUIRE(decode(pdu, m) == "ok");
  REQUIRE(m.controls.size() == 1);
  CHECK(m.controls[0].type == "1.4");
  CHECK_FALSE(m.controls[0].criticality);
  CHECK_FALSE(m.controls[0].value.has_value());
}

TEST_CASE("decode_message: accepts an explicit dnAttributes FALSE, and TRUE") {
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
    const std::string pdu =
        tlv(ber::kSequence,
            hex("02 01 02") + tlv(ber::application_constructed(3),
                                  hex("04 81 03 61 62 63 0a 01 00 0a 01 00 02 01 00 02 01 00"
                                      " 01 01 00 87 01 61 30 00")));
    REQUIRE(decode(pdu, m) == "ok");
    CHECK(m.search_request.base_object == "abc");
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

TEST_CASE("decode_message: accepts scope 3 (subordinateSubtree)") {
  LdapMessage m;
  std::string pdu;
  pdu = with_byte(kSearch, kScopeOffset, 0x03);
  REQUIRE(decode(pdu, m) == "ok");
  CHECK(m.search_request.scope == SearchScope::kSubordinateSubtree);
}

// ---------------------------------------------------------------------------------------------
// Reuse of one LdapMessage.

// Returns: a SearchRequest (ID 11) with `attribute_count` attributes, a filter of
// `equality_count` equalities under an AND, and the paged-results and a second control; over
// 255 bytes when the counts are large, for long-form lengths.
std::string big_search(int attribute_count, int equality_count) {
  std::string filter;
  for (int i = 0; i < equality_count; ++i) {
    filter += tlv(ber::context_constructed(3),
                  hex("04 03 75 69 64") + tlv(ber::kOctetString, "user" + std::to_string(i)));
  }
  std::string attributes;
  for (int i = 0; i < attribute_count; ++i) {
    attributes += tlv(ber::kOctetString, "attribute" + std::to_string(i));
  }
  const std::string op =
      tlv(ber::application_constructed(3), tlv(ber::kOctetString, "ou=people,dc=example,dc=com") +
                                               hex("0a 01 02 0a 01 00 02 01 05 02 01 06 01 01 ff") +
                                               tlv(ber::context_constructed(0), filter) +
                                               tlv(ber::kSequence, attributes));
  const std::string controls =
      tlv(ber::context_constructed(0),
          tlv(ber::kSequence, tlv(ber::kOctetString, "1.2.840.113556.1.4.319") + hex("01 01 ff") +
                                  tlv(ber::kOctetString, hex("30 05 02 01 0a 04 00"))) +
              tlv(ber::kSequence, tlv(ber::kOctetString, "2.16.840.1.113730.3.4.2")));
  return tlv(ber::kSequence, hex("02 01 0b") + op + controls);
}

void check_big_search(const LdapMessage& m, std::string_view pdu, int attribute_count,
                      int equality_count) {
  CHECK(m.message_id == 11);
  REQUIRE(m.op == ProtocolOp::kSearchRequest);
  const SearchRequest& s = m.search_request;
  CHECK(s.base_object == "ou=people,dc=example,dc=com");
  CHECK(s.scope == SearchScope::kWholeSubtree);
  CHECK(s.size_limit == 5);
  CHECK(s.time_limit == 6);
  CHECK(s.types_only);
  REQUIRE(s.filter.size() == static_cast<std::uint32_t>(equality_count + 1));
  CHECK(s.filter.node(0).kind == FilterKind::kAnd);
  CHECK(s.filter.node(0).end == s.filter.size());
  for (int i = 0; i < equality_count; ++i) {
    const FilterNode& node = s.filter.node(static_cast<std::uint32_t>(i + 1));
    CHECK(node.kind == FilterKind::kEquality);
    CHECK(node.value == "user" + std::to_string(i));
    CHECK(points_into(node.value, pdu));
  }
  REQUIRE(s.attributes.size() == static_cast<std::size_t>(attribute_count));
  for (int i = 0; i < attribute_count; ++i) {
    CHECK(s.attributes[static_cast<std::size_t>(i)] == "attribute" + std::to_string(i));
    CHECK(points_into(s.attributes[static_cast<std::size_t>(i)], pdu));
  }
  REQUIRE(m.controls.size() == 2);
  CHECK(m.controls[0].type == "1.2.840.113556.1.4.319");
  CHECK(m.controls[0].criticality);
  CHECK(m.controls[0].value == std::string_view(hex("30 05 02 01 0a 04 00")));
  CHECK(m.controls[1].type == "2.16.840.1.113730.3.4.2");
  CHECK_FALSE(m.controls[1].criticality);
  CHECK_FALSE(m.controls[1].value.has_value());
}

TEST_CASE("decode_message: one LdapMessage reused across operations keeps nothing stale") {
  const std::string search = big_search(20, 10);
  REQUIRE(search.size() > 255);
  LdapMessage m;
  std::string pdu;

  REQUIRE(decode(search, m) == "ok");
  check_big_search(m, search, 20, 10);

  REQUIRE(decode(kSimpleBind, m) == "ok");
  CHECK(m.message_id == 1);
  CHECK(m.op == ProtocolOp::kBindRequest);
  CHECK(m.bind_request.name == "cn=a");
  CHECK(m.bind_request.simple_password == "pw");
  CHECK(m.controls.empty());
  CHECK(m.search_request.filter.empty());
  CHECK(m.search_request.attributes.empty());

  // The same search again, into the same object, from a different buffer: not appended to
  // leftovers, and every view points into the new buffer.
  const std::string again = search;
  REQUIRE(decode(again, m) == "ok");
  check_big_search(m, again, 20, 10);

  SUBCASE("a smaller search after a bigger one") {
    const std::string small = big_search(2, 1);
    REQUIRE(decode(small, m) == "ok");
    check_big_search(m, small, 2, 1);
  }
  SUBCASE("a simple bind after a SASL bind") {
    pdu =
        hex("30 19 02 01 02 60 14 02 01 03 04 00 a3 0d 04 05 50 4c 41 49 4e"
            " 04 04 00 75 00 70");
    REQUIRE(decode(pdu, m) == "ok");
    CHECK(m.bind_request.method == BindMethod::kSasl);
    REQUIRE(decode(kSimpleBind, m) == "ok");
    CHECK(m.bind_request.method == BindMethod::kSimple);
    CHECK(m.bind_request.sasl_mechanism.empty());
    CHECK_FALSE(m.bind_request.sasl_credentials.has_value());
  }
  SUBCASE("a result without referrals after one with") {
    pdu =
        hex("30 20 02 01 02 65 1b 0a 01 0a 04 04 64 63 3d 78 04 03 73 65 65"
            " a3 0b 04 09 6c 64 61 70 3a 2f 2f 61 2f");
    REQUIRE(decode(pdu, m) == "ok");
    CHECK(m.result.referrals.size() == 1);
    pdu = hex("30 0c 02 01 03 65 07 0a 01 00 04 00 04 00");
    REQUIRE(decode(pdu, m) == "ok");
    CHECK(m.result.code == ResultCode::kSuccess);
    CHECK(m.result.matched_dn.empty());
    CHECK(m.result.diagnostic_message.empty());
    CHECK(m.result.referrals.empty());
  }
  SUBCASE("a good PDU after a malformed one") {
    CHECK(decode(with_byte(kSearch, kScopeOffset, 0x04), m) ==
          malformed_at(kScopeOffset, "integer out of range"));
    REQUIRE(decode(search, m) == "ok");
    check_big_search(m, search, 20, 10);
  }
}

}  // namespace
}  // namespace numadir::listener::wire
