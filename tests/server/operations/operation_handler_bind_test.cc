// OperationHandler (server/operations/operation_handler.h): Bind, WhoAmI and the session identity.
#include <doctest/doctest.h>

#include <string>

#include "server/operations/root_dse.h"
#include "tests/server/operations/operation_handler_test_util.h"

namespace numadir::server::testing {
namespace {

// Returns: the WhoAmI answer for `session` (the authzId, "" for anonymous).
std::string whoami(HandlerFixture& fixture, listener::Session& session) {
  std::unique_ptr<Response> response = fixture.run_one(extended_request(90, kWhoAmIOid), session);
  REQUIRE(response->message.op == ProtocolOp::kExtendedResponse);
  REQUIRE(code_of(*response) == ResultCode::kSuccess);
  CHECK_FALSE(response->message.extended.name.has_value());
  REQUIRE(response->message.extended.value.has_value());
  return std::string(*response->message.extended.value);
}

TEST_CASE("OperationHandler: anonymous bind succeeds and whoami is empty") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  std::unique_ptr<Response> response = fixture.run_one(bind_request(1, "", ""), *session);
  CHECK(response->message.op == ProtocolOp::kBindResponse);
  CHECK(code_of(*response) == ResultCode::kSuccess);
  CHECK(whoami(fixture, *session).empty());
}

TEST_CASE("OperationHandler: simple bind as a user switches the identity") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  CHECK(whoami(fixture, *session).empty());
  std::unique_ptr<Response> response =
      fixture.run_one(bind_request(7, user_dn(2), user_password(2)), *session);
  CHECK(response->message.message_id == 7);
  CHECK(code_of(*response) == ResultCode::kSuccess);
  CHECK(whoami(fixture, *session) == "dn:" + user_dn(2));

  SUBCASE("the DN is matched whatever its spelling and whoami shows it as given") {
    const std::string spelled = "UID=User2, OU=People, DC=Example, DC=Com";
    CHECK(code_of(*fixture.run_one(bind_request(8, spelled, user_password(2)), *session)) ==
          ResultCode::kSuccess);
    CHECK(whoami(fixture, *session) == "dn:" + spelled);
  }
  SUBCASE("a failed bind leaves the connection anonymous") {
    CHECK(code_of(*fixture.run_one(bind_request(8, user_dn(2), "wrong"), *session)) ==
          ResultCode::kInvalidCredentials);
    CHECK(whoami(fixture, *session).empty());
  }
}

TEST_CASE("OperationHandler: every simple bind failing on an entry or a password reads the same") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  const std::string missing = "uid=nobody," + std::string(kPeople);
  const std::string no_password = "ou=people,dc=example,dc=com";
  const std::string outside = "uid=user1,dc=elsewhere,dc=org";
  const std::string wrong_user = user_dn(1);
  std::vector<std::unique_ptr<Response>> answers;
  answers.push_back(fixture.run_one(bind_request(1, wrong_user, "not the password"), *session));
  answers.push_back(fixture.run_one(bind_request(2, missing, "whatever"), *session));
  answers.push_back(fixture.run_one(bind_request(3, no_password, "whatever"), *session));
  answers.push_back(fixture.run_one(bind_request(4, outside, "whatever"), *session));
  answers.push_back(fixture.run_one(bind_request(6, kRootDn, "not the root password"), *session));
  for (const auto& answer : answers) {
    CAPTURE(answer->message.message_id);
    CHECK(code_of(*answer) == ResultCode::kInvalidCredentials);
    CHECK(answer->message.result.diagnostic_message.empty());
    CHECK(answer->message.result.matched_dn.empty());
    // Byte for byte the same PDU but for the message ID.
    LdapMessage same = std::move(answer->message);
    same.message_id = 1;
    CHECK(same == answers[0]->message);
  }
}

TEST_CASE("OperationHandler: a simple bind whose name is not a DN is invalidDNSyntax") {
  // As slapd and 389-ds: the name's syntax is the client's error and tells nothing about the
  // directory, so it is not folded into invalidCredentials.
  HandlerFixture fixture;
  auto session = fixture.open_session();
  REQUIRE(code_of(*fixture.run_one(bind_request(1, user_dn(1), user_password(1)), *session)) ==
          ResultCode::kSuccess);
  std::string name;
  SUBCASE("no attribute type") { name = "this is not a DN"; }
  SUBCASE("an RDN without a value separator") { name = "uid=user1,people"; }
  SUBCASE("an attribute type the schema does not know") { name = "noSuchType=x,dc=example,dc=com"; }
  SUBCASE("a trailing comma") { name = "uid=user1,ou=people,dc=example,dc=com,"; }
  CAPTURE(name);
  std::unique_ptr<Response> response = fixture.run_one(bind_request(2, name, "whatever"), *session);
  CHECK(response->message.op == ProtocolOp::kBindResponse);
  CHECK(response->message.message_id == 2);
  CHECK(code_of(*response) == ResultCode::kInvalidDnSyntax);
  CHECK(response->message.result.diagnostic_message == "invalid DN");  // slapd's text.
  CHECK(response->message.result.matched_dn.empty());
  CHECK(whoami(fixture, *session).empty());  // A failed bind leaves the connection anonymous.
}

TEST_CASE("OperationHandler: rootdn binds with its configured password") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  CHECK(code_of(*fixture.run_one(bind_request(1, "CN=Admin,DC=example,DC=com", kRootPassword),
                                 *session)) == ResultCode::kSuccess);
  CHECK(whoami(fixture, *session) == "dn:CN=Admin,DC=example,DC=com");
}

TEST_CASE("OperationHandler: bind refusals") {
  HandlerFixture fixture;
  auto session = fixture.open_session();

  SUBCASE("protocol version 2 is a protocol error") {
    LdapMessage request = bind_request(1, "", "");
    request.bind_request.version = 2;
    CHECK(code_of(*fixture.run_one(request, *session)) == ResultCode::kProtocolError);
  }
  SUBCASE("a DN without a password is unwilling to perform") {
    std::unique_ptr<Response> response = fixture.run_one(bind_request(1, user_dn(1), ""), *session);
    CHECK(code_of(*response) == ResultCode::kUnwillingToPerform);
    CHECK(response->message.result.diagnostic_message ==
          "unauthenticated bind (DN with no password) disallowed");
  }
  SUBCASE("SASL is not supported") {
    LdapMessage request = bind_request(1, "", "");
    request.bind_request.method = listener::wire::BindMethod::kSasl;
    request.bind_request.sasl_mechanism = "EXTERNAL";
    CHECK(code_of(*fixture.run_one(request, *session)) == ResultCode::kAuthMethodNotSupported);
  }
  SUBCASE("an authentication choice numadir does not implement is authMethodNotSupported") {
    LdapMessage request = bind_request(1, "", "");
    request.bind_request.method = listener::wire::BindMethod::kUnsupported;
    request.bind_request.unsupported_tag = 0x81;  // [1]: Kerberos v4, retired.
    request.bind_request.unsupported_credentials = "ticket";
    std::unique_ptr<Response> response = fixture.run_one(request, *session);
    CHECK(response->message.op == ProtocolOp::kBindResponse);
    CHECK(code_of(*response) == ResultCode::kAuthMethodNotSupported);
    CHECK(response->message.result.diagnostic_message == "unknown authentication method");
  }
  SUBCASE("an unsupported choice with version 2 is first a protocol error") {
    LdapMessage request = bind_request(1, "", "");
    request.bind_request.version = 2;
    request.bind_request.method = listener::wire::BindMethod::kUnsupported;
    request.bind_request.unsupported_tag = 0x82;
    CHECK(code_of(*fixture.run_one(request, *session)) == ResultCode::kProtocolError);
  }
}

TEST_CASE("OperationHandler: unauthenticated bind when allowed stays anonymous") {
  HandlerOptions options = default_handler_options();
  options.allow_unauthenticated_bind = true;
  HandlerFixture fixture(std::move(options));
  auto session = fixture.open_session();
  CHECK(code_of(*fixture.run_one(bind_request(1, user_dn(1), ""), *session)) ==
        ResultCode::kSuccess);
  CHECK(whoami(fixture, *session).empty());
}

TEST_CASE("OperationHandler: identities belong to their own connection") {
  HandlerFixture fixture;
  auto first = fixture.open_session();
  auto second = fixture.open_session();
  REQUIRE(code_of(*fixture.run_one(bind_request(1, user_dn(3), user_password(3)), *first)) ==
          ResultCode::kSuccess);
  CHECK(whoami(fixture, *first) == "dn:" + user_dn(3));
  CHECK(whoami(fixture, *second).empty());
}

}  // namespace
}  // namespace numadir::server::testing
