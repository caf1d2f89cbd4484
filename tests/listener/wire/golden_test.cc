// Golden tests: PDUs captured between Debian's ldap-utils / python-ldap and OpenLDAP slapd
// (tests/data/golden, made by tests/tools/capture_golden.sh) decode, and encode back to the
// very same bytes.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "listener/wire/ber_writer.h"
#include "listener/wire/framing.h"
#include "listener/wire/ldap_message.h"
#include "listener/wire/message_decoder.h"
#include "listener/wire/message_encoder.h"

namespace numadir::listener::wire {
namespace {

const std::filesystem::path kGoldenDir = std::filesystem::path(NUMADIR_TEST_DATA_DIR) / "golden";

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot open " << path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Splits a capture into its PDUs; every byte must belong to a complete PDU.
std::vector<std::string> read_pdus(const std::filesystem::path& path) {
  const std::string bytes = read_file(path);
  std::vector<std::string> pdus;
  std::string_view rest = bytes;
  while (!rest.empty()) {
    const Frame frame = frame_pdu(rest);
    REQUIRE_MESSAGE(frame.state == FrameState::kComplete,
                    path.filename() << ": PDU " << pdus.size() << " does not frame");
    pdus.emplace_back(rest.substr(0, frame.pdu_bytes));
    rest.remove_prefix(frame.pdu_bytes);
  }
  return pdus;
}

std::vector<std::filesystem::path> golden_files() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(kGoldenDir)) {
    const auto extension = entry.path().extension();
    if (extension == ".c2s" || extension == ".s2c") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string hex_dump(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 0xf];
    out += ' ';
  }
  return out;
}

// Decodes PDU `index` of capture `name` (e.g. "search_paged.c2s") into `message`.
// `pdus` keeps the bytes the message's views point into.
void decode_golden(std::string_view name, std::size_t index, std::vector<std::string>& pdus,
                   LdapMessage& message) {
  pdus = read_pdus(kGoldenDir / std::string(name));
  REQUIRE(index < pdus.size());
  const Status status = decode_message(pdus[index], message);
  REQUIRE_MESSAGE(status.ok(), status.to_string());
}

TEST_CASE("Golden: every captured PDU decodes and re-encodes byte-identical") {
  const auto files = golden_files();
  REQUIRE(files.size() >= 40);
  std::set<ProtocolOp> ops_seen;
  std::size_t pdu_count = 0;
  LdapMessage message;  // Reused across PDUs, as the listener does.
  BerWriter writer;
  for (const auto& path : files) {
    CAPTURE(path.filename().string());
    const auto pdus = read_pdus(path);
    CHECK(!pdus.empty());
    for (std::size_t i = 0; i < pdus.size(); ++i) {
      CAPTURE(i);
      const Status status = decode_message(pdus[i], message);
      REQUIRE_MESSAGE(status.ok(), status.to_string());
      ops_seen.insert(message.op);
      writer.clear();
      encode_message(message, writer);
      CHECK_MESSAGE(writer.view() == pdus[i],
                    "captured: " << hex_dump(pdus[i]) << "\nencoded:  " << hex_dump(writer.view()));
      ++pdu_count;
    }
  }
  CHECK(pdu_count > 300);
  // Every operation the captures were made to exercise is among them.
  for (ProtocolOp op : {ProtocolOp::kBindRequest,           ProtocolOp::kBindResponse,
                        ProtocolOp::kUnbindRequest,         ProtocolOp::kSearchRequest,
                        ProtocolOp::kSearchResultEntry,     ProtocolOp::kSearchResultDone,
                        ProtocolOp::kSearchResultReference, ProtocolOp::kModifyRequest,
                        ProtocolOp::kModifyResponse,        ProtocolOp::kAddRequest,
                        ProtocolOp::kAddResponse,           ProtocolOp::kDelRequest,
                        ProtocolOp::kDelResponse,           ProtocolOp::kModifyDnRequest,
                        ProtocolOp::kModifyDnResponse,      ProtocolOp::kCompareRequest,
                        ProtocolOp::kCompareResponse,       ProtocolOp::kAbandonRequest,
                        ProtocolOp::kExtendedRequest,       ProtocolOp::kExtendedResponse}) {
    CHECK_MESSAGE(ops_seen.count(op) == 1, "no captured " << protocol_op_name(op));
  }
}

TEST_CASE("Golden: ldapsearch filters decode to the filters given on its command line") {
  struct Case {
    const char* file;
    std::size_t pdu;
    const char* filter;
  };
  const Case cases[] = {
      {"search_nested_filter.c2s", 1,
       "(&(objectClass=inetOrgPerson)(|(uid=user1)(!(cn=User 2))(sn>=M)(sn<=Z)))"},
      {"search_substrings.c2s", 1, "(cn=Us*er*1*5)"},
      {"search_substrings.c2s", 2, "(mail=*@example.com)"},
      {"search_substrings.c2s", 3, "(sn=Sm*)"},
      {"search_substrings.c2s", 4, "(cn=*ser 2*)"},
      {"search_extensible.c2s", 1, "(cn:caseExactMatch:=User 1)"},
      {"search_extensible.c2s", 2, "(:dn:2.5.13.5:=people)"},
      {"search_extensible.c2s", 3, "(sn:dn:caseIgnoreMatch:=smith)"},
      {"search_approx_present.c2s", 1, "(sn~=Smith)"},
      {"search_approx_present.c2s", 2, "(mail=*)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.file);
    CAPTURE(c.pdu);
    std::vector<std::string> pdus;
    LdapMessage message;
    decode_golden(c.file, c.pdu, pdus, message);
    REQUIRE(message.op == ProtocolOp::kSearchRequest);
    CHECK(message.search_request.filter.to_string() == c.filter);
    // The string form parses to the same model the wire form decoded to.
    auto parsed = schema::Filter::parse(c.filter);
    REQUIRE(parsed.ok());
    CHECK(*parsed == message.search_request.filter);
  }
}

TEST_CASE("Golden: fields of captured requests and responses") {
  std::vector<std::string> pdus;
  LdapMessage message;

  SUBCASE("search request: base, scope, attribute list") {
    decode_golden("search_nested_filter.c2s", 1, pdus, message);
    const SearchRequest& search = message.search_request;
    CHECK(search.base_object == "dc=example,dc=com");
    CHECK(search.scope == SearchScope::kWholeSubtree);
    CHECK(search.attributes == std::vector<std::string_view>{"cn", "sn", "mail"});
    CHECK_FALSE(search.types_only);
  }
  SUBCASE("size limit and sizeLimitExceeded") {
    decode_golden("search_sizelimit.c2s", 1, pdus, message);
    CHECK(message.search_request.size_limit == 5);
    std::vector<std::string> responses;
    LdapMessage done;
    decode_golden("search_sizelimit.s2c", 6, responses, done);
    CHECK(done.op == ProtocolOp::kSearchResultDone);
    CHECK(done.result.code == ResultCode::kSizeLimitExceeded);
  }
  SUBCASE("paged results control on requests and responses") {
    decode_golden("search_paged.c2s", 1, pdus, message);
    REQUIRE(message.controls.size() == 1);
    CHECK(message.controls[0].type == "1.2.840.113556.1.4.319");
    CHECK_FALSE(message.controls[0].criticality);
    CHECK(message.controls[0].value == std::string_view("\x30\x05\x02\x01\x0a\x04\x00", 7));
    std::vector<std::string> responses;
    LdapMessage done;
    decode_golden("search_paged.s2c", 11, responses, done);
    CHECK(done.op == ProtocolOp::kSearchResultDone);
    REQUIRE(done.controls.size() == 1);
    CHECK(done.controls[0].type == "1.2.840.113556.1.4.319");
  }
  SUBCASE("modify with add, delete and replace") {
    decode_golden("modify.c2s", 1, pdus, message);
    const ModifyRequest& modify = message.modify_request;
    CHECK(modify.object == "uid=user5,ou=people,dc=example,dc=com");
    CHECK(modify.operations ==
          std::vector<ModifyOperation>{ModifyOperation::kAdd, ModifyOperation::kDelete,
                                       ModifyOperation::kReplace, ModifyOperation::kDelete});
    REQUIRE(modify.modifications.size() == 4);
    CHECK(modify.modifications[0].type == "telephoneNumber");
    CHECK(modify.modifications[0].value_count == 2);
    CHECK(modify.modifications[1].value_count == 0);
  }
  SUBCASE("modify DN with newSuperior") {
    decode_golden("modrdn.c2s", 1, pdus, message);
    const ModifyDnRequest& modify_dn = message.modify_dn_request;
    CHECK(modify_dn.entry == "uid=user28,ou=people,dc=example,dc=com");
    CHECK(modify_dn.new_rdn == "uid=moved28");
    CHECK(modify_dn.delete_old_rdn);
    CHECK(modify_dn.new_superior == "ou=groups,dc=example,dc=com");
  }
  SUBCASE("compare true and false") {
    decode_golden("compare_true.c2s", 1, pdus, message);
    CHECK(message.compare_request.attribute == "sn");
    CHECK(message.compare_request.value == "Smyth");
    decode_golden("compare_true.s2c", 1, pdus, message);
    CHECK(message.result.code == ResultCode::kCompareTrue);
    decode_golden("compare_false.s2c", 1, pdus, message);
    CHECK(message.result.code == ResultCode::kCompareFalse);
  }
  SUBCASE("failed bind") {
    decode_golden("bind_fail.c2s", 0, pdus, message);
    CHECK(message.bind_request.method == BindMethod::kSimple);
    CHECK(message.bind_request.name == "uid=user4,ou=people,dc=example,dc=com");
    CHECK(message.bind_request.simple_password == "wrongpassword");
    decode_golden("bind_fail.s2c", 0, pdus, message);
    CHECK(message.result.code == ResultCode::kInvalidCredentials);
  }
  SUBCASE("SASL bind in progress with server credentials") {
    decode_golden("sasl_digest.c2s", 0, pdus, message);
    CHECK(message.bind_request.method == BindMethod::kSasl);
    CHECK(message.bind_request.sasl_mechanism == "DIGEST-MD5");
    CHECK_FALSE(message.bind_request.sasl_credentials.has_value());
    decode_golden("sasl_digest.s2c", 0, pdus, message);
    CHECK(message.result.code == ResultCode::kSaslBindInProgress);
    REQUIRE(message.server_sasl_creds.has_value());
    CHECK(message.server_sasl_creds->find("nonce=") != std::string_view::npos);
  }
  SUBCASE("WhoAmI and password modify extended operations") {
    decode_golden("whoami.c2s", 1, pdus, message);
    CHECK(message.extended.name == "1.3.6.1.4.1.4203.1.11.3");
    CHECK_FALSE(message.extended.value.has_value());
    decode_golden("whoami.s2c", 1, pdus, message);
    CHECK(message.extended.value == "dn:uid=user4,ou=people,dc=example,dc=com");
    decode_golden("passwd_generated.s2c", 1, pdus, message);
    CHECK(message.op == ProtocolOp::kExtendedResponse);
    CHECK(message.extended.value.has_value());
  }
  SUBCASE("abandon, delete and search reference") {
    decode_golden("abandon.c2s", 2, pdus, message);
    CHECK(message.op == ProtocolOp::kAbandonRequest);
    CHECK(message.abandon_id == 2);
    decode_golden("delete.c2s", 1, pdus, message);
    CHECK(message.dn == "uid=user29,ou=people,dc=example,dc=com");
    decode_golden("referral.s2c", 3, pdus, message);
    REQUIRE(message.op == ProtocolOp::kSearchResultReference);
    CHECK(message.uris == std::vector<std::string_view>{
                              "ldap://ldap.remote.example.org/ou=remote,dc=example,dc=com??sub"});
  }
}

}  // namespace
}  // namespace numadir::listener::wire
