// SASL EXTERNAL by peer credentials over ldapi:// and the [[sasl.external_map]] rules
// (server/operations/external_map.h, bind_operation.cc); ldapi:// as a confidential channel.
#include <doctest/doctest.h>

#include <string>

#include "server/operations/external_map.h"
#include "server/operations/root_dse.h"
#include "tests/server/operations/operation_handler_test_util.h"

namespace numadir::server::testing {
namespace {

using listener::wire::ModifyOperation;

constexpr std::string_view kRootPeercred =
    "gidNumber=0+uidNumber=0,cn=peercred,cn=external,cn=auth";
constexpr std::string_view kUserPeercred =
    "gidNumber=1000+uidNumber=1001,cn=peercred,cn=external,cn=auth";

std::string external_whoami(HandlerFixture& fixture, listener::Session& session) {
  std::unique_ptr<Response> response = fixture.run_one(extended_request(90, kWhoAmIOid), session);
  REQUIRE(code_of(*response) == ResultCode::kSuccess);
  REQUIRE(response->message.extended.value.has_value());
  return std::string(*response->message.extended.value);
}

listener::ConnectionInfo local_info(uid_t uid, gid_t gid) {
  listener::ConnectionInfo info;
  info.peer = "PATH=/run/numadir/ldapi";
  info.local = true;
  info.peer_credentials = listener::PeerCredentials{uid, gid, 4242};
  return info;
}

LdapMessage external_bind(std::int32_t id, std::string_view authzid = {}) {
  LdapMessage request = bind_request(id, "", "");
  request.bind_request.method = listener::wire::BindMethod::kSasl;
  request.bind_request.sasl_mechanism = "EXTERNAL";
  if (!authzid.empty()) {
    request.bind_request.sasl_credentials = authzid;
  }
  return request;
}

std::unique_ptr<ExternalMapRules> rules(const std::vector<ExternalMapRuleSpec>& specs) {
  auto compiled = ExternalMapRules::compile(specs);
  REQUIRE_MESSAGE(compiled.ok(), compiled.status().to_string());
  return std::move(*compiled);
}

TEST_CASE("peercred_dn: slapd's form") {
  CHECK(peercred_dn(0, 0) == kRootPeercred);
  CHECK(peercred_dn(1001, 1000) == kUserPeercred);
}

TEST_CASE("ExternalMapRules: the first matching rule maps with its groups and none leaves the DN") {
  auto map = rules({
      {"^gidNumber=0\\+uidNumber=0,cn=peercred,cn=external,cn=auth$", "cn=admin,dc=example,dc=com"},
      {"^gidNumber=[0-9]+\\+uidNumber=([0-9]+),cn=peercred,cn=external,cn=auth$",
       "uidNumber=$1,ou=people,dc=example,dc=com"},
      {"^cn=([^,]+),o=example$", "uid=$1,ou=people,dc=example,dc=com"},
      {"^gidNumber=1000\\+.*$", "cn=never,dc=example,dc=com"},  // Shadowed by the second.
  });
  CHECK(map->map(kRootPeercred) == "cn=admin,dc=example,dc=com");
  CHECK(map->map(kUserPeercred) == "uidNumber=1001,ou=people,dc=example,dc=com");
  // Case-insensitive, as slapd's authz-regexp (REG_ICASE).
  CHECK(map->map("CN=jdoe,O=Example") == "uid=jdoe,ou=people,dc=example,dc=com");
  CHECK(map->map("cn=other,o=elsewhere") == "cn=other,o=elsewhere");
  auto whole = rules({{"^(.*),o=old$", "$1,o=new ($$0=$0)"}});
  CHECK(whole->map("cn=a,o=old") == "cn=a,o=new ($0=cn=a,o=old)");
}

TEST_CASE("ExternalMapRules: bad rules are refused naming the key") {
  struct Case {
    ExternalMapRuleSpec spec;
    std::string key;
  };
  const Case cases[] = {
      {{"^(unclosed", "cn=x"}, "sasl.external_map[1].match"},
      {{"^(a)$", "cn=$2"}, "sasl.external_map[1].dn: $2"},
      {{"^a$", "cn=$x"}, "sasl.external_map[1].dn"},
      {{"^a$", ""}, "sasl.external_map[1].dn: must not be empty"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.key);
    auto compiled = ExternalMapRules::compile({{"^ok$", "cn=ok"}, c.spec});
    REQUIRE_FALSE(compiled.ok());
    CHECK(compiled.status().message().starts_with(c.key));
  }
}

TEST_CASE("OperationHandler: SASL EXTERNAL over ldapi binds as the peer's peercred DN") {
  HandlerFixture fixture;  // No TLS: EXTERNAL exists only by peer credentials.
  auto session = fixture.open_session(local_info(1001, 1000));
  CHECK(code_of(*fixture.run_one(external_bind(1), *session)) == ResultCode::kSuccess);
  CHECK(external_whoami(fixture, *session) == "dn:" + std::string(kUserPeercred));
  SUBCASE("an authzid other than itself is refused") {
    CHECK(code_of(*fixture.run_one(external_bind(2, "dn:cn=admin,dc=example,dc=com"), *session)) ==
          ResultCode::kInsufficientAccessRights);
    CHECK(external_whoami(fixture, *session).empty());
  }
  SUBCASE("its own DN as the authzid is fine") {
    CHECK(code_of(*fixture.run_one(external_bind(2, "dn:" + std::string(kUserPeercred)),
                                   *session)) == ResultCode::kSuccess);
  }
  SUBCASE("over TCP without TLS there is no EXTERNAL") {
    auto tcp = fixture.open_session();
    CHECK(code_of(*fixture.run_one(external_bind(3), *tcp)) == ResultCode::kAuthMethodNotSupported);
  }
}

TEST_CASE("OperationHandler: a rule maps root's peer credentials to the rootdn") {
  auto map = rules(
      {{"^gidNumber=0\\+uidNumber=0,cn=peercred,cn=external,cn=auth$", std::string(kRootDn)}});
  HandlerOptions options = default_handler_options();
  options.external_rules = map.get();
  // Users may read, nobody else may write: only the rootdn can change user1.
  AccessRuleSpec rule;
  rule.origin = "access[0]";
  rule.by.push_back(AccessSubjectSpec{"users", "", DnScope::kBase, "", *parse_access("read")});
  HandlerFixture fixture(std::move(options), {rule});
  auto root = fixture.open_session(local_info(0, 0));
  REQUIRE(code_of(*fixture.run_one(external_bind(1), *root)) == ResultCode::kSuccess);
  CHECK(external_whoami(fixture, *root) == "dn:" + std::string(kRootDn));
  CHECK(code_of(*fixture.run_one(
            modify_request(2, user_dn(1), ModifyOperation::kReplace, "sn", {"Root"}), *root)) ==
        ResultCode::kSuccess);
  auto user = fixture.open_session(local_info(1001, 1000));
  REQUIRE(code_of(*fixture.run_one(external_bind(1), *user)) == ResultCode::kSuccess);
  CHECK(external_whoami(fixture, *user) ==
        "dn:" + std::string(kUserPeercred));  // Unmapped: itself.
  CHECK(code_of(*fixture.run_one(
            modify_request(2, user_dn(1), ModifyOperation::kReplace, "sn", {"User"}), *user)) ==
        ResultCode::kInsufficientAccessRights);
}

TEST_CASE("OperationHandler: access rules name a peercred DN as a subject") {
  AccessRuleSpec rule;
  rule.origin = "access[0]";
  rule.by.push_back(AccessSubjectSpec{"", std::string(kUserPeercred), DnScope::kBase, "",
                                      *parse_access("write")});
  rule.by.push_back(AccessSubjectSpec{"*", "", DnScope::kBase, "", *parse_access("read")});
  HandlerFixture fixture(default_handler_options(), {rule});
  auto named = fixture.open_session(local_info(1001, 1000));
  REQUIRE(code_of(*fixture.run_one(external_bind(1), *named)) == ResultCode::kSuccess);
  CHECK(code_of(*fixture.run_one(
            modify_request(2, user_dn(2), ModifyOperation::kReplace, "sn", {"Named"}), *named)) ==
        ResultCode::kSuccess);
  auto other = fixture.open_session(local_info(1002, 1000));
  REQUIRE(code_of(*fixture.run_one(external_bind(1), *other)) == ResultCode::kSuccess);
  CHECK(code_of(*fixture.run_one(
            modify_request(2, user_dn(2), ModifyOperation::kReplace, "sn", {"Other"}), *other)) ==
        ResultCode::kInsufficientAccessRights);
}

TEST_CASE("OperationHandler: simple_bind_requires_tls takes ldapi as confidential") {
  HandlerOptions options = default_handler_options();
  options.simple_bind_requires_tls = true;
  HandlerFixture fixture(std::move(options));
  auto local = fixture.open_session(local_info(1001, 1000));
  CHECK(code_of(*fixture.run_one(bind_request(1, user_dn(1), user_password(1)), *local)) ==
        ResultCode::kSuccess);
  auto tcp = fixture.open_session();
  CHECK(code_of(*fixture.run_one(bind_request(1, user_dn(1), user_password(1)), *tcp)) ==
        ResultCode::kConfidentialityRequired);
}

TEST_CASE("root DSE: SASL EXTERNAL is listed with an ldapi listener") {
  RootDseOptions options;
  options.ldapi = true;
  const schema::Entry entry = make_root_dse(options);
  bool listed = false;
  for (const auto& attribute : entry.attributes) {
    if (attribute.description == "supportedSASLMechanisms") {
      listed = attribute.values == std::vector<std::string>{"EXTERNAL"};
    }
  }
  CHECK(listed);
}

}  // namespace
}  // namespace numadir::server::testing
