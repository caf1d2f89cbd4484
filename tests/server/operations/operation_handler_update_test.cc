// OperationHandler (server/operations/operation_handler.h): Compare, Add, Modify, Delete, Modify DN
// and the default access policy for them.
#include <doctest/doctest.h>

#include <string>

#include "server/operations/root_dse.h"
#include "tests/server/operations/operation_handler_test_util.h"

namespace numadir::server::testing {
namespace {

LdapMessage rename_request(std::int32_t id, std::string_view dn, std::string_view new_rdn,
                           bool delete_old_rdn,
                           std::optional<std::string_view> new_superior = std::nullopt) {
  LdapMessage message;
  message.message_id = id;
  message.op = ProtocolOp::kModifyDnRequest;
  message.modify_dn_request = {dn, new_rdn, delete_old_rdn, new_superior};
  return message;
}

const std::string kNewUser = "uid=newbie," + std::string(kPeople);

TEST_CASE("OperationHandler: compare") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  auto compare = [&](std::string_view dn, std::string_view type, std::string_view value) {
    std::unique_ptr<Response> response =
        fixture.run_one(compare_request(11, dn, type, value), *session);
    CHECK(response->message.op == ProtocolOp::kCompareResponse);
    return code_of(*response);
  };
  CHECK(compare(user_dn(1), "cn", "user 1") == ResultCode::kCompareTrue);  // caseIgnoreMatch
  CHECK(compare(user_dn(1), "CN", "User 2") == ResultCode::kCompareFalse);
  CHECK(compare(user_dn(1), "name", "Benutzer Eins") == ResultCode::kCompareTrue);  // Subtype.
  CHECK(compare(user_dn(1), "cn;lang-de", "User 1") == ResultCode::kCompareFalse);
  CHECK(compare(user_dn(1), "objectClass", "PERSON") == ResultCode::kCompareTrue);
  CHECK(compare(user_dn(2), "mail", "x@example.com") == ResultCode::kNoSuchAttribute);
  CHECK(compare(user_dn(1), "noSuchType", "x") == ResultCode::kUndefinedAttributeType);
  CHECK(compare("uid=ghost," + std::string(kPeople), "cn", "x") == ResultCode::kNoSuchObject);
  CHECK(compare("bad dn", "cn", "x") == ResultCode::kInvalidDnSyntax);
  CHECK(compare("", "vendorName", "numadir") == ResultCode::kCompareTrue);
  CHECK(compare("", "supportedLDAPVersion", "3") == ResultCode::kInappropriateMatching);
  SUBCASE("userPassword cannot be compared") {
    CHECK(compare(user_dn(1), "userPassword", user_password(1)) ==
          ResultCode::kInsufficientAccessRights);
    bind_as(fixture, *session, user_dn(1), user_password(1));
    CHECK(compare(user_dn(1), "userPassword", user_password(1)) ==
          ResultCode::kInsufficientAccessRights);
  }
}

TEST_CASE("OperationHandler: add") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  auto newbie = [](std::int32_t id) {
    return add_request(id, kNewUser,
                       {{"objectClass", {"inetOrgPerson"}},
                        {"uid", {"newbie"}},
                        {"cn", {"New"}},
                        {"sn", {"Bie"}}});
  };
  SUBCASE("anonymous may not add") {
    std::unique_ptr<Response> response = fixture.run_one(newbie(2), *session);
    CHECK(response->message.op == ProtocolOp::kAddResponse);
    CHECK(code_of(*response) == ResultCode::kInsufficientAccessRights);
  }
  SUBCASE("a user may not add") {
    bind_as(fixture, *session, user_dn(1), user_password(1));
    CHECK(code_of(*fixture.run_one(newbie(2), *session)) == ResultCode::kInsufficientAccessRights);
  }
  SUBCASE("the rootdn adds and creatorsName records it") {
    bind_as(fixture, *session, kRootDn, kRootPassword);
    CHECK(code_of(*fixture.run_one(newbie(2), *session)) == ResultCode::kSuccess);
    CHECK(stored_values(fixture, kNewUser, "creatorsName") ==
          std::vector<std::string>{std::string(kRootDn)});
    CHECK(code_of(*fixture.run_one(newbie(3), *session)) == ResultCode::kEntryAlreadyExists);
  }
  SUBCASE("errors") {
    bind_as(fixture, *session, kRootDn, kRootPassword);
    std::unique_ptr<Response> no_values = fixture.run_one(
        add_request(4, kNewUser, {{"objectClass", {"inetOrgPerson"}}, {"cn", {}}}), *session);
    CHECK(code_of(*no_values) == ResultCode::kProtocolError);
    CHECK(no_values->message.result.diagnostic_message == "no values for attribute type");

    std::unique_ptr<Response> orphan = fixture.run_one(
        add_request(
            5, "uid=x,ou=nowhere,dc=example,dc=com",
            {{"objectClass", {"inetOrgPerson"}}, {"uid", {"x"}}, {"cn", {"x"}}, {"sn", {"x"}}}),
        *session);
    CHECK(code_of(*orphan) == ResultCode::kNoSuchObject);
    CHECK(orphan->message.result.matched_dn == "dc=example,dc=com");

    CHECK(code_of(*fixture.run_one(
              add_request(6, kNewUser, {{"objectClass", {"inetOrgPerson"}}, {"uid", {"newbie"}}}),
              *session)) == ResultCode::kObjectClassViolation);
    CHECK(code_of(*fixture.run_one(add_request(7, "bad dn", {{"cn", {"x"}}}), *session)) ==
          ResultCode::kInvalidDnSyntax);
    CHECK(code_of(*fixture.run_one(add_request(8, "", {{"cn", {"x"}}}), *session)) ==
          ResultCode::kEntryAlreadyExists);
  }
}

TEST_CASE("OperationHandler: modify") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  using listener::wire::ModifyOperation;
  SUBCASE("anonymous may not modify") {
    std::unique_ptr<Response> response = fixture.run_one(
        modify_request(2, user_dn(1), ModifyOperation::kReplace, "sn", {"Jones"}), *session);
    CHECK(response->message.op == ProtocolOp::kModifyResponse);
    CHECK(code_of(*response) == ResultCode::kInsufficientAccessRights);
  }
  SUBCASE("a user modifies their own entry and modifiersName records it") {
    bind_as(fixture, *session, user_dn(1), user_password(1));
    CHECK(code_of(*fixture.run_one(
              modify_request(2, user_dn(1), ModifyOperation::kReplace, "sn", {"Jones"}),
              *session)) == ResultCode::kSuccess);
    CHECK(stored_values(fixture, user_dn(1), "sn") == std::vector<std::string>{"Jones"});
    CHECK(stored_values(fixture, user_dn(1), "modifiersName") ==
          std::vector<std::string>{user_dn(1)});
  }
  SUBCASE("a user may not modify another user's entry") {
    bind_as(fixture, *session, user_dn(1), user_password(1));
    CHECK(code_of(*fixture.run_one(
              modify_request(2, user_dn(2), ModifyOperation::kReplace, "sn", {"Jones"}),
              *session)) == ResultCode::kInsufficientAccessRights);
    CHECK(stored_values(fixture, user_dn(2), "sn") == std::vector<std::string>{"Smith"});
  }
  SUBCASE("the rootdn modifies any entry and backend errors map") {
    bind_as(fixture, *session, kRootDn, kRootPassword);
    CHECK(code_of(*fixture.run_one(
              modify_request(2, user_dn(2), ModifyOperation::kAdd, "mail", {"u2@example.com"}),
              *session)) == ResultCode::kSuccess);
    CHECK(code_of(*fixture.run_one(
              modify_request(3, user_dn(2), ModifyOperation::kAdd, "mail", {"U2@example.com"}),
              *session)) == ResultCode::kAttributeOrValueExists);
    CHECK(code_of(*fixture.run_one(
              modify_request(4, user_dn(2), ModifyOperation::kDelete, "uid", {}), *session)) ==
          ResultCode::kNotAllowedOnRdn);
    CHECK(code_of(*fixture.run_one(
              modify_request(5, user_dn(2), ModifyOperation::kReplace, "noSuchType", {"x"}),
              *session)) == ResultCode::kUndefinedAttributeType);
    std::unique_ptr<Response> missing =
        fixture.run_one(modify_request(6, "uid=ghost," + std::string(kPeople),
                                       ModifyOperation::kReplace, "sn", {"x"}),
                        *session);
    CHECK(code_of(*missing) == ResultCode::kNoSuchObject);
    CHECK(code_of(*fixture.run_one(
              modify_request(7, user_dn(2), ModifyOperation::kReplace, "entryUUID", {"x"}),
              *session)) == ResultCode::kConstraintViolation);
  }
}

TEST_CASE("OperationHandler: delete") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  SUBCASE("users may not delete even themselves") {
    CHECK(code_of(*fixture.run_one(delete_request(2, user_dn(5)), *session)) ==
          ResultCode::kInsufficientAccessRights);
    bind_as(fixture, *session, user_dn(5), user_password(5));
    CHECK(code_of(*fixture.run_one(delete_request(3, user_dn(5)), *session)) ==
          ResultCode::kInsufficientAccessRights);
  }
  SUBCASE("the rootdn deletes leaves only") {
    bind_as(fixture, *session, kRootDn, kRootPassword);
    std::unique_ptr<Response> response = fixture.run_one(delete_request(2, user_dn(5)), *session);
    CHECK(response->message.op == ProtocolOp::kDelResponse);
    CHECK(code_of(*response) == ResultCode::kSuccess);
    CHECK(code_of(*fixture.run_one(delete_request(3, user_dn(5)), *session)) ==
          ResultCode::kNoSuchObject);
    CHECK(code_of(*fixture.run_one(delete_request(4, kPeople), *session)) ==
          ResultCode::kNotAllowedOnNonLeaf);
  }
}

TEST_CASE("OperationHandler: modify DN with and without a new superior") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  CHECK(code_of(*fixture.run_one(rename_request(2, user_dn(4), "uid=user4b", true), *session)) ==
        ResultCode::kInsufficientAccessRights);
  bind_as(fixture, *session, kRootDn, kRootPassword);

  std::unique_ptr<Response> renamed =
      fixture.run_one(rename_request(3, user_dn(4), "uid=user4b", true), *session);
  CHECK(renamed->message.op == ProtocolOp::kModifyDnResponse);
  CHECK(code_of(*renamed) == ResultCode::kSuccess);
  const std::string renamed_dn = "uid=user4b," + std::string(kPeople);
  CHECK(stored_values(fixture, renamed_dn, "uid") == std::vector<std::string>{"user4b"});

  CHECK(code_of(*fixture.run_one(
            rename_request(4, renamed_dn, "uid=user4b", false, "ou=groups,dc=example,dc=com"),
            *session)) == ResultCode::kSuccess);
  auto moved = fixture.run(search_request(5, "ou=groups,dc=example,dc=com",
                                          SearchScope::kSingleLevel, "(uid=user4b)", {"1.1"}),
                           *session);
  REQUIRE(entries_of(moved).size() == 1);
  CHECK(entries_of(moved)[0]->object_name == "uid=user4b,ou=groups,dc=example,dc=com");

  CHECK(code_of(*fixture.run_one(rename_request(6, user_dn(3), "not an rdn", true), *session)) ==
        ResultCode::kInvalidDnSyntax);
  CHECK(code_of(*fixture.run_one(rename_request(7, user_dn(3), "uid=user2", true), *session)) ==
        ResultCode::kEntryAlreadyExists);
}

TEST_CASE("OperationHandler: an add takes the RDN values into the entry") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  bind_as(fixture, *session, kRootDn, kRootPassword);
  CHECK(code_of(*fixture.run_one(
            add_request(2, kNewUser,
                        {{"objectClass", {"inetOrgPerson"}}, {"cn", {"New"}}, {"sn", {"Bie"}}}),
            *session)) == ResultCode::kSuccess);
  CHECK(stored_values(fixture, kNewUser, "uid") == std::vector<std::string>{"newbie"});
  const std::string other = "uid=NEWBIE2," + std::string(kPeople);
  CHECK(code_of(*fixture.run_one(add_request(3, other,
                                             {{"objectClass", {"inetOrgPerson"}},
                                              {"uid", {"newbie2", "alias"}},
                                              {"cn", {"New"}},
                                              {"sn", {"Bie"}}}),
                                 *session)) == ResultCode::kSuccess);
  CHECK(stored_values(fixture, other, "uid") == std::vector<std::string>{"newbie2", "alias"});
}

TEST_CASE("OperationHandler: names outside the naming context or with unknown types") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  bind_as(fixture, *session, kRootDn, kRootPassword);
  using listener::wire::ModifyOperation;
  const std::string outside = "uid=x,dc=elsewhere,dc=org";
  CHECK(code_of(*fixture.run_one(
            add_request(
                2, outside,
                {{"objectClass", {"inetOrgPerson"}}, {"uid", {"x"}}, {"cn", {"x"}}, {"sn", {"x"}}}),
            *session)) == ResultCode::kUnwillingToPerform);
  CHECK(code_of(*fixture.run_one(modify_request(3, outside, ModifyOperation::kReplace, "sn", {"y"}),
                                 *session)) == ResultCode::kUnwillingToPerform);
  CHECK(code_of(*fixture.run_one(delete_request(4, outside), *session)) ==
        ResultCode::kUnwillingToPerform);
  CHECK(code_of(*fixture.run_one(rename_request(5, outside, "uid=y", true), *session)) ==
        ResultCode::kUnwillingToPerform);
  CHECK(code_of(*fixture.run_one(rename_request(6, user_dn(1), "uid=user1", false, "dc=org"),
                                 *session)) == ResultCode::kAffectsMultipleDsas);

  const std::string unknown_type = "noSuchType=x," + std::string(kPeople);
  auto searched = fixture.run(
      search_request(7, unknown_type, SearchScope::kBaseObject, "(objectClass=*)"), *session);
  CHECK(done_of(searched).result.code == ResultCode::kInvalidDnSyntax);
  CHECK(code_of(*fixture.run_one(add_request(8, unknown_type, {{"cn", {"x"}}}), *session)) ==
        ResultCode::kInvalidDnSyntax);
  CHECK(code_of(*fixture.run_one(rename_request(9, user_dn(1), "noSuchType=x", true), *session)) ==
        ResultCode::kInvalidDnSyntax);
  CHECK(code_of(*fixture.run_one(rename_request(10, user_dn(1), "uidNumber=abc", true),
                                 *session)) == ResultCode::kInvalidDnSyntax);
}

TEST_CASE("OperationHandler: an unknown objectClass value is invalidAttributeSyntax as in slapd") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  bind_as(fixture, *session, kRootDn, kRootPassword);
  std::unique_ptr<Response> added =
      fixture.run_one(add_request(2, kNewUser,
                                  {{"objectClass", {"inetOrgPerson", "noSuchClass"}},
                                   {"uid", {"newbie"}},
                                   {"cn", {"New"}},
                                   {"sn", {"Bie"}}}),
                      *session);
  CHECK(code_of(*added) == ResultCode::kInvalidAttributeSyntax);
  CHECK(added->message.result.diagnostic_message == "objectClass: value #1 invalid per syntax");
  CHECK(
      code_of(*fixture.run_one(modify_request(3, user_dn(1), listener::wire::ModifyOperation::kAdd,
                                              "objectClass", {"noSuchClass"}),
                               *session)) == ResultCode::kInvalidAttributeSyntax);
}

TEST_CASE("OperationHandler: add and modify hash a cleartext userPassword") {
  using listener::wire::ModifyOperation;
  HandlerFixture fixture;  // Cleartext not allowed; the default scheme is {SSHA256}.
  auto session = fixture.open_session();
  bind_as(fixture, *session, kRootDn, kRootPassword);
  Result<std::string> prehashed =
      backend::hash_password("hashed secret", backend::PasswordScheme::kSsha1);
  REQUIRE(prehashed.ok());
  REQUIRE(code_of(*fixture.run_one(add_request(2, kNewUser,
                                               {{"objectClass", {"inetOrgPerson"}},
                                                {"uid", {"newbie"}},
                                                {"cn", {"New"}},
                                                {"sn", {"Bie"}},
                                                {"userPassword", {"newbie secret", *prehashed}}}),
                                   *session)) == ResultCode::kSuccess);
  auto bind_code = [&](std::string_view password) {
    auto user_session = fixture.open_session();
    return code_of(*fixture.run_one(bind_request(1, kNewUser, password), *user_session));
  };
  std::vector<std::string> stored = stored_values(fixture, kNewUser, "userPassword");
  REQUIRE(stored.size() == 2);
  CHECK(stored[0].starts_with("{SSHA256}"));
  CHECK(stored[1] == *prehashed);  // A value with a known scheme is kept as sent.
  CHECK(bind_code("newbie secret") == ResultCode::kSuccess);
  CHECK(bind_code("hashed secret") == ResultCode::kSuccess);

  SUBCASE("replace") {
    REQUIRE(code_of(*fixture.run_one(modify_request(3, kNewUser, ModifyOperation::kReplace,
                                                    "userPassword", {"{cleartext}replaced"}),
                                     *session)) == ResultCode::kSuccess);
    stored = stored_values(fixture, kNewUser, "userPassword");
    REQUIRE(stored.size() == 1);
    CHECK(stored[0].starts_with("{SSHA256}"));
    CHECK(bind_code("replaced") == ResultCode::kSuccess);
    CHECK(bind_code("newbie secret") == ResultCode::kInvalidCredentials);
  }
  SUBCASE("add") {
    REQUIRE(code_of(*fixture.run_one(modify_request(3, kNewUser, ModifyOperation::kAdd,
                                                    "userPassword", {"added secret"}),
                                     *session)) == ResultCode::kSuccess);
    stored = stored_values(fixture, kNewUser, "userPassword");
    REQUIRE(stored.size() == 3);
    CHECK(stored[2].starts_with("{SSHA256}"));
    CHECK(bind_code("added secret") == ResultCode::kSuccess);
    CHECK(bind_code("newbie secret") == ResultCode::kSuccess);
  }
}

TEST_CASE("OperationHandler: with cleartext allowed a userPassword is stored as sent") {
  HandlerOptions options = default_handler_options();
  options.allow_cleartext_passwords = true;
  HandlerFixture fixture(std::move(options));
  auto session = fixture.open_session();
  bind_as(fixture, *session, kRootDn, kRootPassword);
  REQUIRE(code_of(*fixture.run_one(add_request(2, kNewUser,
                                               {{"objectClass", {"inetOrgPerson"}},
                                                {"uid", {"newbie"}},
                                                {"cn", {"New"}},
                                                {"sn", {"Bie"}},
                                                {"userPassword", {"newbie secret"}}}),
                                   *session)) == ResultCode::kSuccess);
  CHECK(stored_values(fixture, kNewUser, "userPassword") ==
        std::vector<std::string>{"newbie secret"});
  auto user_session = fixture.open_session();
  CHECK(code_of(*fixture.run_one(bind_request(1, kNewUser, "newbie secret"), *user_session)) ==
        ResultCode::kSuccess);
}

}  // namespace
}  // namespace numadir::server::testing

namespace numadir::server::testing {
namespace {

// slapd's consumers answer a write into what they replicate with a referral to updateref,
// the request's DN as its path (the Password Modify exop: updateref alone), whoever asks.
TEST_CASE("Updates of replicated content get a referral to the provider") {
  using listener::wire::ModifyOperation;
  HandlerOptions options = default_handler_options();
  options.replicated.push_back({std::string(kPeople), "ldap://provider.example:389"});
  HandlerFixture fixture(std::move(options));
  auto session = fixture.open_session();
  bind_as(fixture, *session, kRootDn, kRootPassword);

  const auto expect_referral = [](const Response& response, std::string_view url) {
    CHECK(code_of(response) == ResultCode::kReferral);
    REQUIRE(response.message.result.referrals.size() == 1);
    CHECK(response.message.result.referrals[0] == url);
  };
  expect_referral(
      *fixture.run_one(modify_request(2, user_dn(1), ModifyOperation::kReplace, "sn", {"Changed"}),
                       *session),
      "ldap://provider.example:389/uid=user1,ou=people,dc=example,dc=com");
  expect_referral(*fixture.run_one(add_request(3, "uid=new user,ou=people,dc=example,dc=com",
                                               {{"objectClass", {"account"}}, {"uid", {"new"}}}),
                                   *session),
                  "ldap://provider.example:389/uid=new%20user,ou=people,dc=example,dc=com");
  expect_referral(*fixture.run_one(delete_request(4, user_dn(2)), *session),
                  "ldap://provider.example:389/uid=user2,ou=people,dc=example,dc=com");
  const std::string passwd = passwd_value(user_dn(3), std::nullopt, "new secret");
  expect_referral(*fixture.run_one(extended_request(5, kPasswordModifyOid, passwd), *session),
                  "ldap://provider.example:389");
  // Nothing was written; outside the replicated content updates go on.
  CHECK(stored_values(fixture, user_dn(1), "sn") == std::vector<std::string>{"Smith"});
  CHECK(
      code_of(*fixture.run_one(modify_request(6, "ou=groups,dc=example,dc=com",
                                              ModifyOperation::kReplace, "description", {"local"}),
                               *session)) == ResultCode::kSuccess);
}

}  // namespace
}  // namespace numadir::server::testing
