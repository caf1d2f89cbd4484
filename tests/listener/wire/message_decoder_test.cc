// tests/listener/wire/message_decoder_test.cc: decode_message (listener/wire/message_decoder.h):
// one hand-built PDU per operation and reuse of one LdapMessage across operations. Rejections
// and what RFC 4511 allows beyond OpenLDAP: message_decoder_reject_test.cc.
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
// One positive decode per operation.

TEST_CASE("decode_message: simple BindRequest") {
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

TEST_CASE("decode_message: SASL BindRequest") {
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

TEST_CASE("decode_message: BindRequest with a method numadir does not implement") {
  // RFC 4511 §4.2: the authentication choice is extensible; [1] and [2] were Kerberos v4's.
  LdapMessage m;
  std::string pdu;
  std::uint8_t tag = 0;
  SUBCASE("[1] (krbv42LDAP)") {
    pdu = with_byte(kSimpleBind, 16, 0x81);
    tag = 0x81;
  }
  SUBCASE("[2] (krbv42DSA)") {
    pdu = with_byte(kSimpleBind, 16, 0x82);
    tag = 0x82;
  }
  SUBCASE("[9] constructed") {
    pdu = with_byte(kSimpleBind, 16, 0xa9);
    tag = 0xa9;
  }
  SUBCASE("[30] primitive") {
    pdu = with_byte(kSimpleBind, 16, 0x9e);
    tag = 0x9e;
  }
  REQUIRE(decode(pdu, m) == "ok");
  CHECK(m.op == ProtocolOp::kBindRequest);
  CHECK(m.bind_request.version == 3);
  CHECK(m.bind_request.name == "cn=a");
  CHECK(m.bind_request.method == BindMethod::kUnsupported);
  CHECK(m.bind_request.unsupported_tag == tag);
  CHECK(m.bind_request.unsupported_credentials == "pw");  // Carried, never read.
  CHECK(points_into(m.bind_request.unsupported_credentials, pdu));
  CHECK(m.bind_request.simple_password.empty());
  // Reused for a simple bind, the message forgets the unsupported choice.
  REQUIRE(decode(kSimpleBind, m) == "ok");
  CHECK(m.bind_request.method == BindMethod::kSimple);
  CHECK(m.bind_request.unsupported_tag == 0);
  CHECK(m.bind_request.unsupported_credentials.empty());
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
  const std::string pdu = hex("30 05 02 01 03 42 00");
  REQUIRE(decode(pdu, m) == "ok");
  CHECK(m.message_id == 3);
  CHECK(m.op == ProtocolOp::kUnbindRequest);
  CHECK(m.controls.empty());
}

TEST_CASE("decode_message: SearchRequest") {
  LdapMessage m;
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
    const std::string pdu = with_byte(kSearch, kTypesOnlyOffset, 0xff);
    REQUIRE(decode(pdu, m) == "ok");
    CHECK(m.search_request.types_only);
  }
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
  const std::string pdu =
      hex("30 16 02 01 08 6e 11 04 04 63 6e 3d 61 30 09 04 03 75 69 64 04 02 6a 64");
  REQUIRE(decode(pdu, m) == "ok");
  CHECK(m.message_id == 8);
  CHECK(m.op == ProtocolOp::kCompareRequest);
  CHECK(m.compare_request.entry == "cn=a");
  CHECK(m.compare_request.attribute == "uid");
  CHECK(m.compare_request.value == "jd");
}

TEST_CASE("decode_message: AbandonRequest") {
  LdapMessage m;
  const std::string pdu = hex("30 06 02 01 09 50 01 05");
  REQUIRE(decode(pdu, m) == "ok");
  CHECK(m.message_id == 9);
  CHECK(m.op == ProtocolOp::kAbandonRequest);
  CHECK(m.abandon_id == 5);
}

TEST_CASE("decode_message: SearchResultReference") {
  LdapMessage m;
  const std::string pdu =
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
  const std::string pdu =
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
  SUBCASE("a good PDU after one that failed halfway through its filter") {
    // (&(a=*)...) with a non-filter after the first element: the AND node was opened.
    CHECK(decode(search_with_filter(hex("a0 05 87 01 61 04 00")), m) ==
          malformed_at(kFilterOffset + 5, "unknown filter choice"));
    REQUIRE(decode(search, m) == "ok");
    check_big_search(m, search, 20, 10);
  }
}

}  // namespace
}  // namespace numadir::listener::wire
