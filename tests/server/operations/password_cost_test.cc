// The cost ceilings on stored passwords in the updates (server/operations/password_cost.h): Add,
// Modify and Password Modify refuse a userPassword value over a ceiling with constraintViolation
// naming the parameter, and store the values within them.
#include <doctest/doctest.h>

#include <memory>
#include <string>

#include "server/operations/root_dse.h"
#include "tests/server/operations/costly_values.h"
#include "tests/server/operations/operation_handler_test_util.h"

namespace numadir::server::testing {
namespace {

TEST_CASE("PasswordCost: Add and Modify refuse a userPassword over a ceiling with 19") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  bind_as(fixture, *session, user_dn(1), user_password(1));
  const std::string before = stored_values(fixture, user_dn(1), "userPassword").at(0);
  using listener::wire::ModifyOperation;
  SUBCASE("argon2 memory, replaced by its owner") {
    std::unique_ptr<Response> response = fixture.run_one(
        modify_request(2, user_dn(1), ModifyOperation::kReplace, "userPassword", {kArgon2GiB}),
        *session);
    CHECK(code_of(*response) == ResultCode::kConstraintViolation);
    CHECK(response->message.result.diagnostic_message ==
          "userPassword: argon2 memory 1048576 KiB over passwords.max_argon2_memory_kib (65536)");
  }
  SUBCASE("PBKDF2 iterations, added beside a cheap value") {
    std::unique_ptr<Response> response = fixture.run_one(
        modify_request(2, user_dn(1), ModifyOperation::kAdd, "userPassword",
                       {"{SSHA}jJ/M4rqPnDRtZqfPh5U+KJmYLcjlx+87", kPbkdf2TenMillion}),
        *session);
    CHECK(code_of(*response) == ResultCode::kConstraintViolation);
    CHECK(response->message.result.diagnostic_message ==
          "userPassword: PBKDF2 iterations 10000000 over passwords.max_pbkdf2_iterations (30000)");
  }
  SUBCASE("an attribute option does not hide it") {
    CHECK(code_of(*fixture.run_one(modify_request(2, user_dn(1), ModifyOperation::kReplace,
                                                  "userPassword;x-old", {kArgon2GiB}),
                                   *session)) == ResultCode::kConstraintViolation);
  }
  SUBCASE("deleting such a value is not checked") {
    CHECK(code_of(*fixture.run_one(
              modify_request(2, user_dn(1), ModifyOperation::kDelete, "userPassword", {kArgon2GiB}),
              *session)) == ResultCode::kNoSuchAttribute);
  }
  SUBCASE("the rootdn's Add is refused too") {
    auto root = fixture.open_session();
    bind_as(fixture, *root, kRootDn, kRootPassword);
    std::unique_ptr<Response> response =
        fixture.run_one(add_request(3, kCostlyUser,
                                    {{"objectClass", {"inetOrgPerson"}},
                                     {"cn", {"C"}},
                                     {"sn", {"H"}},
                                     {"userPassword", {kArgon2GiB}}}),
                        *root);
    CHECK(code_of(*response) == ResultCode::kConstraintViolation);
    CHECK(response->message.result.diagnostic_message.find("argon2 memory 1048576 KiB") !=
          std::string::npos);
  }
  CHECK(stored_values(fixture, user_dn(1), "userPassword") == std::vector<std::string>{before});
}

TEST_CASE("PasswordCost: values within the ceilings and raised ceilings are stored") {
  HandlerOptions options = default_handler_options();
  SUBCASE("default ceilings, a costly scheme at its usual cost") {}
  SUBCASE("a ceiling raised") { options.password_limits.max_argon2_memory_kib = 1u << 20; }
  const bool raised = options.password_limits.max_argon2_memory_kib > 65536;
  HandlerFixture fixture(options);
  auto session = fixture.open_session();
  bind_as(fixture, *session, user_dn(1), user_password(1));
  const std::string value = raised ? kArgon2GiB : cheap_pbkdf2("new secret");
  CHECK(code_of(*fixture.run_one(
            modify_request(2, user_dn(1), listener::wire::ModifyOperation::kReplace, "userPassword",
                           {value}),
            *session)) == ResultCode::kSuccess);
  CHECK(stored_values(fixture, user_dn(1), "userPassword") == std::vector<std::string>{value});
}

TEST_CASE("PasswordCost: Password Modify hashes a costly-looking new password as any other") {
  // RFC 3062 sends the new password in the clear: the server hashes whatever comes, so a
  // pre-hashed value can never be stored through it.
  HandlerFixture fixture;
  auto session = fixture.open_session();
  bind_as(fixture, *session, user_dn(2), user_password(2));
  const std::string value = passwd_value(std::nullopt, std::nullopt, kArgon2GiB);
  std::unique_ptr<Response> response =
      fixture.run_one(extended_request(2, kPasswordModifyOid, value), *session);
  CHECK(code_of(*response) == ResultCode::kSuccess);
  const std::vector<std::string> stored = stored_values(fixture, user_dn(2), "userPassword");
  REQUIRE(stored.size() == 1);
  CHECK(stored[0].starts_with("{SSHA256}"));           // The fixture's default scheme.
  bind_as(fixture, *session, user_dn(2), kArgon2GiB);  // The string is the password now.
}

}  // namespace
}  // namespace numadir::server::testing
