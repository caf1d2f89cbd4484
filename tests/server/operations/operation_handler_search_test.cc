// OperationHandler (server/operations/operation_handler.h): Search: scopes, attribute selection,
// limits, access to userPassword, abandon, and the root DSE and subschema entries.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "schema/dn.h"
#include "server/operations/root_dse.h"
#include "tests/server/operations/operation_handler_test_util.h"

namespace numadir::server::testing {
namespace {

bool contains(const std::vector<std::string>& values, std::string_view wanted) {
  return std::find(values.begin(), values.end(), wanted) != values.end();
}

TEST_CASE("OperationHandler: the auth search returns one entry with no attributes") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  auto responses = fixture.run(
      search_request(4, kPeople, SearchScope::kWholeSubtree, "(uid=user3)", {"1.1"}), *session);
  REQUIRE(responses.size() == 2);
  auto entries = entries_of(responses);
  REQUIRE(entries.size() == 1);
  CHECK(entries[0]->object_name == user_dn(3));
  CHECK(entries[0]->attributes.empty());
  CHECK(responses[0]->message.message_id == 4);
  const LdapMessage& done = done_of(responses);
  CHECK(done.message_id == 4);
  CHECK(done.result.code == ResultCode::kSuccess);
}

TEST_CASE("OperationHandler: search scopes") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  auto count = [&](std::string_view base, SearchScope scope) {
    auto responses =
        fixture.run(search_request(1, base, scope, "(objectClass=*)", {"1.1"}), *session);
    CHECK(done_of(responses).result.code == ResultCode::kSuccess);
    return entries_of(responses).size();
  };
  CHECK(count("dc=example,dc=com", SearchScope::kBaseObject) == 1);
  CHECK(count("dc=example,dc=com", SearchScope::kSingleLevel) == 2);
  CHECK(count("dc=example,dc=com", SearchScope::kWholeSubtree) == 8);
  CHECK(count("dc=example,dc=com", SearchScope::kSubordinateSubtree) == 7);
  CHECK(count(kPeople, SearchScope::kSingleLevel) == 5);
}

TEST_CASE("OperationHandler: search base errors") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  SUBCASE("a missing base is noSuchObject with the matched DN") {
    auto responses = fixture.run(search_request(2, "uid=ghost,ou=people,dc=example,dc=com",
                                                SearchScope::kWholeSubtree, "(objectClass=*)"),
                                 *session);
    REQUIRE(responses.size() == 1);
    CHECK(done_of(responses).result.code == ResultCode::kNoSuchObject);
    CHECK(done_of(responses).result.matched_dn == kPeople);
  }
  SUBCASE("a base that is no DN is invalidDNSyntax") {
    auto responses = fixture.run(
        search_request(2, "not a dn", SearchScope::kWholeSubtree, "(objectClass=*)"), *session);
    REQUIRE(responses.size() == 1);
    CHECK(done_of(responses).result.code == ResultCode::kInvalidDnSyntax);
  }
  SUBCASE("the empty base below base scope is noSuchObject") {
    auto responses =
        fixture.run(search_request(2, "", SearchScope::kWholeSubtree, "(objectClass=*)"), *session);
    REQUIRE(responses.size() == 1);
    CHECK(done_of(responses).result.code == ResultCode::kNoSuchObject);
  }
}

TEST_CASE("OperationHandler: DNs under a parent seen before still check and match every RDN") {
  // Each thread keeps the last parent it normalized (operation_handler.h): whatever order the
  // bases come in, each answer is what the base alone gives.
  HandlerFixture fixture;
  HandlerFixture other;  // A second handler on the same thread: its own schema and memo key.
  auto session = fixture.open_session();
  auto other_session = other.open_session();
  struct Case {
    std::string base;
    ResultCode code;
    std::size_t entries;
  };
  const std::vector<Case> cases = {
      {user_dn(1), ResultCode::kSuccess, 1},
      {"uid=user2,ou=people,dc=example,dc=com", ResultCode::kSuccess, 1},
      {"UID=User3,ou=people,dc=example,dc=com", ResultCode::kSuccess, 1},
      {"nosuchtype=x,ou=people,dc=example,dc=com", ResultCode::kInvalidDnSyntax, 0},
      {"uid=ghost,ou=people,dc=example,dc=com", ResultCode::kNoSuchObject, 0},
      {"uid=user4, OU=People ,dc=Example,dc=com", ResultCode::kSuccess, 1},
      {"uid=user5,OU=People ,dc=Example,dc=com", ResultCode::kSuccess, 1},
      {"uid=user5,ou=people,dc=example,nosuchtype=com", ResultCode::kInvalidDnSyntax, 0},
      {"uid=user5,ou=people,dc=example,dc=org", ResultCode::kNoSuchObject, 0},
      {"uid=user5,ou=people,dc=example,dc=com", ResultCode::kSuccess, 1},
      {"uid=user1,ou=people,dc=example", ResultCode::kNoSuchObject, 0},
      {"uid=user1,ou=people,dc=example,dc=com", ResultCode::kSuccess, 1},
  };
  for (int round = 0; round < 2; ++round) {
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[round == 0 ? i : cases.size() - 1 - i];
      CAPTURE(c.base);
      for (HandlerFixture* f : {&fixture, &other}) {
        auto responses =
            f->run(search_request(4, c.base, SearchScope::kBaseObject, "(objectClass=*)", {"1.1"}),
                   f == &fixture ? *session : *other_session);
        CHECK(done_of(responses).result.code == c.code);
        REQUIRE(entries_of(responses).size() == c.entries);
        if (c.entries == 1) {
          CHECK(schema::normalize_dn(entries_of(responses)[0]->object_name).value() ==
                schema::normalize_dn(c.base).value());
        }
      }
      // A bind names its DN the same way: the right password works under any spelling.
      if (c.code == ResultCode::kSuccess) {
        const int user = c.base[c.base.find(',') - 1] - '0';  // uid=userN,...
        CHECK(code_of(*fixture.run_one(bind_request(5, c.base, user_password(user)), *session)) ==
              ResultCode::kSuccess);
        CHECK(code_of(*fixture.run_one(bind_request(6, c.base, user_password(user + 1)),
                                       *session)) == ResultCode::kInvalidCredentials);
      }
    }
  }
}

TEST_CASE("OperationHandler: attribute selection") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  const std::string dn = user_dn(1);
  auto first_entry = [&](std::vector<std::string_view> attributes, bool types_only = false) {
    LdapMessage request =
        search_request(3, dn, SearchScope::kBaseObject, "(objectClass=*)", std::move(attributes));
    request.search_request.types_only = types_only;
    auto responses = fixture.run(request, *session);
    REQUIRE(responses.size() == 2);
    CHECK(done_of(responses).result.code == ResultCode::kSuccess);
    return std::move(responses[0]);
  };
  SUBCASE("no list and * give the user attributes only") {
    for (auto list : {std::vector<std::string_view>{}, std::vector<std::string_view>{"*"}}) {
      auto entry = first_entry(list);
      const auto& result = entry->message.search_entry;
      CHECK(has_type(result, "uid"));
      CHECK(has_type(result, "cn"));
      CHECK(has_type(result, "cn;lang-de"));
      CHECK(has_type(result, "objectClass"));
      CHECK_FALSE(has_type(result, "entryUUID"));
      CHECK_FALSE(has_type(result, "createTimestamp"));
      CHECK_FALSE(has_type(result, "userPassword"));
    }
  }
  SUBCASE("+ gives the operational attributes only") {
    auto entry = first_entry({"+"});
    const auto& result = entry->message.search_entry;
    CHECK(has_type(result, "entryUUID"));
    CHECK(has_type(result, "createTimestamp"));
    CHECK(has_type(result, "structuralObjectClass"));
    CHECK(values_of(result, "hasSubordinates") == std::vector<std::string>{"FALSE"});
    CHECK(values_of(result, "subschemaSubentry") == std::vector<std::string>{"cn=Subschema"});
    CHECK_FALSE(has_type(result, "uid"));
  }
  SUBCASE("* and + together give both") {
    auto entry = first_entry({"*", "+"});
    CHECK(has_type(entry->message.search_entry, "uid"));
    CHECK(has_type(entry->message.search_entry, "entryUUID"));
    CHECK_FALSE(has_type(entry->message.search_entry, "userPassword"));
  }
  SUBCASE("names and OIDs in any case select those types and their subtypes") {
    auto entry = first_entry({"MAIL", "2.5.4.4", "no-such-attribute", "name"});
    const auto& result = entry->message.search_entry;
    CHECK(values_of(result, "mail") == std::vector<std::string>{"user1@example.com"});
    CHECK(values_of(result, "sn") == std::vector<std::string>{"Smith"});
    CHECK(has_type(result, "cn"));  // A subtype of name.
    CHECK(has_type(result, "cn;lang-de"));
    CHECK_FALSE(has_type(result, "uid"));
  }
  SUBCASE("an option selects only the values tagged with it") {
    auto entry = first_entry({"cn;lang-de"});
    CHECK(types_of(entry->message.search_entry) == std::vector<std::string>{"cn;lang-de"});
  }
  SUBCASE("1.1 with other names is ignored") {
    auto entry = first_entry({"1.1", "uid"});
    CHECK(types_of(entry->message.search_entry) == std::vector<std::string>{"uid"});
  }
  SUBCASE("an object class selects its attributes") {
    auto entry = first_entry({"@person"});
    const auto& result = entry->message.search_entry;
    CHECK(has_type(result, "sn"));
    CHECK(has_type(result, "cn"));
    CHECK_FALSE(has_type(result, "uid"));  // inetOrgPerson's, not person's.
  }
  SUBCASE("typesOnly sends types without values") {
    auto entry = first_entry({"uid", "cn"}, /*types_only=*/true);
    const auto& result = entry->message.search_entry;
    REQUIRE(has_type(result, "uid"));
    CHECK(values_of(result, "uid")->empty());
    CHECK(values_of(result, "cn")->empty());
  }
}

TEST_CASE("OperationHandler: userPassword is never returned nor searchable") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  SUBCASE("anonymous") {}
  SUBCASE("bound as the entry's owner") {
    REQUIRE(code_of(*fixture.run_one(bind_request(1, user_dn(1), user_password(1)), *session)) ==
            ResultCode::kSuccess);
  }
  auto responses = fixture.run(search_request(2, user_dn(1), SearchScope::kBaseObject,
                                              "(objectClass=*)", {"userPassword", "*", "+"}),
                               *session);
  REQUIRE(entries_of(responses).size() == 1);
  CHECK_FALSE(has_type(*entries_of(responses)[0], "userPassword"));

  // A filter on it cannot match (nor its negation: the item is Undefined).
  for (std::string_view filter : {"(userPassword=*)", "(!(userPassword=*))",
                                  "(userPassword={SSHA}x)", "(!(userPassword={SSHA}x))"}) {
    CAPTURE(filter);
    auto filtered = fixture.run(
        search_request(3, kPeople, SearchScope::kWholeSubtree, filter, {"1.1"}), *session);
    CHECK(done_of(filtered).result.code == ResultCode::kSuccess);
    CHECK(entries_of(filtered).empty());
  }
}

TEST_CASE("OperationHandler: the rootdn reads userPassword") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  REQUIRE(code_of(*fixture.run_one(bind_request(1, kRootDn, kRootPassword), *session)) ==
          ResultCode::kSuccess);
  auto responses = fixture.run(
      search_request(2, kPeople, SearchScope::kWholeSubtree, "(userPassword=*)", {"userPassword"}),
      *session);
  auto entries = entries_of(responses);
  REQUIRE(entries.size() == 5);
  CHECK(values_of(*entries[0], "userPassword")->at(0).starts_with("{SSHA}"));
}

TEST_CASE("OperationHandler: size limits") {
  SUBCASE("the client's limit stops the search with sizeLimitExceeded") {
    HandlerFixture fixture;
    auto session = fixture.open_session();
    LdapMessage request =
        search_request(5, kPeople, SearchScope::kSingleLevel, "(objectClass=*)", {"1.1"});
    request.search_request.size_limit = 2;
    auto responses = fixture.run(request, *session);
    CHECK(entries_of(responses).size() == 2);
    CHECK(done_of(responses).result.code == ResultCode::kSizeLimitExceeded);
  }
  SUBCASE("a limit equal to the result size is not exceeded") {
    HandlerFixture fixture;
    auto session = fixture.open_session();
    LdapMessage request =
        search_request(5, kPeople, SearchScope::kSingleLevel, "(objectClass=*)", {"1.1"});
    request.search_request.size_limit = 5;
    auto responses = fixture.run(request, *session);
    CHECK(entries_of(responses).size() == 5);
    CHECK(done_of(responses).result.code == ResultCode::kSuccess);
  }
  SUBCASE("the server's limit per identity class applies and the smaller one wins") {
    HandlerOptions options = default_handler_options();
    options.size_limit_anonymous = 1;
    options.size_limit_users = 3;
    options.size_limit_root = 0;
    HandlerFixture fixture(std::move(options));
    auto session = fixture.open_session();
    auto run = [&](std::int32_t client_limit) {
      LdapMessage request =
          search_request(5, kPeople, SearchScope::kSingleLevel, "(objectClass=*)", {"1.1"});
      request.search_request.size_limit = client_limit;
      return fixture.run(request, *session);
    };
    auto anonymous = run(0);
    CHECK(entries_of(anonymous).size() == 1);
    CHECK(done_of(anonymous).result.code == ResultCode::kSizeLimitExceeded);

    REQUIRE(code_of(*fixture.run_one(bind_request(1, user_dn(1), user_password(1)), *session)) ==
            ResultCode::kSuccess);
    CHECK(entries_of(run(0)).size() == 3);
    CHECK(entries_of(run(2)).size() == 2);

    REQUIRE(code_of(*fixture.run_one(bind_request(1, kRootDn, kRootPassword), *session)) ==
            ResultCode::kSuccess);
    auto root = run(0);
    CHECK(entries_of(root).size() == 5);
    CHECK(done_of(root).result.code == ResultCode::kSuccess);
    CHECK(entries_of(run(4)).size() == 4);
  }
}

TEST_CASE("OperationHandler: an abandoned search stops without a done") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  RecordingSink sink;
  sink.abandon_after = 2;
  fixture.handle(search_request(6, kPeople, SearchScope::kSingleLevel, "(objectClass=*)", {"1.1"}),
                 *session, sink);
  REQUIRE(sink.responses.size() == 2);
  for (const auto& response : sink.responses) {
    CHECK(response->message.op == ProtocolOp::kSearchResultEntry);
  }
}

TEST_CASE("OperationHandler: root DSE") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  auto root_dse = [&](std::vector<std::string_view> attributes,
                      std::string_view filter = "(objectClass=*)") {
    auto responses = fixture.run(
        search_request(9, "", SearchScope::kBaseObject, filter, std::move(attributes)), *session);
    CHECK(done_of(responses).result.code == ResultCode::kSuccess);
    return responses;
  };
  SUBCASE("without attributes only objectClass comes back") {
    auto responses = root_dse({});
    auto entries = entries_of(responses);
    REQUIRE(entries.size() == 1);
    CHECK(entries[0]->object_name.empty());
    CHECK(types_of(*entries[0]) == std::vector<std::string>{"objectClass"});
  }
  SUBCASE("+ lists what the server supports") {
    auto responses = root_dse({"+"});
    auto entries = entries_of(responses);
    REQUIRE(entries.size() == 1);
    const auto& entry = *entries[0];
    CHECK(values_of(entry, "namingContexts") == std::vector<std::string>{"dc=example,dc=com"});
    CHECK(values_of(entry, "supportedLDAPVersion") == std::vector<std::string>{"3"});
    CHECK(values_of(entry, "subschemaSubentry") == std::vector<std::string>{"cn=Subschema"});
    CHECK(values_of(entry, "vendorName") == std::vector<std::string>{"numadir"});
    CHECK(values_of(entry, "vendorVersion") == std::vector<std::string>{"numadir test"});
    const auto controls = *values_of(entry, "supportedControl");
    CHECK(contains(controls, kPagedResultsOid));
    CHECK(contains(controls, kManageDsaItOid));
    const auto extensions = *values_of(entry, "supportedExtension");
    CHECK(contains(extensions, kWhoAmIOid));
    CHECK(contains(extensions, kPasswordModifyOid));
    CHECK_FALSE(contains(extensions, kStartTlsOid));
    const auto features = *values_of(entry, "supportedFeatures");
    CHECK(contains(features, "1.3.6.1.1.14"));
    CHECK(contains(features, "1.3.6.1.4.1.4203.1.5.1"));
    CHECK(contains(features, "1.3.6.1.4.1.4203.1.5.3"));
    CHECK_FALSE(has_type(entry, "objectClass"));
    CHECK_FALSE(has_type(entry, "supportedSASLMechanisms"));
  }
  SUBCASE("attributes asked for by name") {
    auto responses = root_dse({"namingcontexts", "supportedExtension"});
    auto entries = entries_of(responses);
    REQUIRE(entries.size() == 1);
    CHECK(types_of(*entries[0]) ==
          std::vector<std::string>{"namingContexts", "supportedExtension"});
  }
  SUBCASE("the filter applies") {
    CHECK(entries_of(root_dse({}, "(objectClass=person)")).empty());
    CHECK(entries_of(root_dse({}, "(|(objectClass=top)(cn=x))")).size() == 1);
  }
  SUBCASE("every filter item is evaluated as on stored entries, as slapd evaluates it") {
    // Approximate is equality where there is no approximate rule.
    CHECK(entries_of(root_dse({}, "(objectClass~=top)")).size() == 1);
    CHECK(entries_of(root_dse({}, "(vendorName=numadir)")).size() == 1);
    // objectClass has no substrings rule: Undefined, so neither it nor its negation matches.
    CHECK(entries_of(root_dse({}, "(objectClass=*top*)")).empty());
    CHECK(entries_of(root_dse({}, "(!(objectClass=*top*))")).empty());
    CHECK(entries_of(root_dse({}, "(|(objectClass=*top*)(namingContexts=*))")).size() == 1);
  }
}

TEST_CASE("OperationHandler: substring and extensible filters match the subschema subentry") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  const auto found = [&](std::string_view filter) {
    auto responses = fixture.run(
        search_request(9, "cn=Subschema", SearchScope::kBaseObject, filter, {"1.1"}), *session);
    CHECK(done_of(responses).result.code == ResultCode::kSuccess);
    return entries_of(responses).size();
  };
  CHECK(found("(cn=sub*)") == 1);
  CHECK(found("(cn=*SCHEMA)") == 1);
  CHECK(found("(cn:caseExactMatch:=Subschema)") == 1);
  CHECK(found("(cn:caseExactMatch:=subschema)") == 0);
  CHECK(found("(cn=*monitor*)") == 0);
  CHECK(found("(&(objectClass=subentry)(cn=s*a))") == 1);
}

TEST_CASE("OperationHandler: subschema subentry") {
  HandlerFixture fixture;
  auto session = fixture.open_session();
  auto subschema = [&](std::vector<std::string_view> attributes) {
    auto responses = fixture.run(search_request(9, "cn=Subschema", SearchScope::kBaseObject,
                                                "(objectClass=subschema)", std::move(attributes)),
                                 *session);
    CHECK(done_of(responses).result.code == ResultCode::kSuccess);
    auto entries = entries_of(responses);
    REQUIRE(entries.size() == 1);
    CHECK(entries[0]->object_name == "cn=Subschema");
    return responses;
  };
  SUBCASE("without attributes: objectClass and cn") {
    auto responses = subschema({});
    CHECK(types_of(*entries_of(responses)[0]) == std::vector<std::string>{"objectClass", "cn"});
  }
  SUBCASE("+ publishes the schema") {
    auto responses = subschema({"+"});
    const auto& entry = *entries_of(responses)[0];
    const auto types = *values_of(entry, "attributeTypes");
    CHECK(std::any_of(types.begin(), types.end(), [](const std::string& d) {
      return d.starts_with("( 2.5.4.3 NAME ( 'cn' 'commonName' )");
    }));
    const auto classes = *values_of(entry, "objectClasses");
    CHECK(std::any_of(classes.begin(), classes.end(), [](const std::string& d) {
      return d.starts_with("( 2.16.840.1.113730.3.2.2 NAME 'inetOrgPerson'");
    }));
    const auto syntaxes = *values_of(entry, "ldapSyntaxes");
    CHECK(contains(syntaxes, "( 1.3.6.1.4.1.1466.115.121.1.15 DESC 'Directory String' )"));
    const auto rules = *values_of(entry, "matchingRules");
    CHECK(contains(rules,
                   "( 2.5.13.2 NAME 'caseIgnoreMatch' SYNTAX "
                   "1.3.6.1.4.1.1466.115.121.1.15 )"));
    const auto uses = *values_of(entry, "matchingRuleUse");
    CHECK(std::any_of(uses.begin(), uses.end(), [](const std::string& d) {
      return d.starts_with("( 2.5.13.2 NAME 'caseIgnoreMatch' APPLIES (") &&
             d.find(" cn ") != std::string::npos;
    }));
    CHECK(values_of(entry, "createTimestamp")->size() == 1);
    CHECK(values_of(entry, "modifyTimestamp")->size() == 1);
  }
  SUBCASE("one type by name") {
    auto responses = subschema({"ldapSyntaxes"});
    CHECK(types_of(*entries_of(responses)[0]) == std::vector<std::string>{"ldapSyntaxes"});
  }
}

}  // namespace
}  // namespace numadir::server::testing
