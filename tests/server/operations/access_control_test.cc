// AccessControl (server/operations/access_control.h): the default policy, access parsing, and
// configured rules (targets by DN scope, filter and attributes; every kind of subject; first match
// wins).
#include "server/operations/access_control.h"

#include <doctest/doctest.h>

#include <map>
#include <set>

#include "schema/dn.h"
#include "tests/backend/backend_test_util.h"

namespace numadir::server {
namespace {

constexpr std::string_view kAlice = "uid=alice,ou=people,dc=example,dc=com";
constexpr std::string_view kBob = "uid=bob,ou=people,dc=example,dc=com";
constexpr std::string_view kPeople = "ou=people,dc=example,dc=com";

const backend::AttributeCatalog& catalog() {
  static const backend::AttributeCatalog instance(backend::testing::test_schema());
  return instance;
}

Result<std::unique_ptr<AccessControl>> compile(const std::vector<AccessRuleSpec>& rules) {
  return AccessControl::create(catalog(), rules,
                               [](std::string_view dn) { return schema::normalize_dn(dn); });
}

// A fixed answer per (group, member); groups in `unreadable` answer kUnknown (a failed read).
class FakeGroups final : public GroupMembership {
 public:
  std::set<std::pair<std::string, std::string>> members;
  std::set<std::string> unreadable;
  mutable int lookups = 0;
  Membership is_member(std::string_view group_ndn, std::string_view member_ndn) const override {
    ++lookups;
    if (unreadable.contains(std::string(group_ndn))) {
      return Membership::kUnknown;
    }
    return members.contains({std::string(group_ndn), std::string(member_ndn)})
               ? Membership::kMember
               : Membership::kNotMember;
  }
};

Identity user(std::string_view dn) { return Identity{std::string(dn), std::string(dn), false}; }

AccessSubjectSpec who(std::string_view subject, std::string_view access) {
  AccessSubjectSpec spec;
  spec.who = std::string(subject);
  spec.access = *parse_access(access);
  return spec;
}

const schema::AttributeType* type(std::string_view name) {
  const schema::AttributeType* found = backend::testing::test_schema().attribute_type(name);
  REQUIRE(found != nullptr);
  return found;
}

TEST_CASE("AccessControl: the default policy") {
  const AccessControl access(backend::testing::test_schema());
  const AccessAttribute password = AccessAttribute::of(type("userPassword"));
  const AccessAttribute cn = AccessAttribute::of(type("cn"));
  const Identity anonymous;
  const Identity alice = user(kAlice);
  const Identity root{"cn=admin,dc=example,dc=com", "cn=admin,dc=example,dc=com", true};
  const auto mask = [&](const Identity& identity, std::string_view ndn, AccessAttribute what) {
    return access.privileges(Requester{identity}, AccessEntry{ndn}, what);
  };
  CHECK(access.is_default());
  CHECK_FALSE(access.needs_entry());

  SUBCASE("userPassword is for authentication only") {
    CHECK(mask(anonymous, kAlice, password) == up_to(AccessLevel::kAuth));
    CHECK(mask(alice, kBob, password) == up_to(AccessLevel::kAuth));
    // The owner: =wx, so write but no read, search or compare.
    CHECK(mask(alice, kAlice, password) ==
          (privilege(AccessLevel::kWrite) | privilege(AccessLevel::kAuth)));
    CHECK(access.is_password(password.type));
    CHECK_FALSE(access.is_password(cn.type));
  }
  SUBCASE("everything else is readable by all and writable by self and the rootdn") {
    CHECK(mask(anonymous, kAlice, cn) == up_to(AccessLevel::kRead));
    CHECK(mask(alice, kBob, cn) == up_to(AccessLevel::kRead));
    CHECK(mask(alice, kAlice, cn) == up_to(AccessLevel::kWrite));
    CHECK(mask(alice, kAlice, AccessAttribute::entry()) == up_to(AccessLevel::kWrite));
    CHECK(mask(alice, kBob, AccessAttribute::entry()) == up_to(AccessLevel::kRead));
    CHECK(mask(root, kBob, password) == up_to(AccessLevel::kWrite));
  }
  SUBCASE("only the rootdn adds and removes entries") {
    CHECK(mask(root, kPeople, AccessAttribute::children()) == up_to(AccessLevel::kWrite));
    CHECK(mask(alice, kPeople, AccessAttribute::children()) == up_to(AccessLevel::kRead));
    CHECK(mask(alice, kAlice, AccessAttribute::children()) == up_to(AccessLevel::kRead));
    CHECK(mask(anonymous, "", AccessAttribute::children()) == up_to(AccessLevel::kRead));
  }
}

TEST_CASE("AccessControl: access levels and privilege sets") {
  CHECK(*parse_access("none") == 0);
  CHECK(*parse_access("disclose") == privilege(AccessLevel::kDisclose));
  CHECK(*parse_access("read") == up_to(AccessLevel::kRead));
  CHECK(*parse_access("WRITE") == up_to(AccessLevel::kWrite));
  CHECK(*parse_access("=wx") == (privilege(AccessLevel::kWrite) | privilege(AccessLevel::kAuth)));
  CHECK(*parse_access("=rscxd") == up_to(AccessLevel::kRead));
  CHECK(*parse_access("=0") == 0);
  CHECK_FALSE(parse_access("").ok());
  CHECK_FALSE(parse_access("=").ok());
  CHECK_FALSE(parse_access("=wq").ok());
  CHECK_FALSE(parse_access("manage").ok());
  CHECK(*parse_dn_scope("children") == DnScope::kChildren);
  CHECK_FALSE(parse_dn_scope("sub").ok());
}

TEST_CASE("AccessControl: DN scopes of targets and subjects") {
  const std::map<std::string, std::vector<std::pair<std::string_view, bool>>> expected = {
      {"base", {{kPeople, true}, {kAlice, false}, {"dc=example,dc=com", false}}},
      {"one",
       {{kPeople, false}, {kAlice, true}, {"cn=x,uid=alice,ou=people,dc=example,dc=com", false}}},
      {"subtree",
       {{kPeople, true}, {kAlice, true}, {"cn=x,uid=alice,ou=people,dc=example,dc=com", true}}},
      {"children",
       {{kPeople, false},
        {kAlice, true},
        {"cn=x,uid=alice,ou=people,dc=example,dc=com", true},
        // Not below it: a suffix of the string, but not of the RDN sequence.
        {"ou=xou=people,dc=example,dc=com", false},
        {"ou=other,dc=example,dc=com", false}}},
  };
  for (const auto& scope_cases : expected) {
    const auto& scope = scope_cases.first;   // Not a structured binding: CAPTURE takes it in a
    const auto& cases = scope_cases.second;  // lambda, which clang 14 does not allow.
    CAPTURE(scope);
    AccessRuleSpec rule{"access[0]", std::string(kPeople), *parse_dn_scope(scope), "",
                        {},          {who("*", "read")}};
    AccessRuleSpec subject{"access[0]", "", DnScope::kSubtree, "", {}, {}};
    AccessSubjectSpec by;
    by.dn = std::string(kPeople);
    by.dn_scope = *parse_dn_scope(scope);
    by.access = up_to(AccessLevel::kWrite);
    subject.by.push_back(by);
    const auto targets = compile({rule});
    const auto subjects = compile({subject});
    REQUIRE(targets.ok());
    REQUIRE(subjects.ok());
    for (const auto& ndn_matches : cases) {
      const auto& ndn = ndn_matches.first;
      const bool matches = ndn_matches.second;
      CAPTURE(ndn);
      CHECK(((*targets)->privileges(Requester{Identity{}}, AccessEntry{ndn},
                                    AccessAttribute::entry()) != 0) == matches);
      const Identity identity = user(ndn);
      CHECK(((*subjects)->privileges(Requester{identity}, AccessEntry{kBob},
                                     AccessAttribute::entry()) != 0) == matches);
    }
  }
}

TEST_CASE("AccessControl: configured rules") {
  // access to dn.subtree=ou=people attrs=userPassword by self =wx by anonymous auth
  // access to dn.children=ou=people filter=(objectClass=person) attrs=mail,entry
  //   by group=cn=admins write by users read
  // access to dn.subtree=ou=people by dn.one=ou=people read by * disclose
  std::vector<AccessRuleSpec> rules;
  rules.push_back({"access[0]",
                   std::string(kPeople),
                   DnScope::kSubtree,
                   "",
                   {"userPassword"},
                   {who("self", "=wx"), who("anonymous", "auth")}});
  AccessSubjectSpec admins;
  admins.group = "cn=admins,dc=example,dc=com";
  admins.access = up_to(AccessLevel::kWrite);
  rules.push_back({"access[1]",
                   std::string(kPeople),
                   DnScope::kChildren,
                   "(objectClass=person)",
                   {"mail", "entry"},
                   {admins, who("users", "read")}});
  AccessSubjectSpec people;
  people.dn = std::string(kPeople);
  people.dn_scope = DnScope::kOne;
  people.access = up_to(AccessLevel::kRead);
  rules.push_back({"access[2]",
                   std::string(kPeople),
                   DnScope::kSubtree,
                   "",
                   {},
                   {people, who("*", "disclose")}});
  auto compiled = compile(rules);
  REQUIRE(compiled.ok());
  const AccessControl& access = **compiled;
  CHECK_FALSE(access.is_default());
  CHECK(access.needs_entry());
  CHECK(access.has_groups());

  FakeGroups groups;
  groups.members.insert({"cn=admins,dc=example,dc=com", std::string(kBob)});
  const Identity anonymous;
  const Identity alice = user(kAlice);
  const Identity bob = user(kBob);
  const Identity outsider = user("cn=someone,dc=example,dc=com");
  const Identity root{"cn=admin,dc=example,dc=com", "cn=admin,dc=example,dc=com", true};
  schema::Entry person{std::string(kAlice),
                       {{"objectClass", {"inetOrgPerson"}}, {"uid", {"alice"}}}};
  schema::Entry device{std::string(kAlice), {{"objectClass", {"device"}}, {"cn", {"x"}}}};
  const AccessAttribute password = AccessAttribute::of(type("userPassword"));
  const AccessAttribute mail = AccessAttribute::of(type("mail"));
  const AccessAttribute cn = AccessAttribute::of(type("cn"));
  const auto mask = [&](const Identity& identity, const schema::Entry* entry,
                        AccessAttribute what) {
    return access.privileges(Requester{identity, &groups}, AccessEntry{kAlice, entry}, what);
  };

  SUBCASE("the first matching rule decides, its first matching clause gives the access") {
    CHECK(mask(alice, &person, password) ==
          (privilege(AccessLevel::kWrite) | privilege(AccessLevel::kAuth)));
    CHECK(mask(anonymous, &person, password) == up_to(AccessLevel::kAuth));
    // A rule matched but no clause: none, even though a later rule would grant more.
    CHECK(mask(bob, &person, password) == 0);
    CHECK(mask(outsider, &person, password) == 0);
  }
  SUBCASE("group members and users") {
    CHECK(mask(bob, &person, mail) == up_to(AccessLevel::kWrite));
    CHECK(mask(alice, &person, mail) == up_to(AccessLevel::kRead));
    CHECK(mask(anonymous, &person, mail) == 0);
    CHECK(mask(bob, &person, AccessAttribute::entry()) == up_to(AccessLevel::kWrite));
  }
  SUBCASE("a filter target that does not match falls through to the next rule") {
    CHECK(mask(bob, &device, mail) == up_to(AccessLevel::kRead));  // dn.one=ou=people.
    CHECK(mask(anonymous, &device, mail) == privilege(AccessLevel::kDisclose));
  }
  SUBCASE("attributes no earlier rule names") {
    CHECK(mask(alice, &person, cn) == up_to(AccessLevel::kRead));
    CHECK(mask(outsider, &person, cn) == privilege(AccessLevel::kDisclose));
  }
  SUBCASE("without the entry a filtered rule refuses rather than falls through") {
    CHECK(mask(bob, nullptr, mail) == 0);
  }
  SUBCASE("no rule matches: none; the rootdn: everything") {
    CHECK(access.privileges(Requester{alice, &groups}, AccessEntry{"dc=example,dc=com"},
                            AccessAttribute::entry()) == 0);
    CHECK(access.privileges(Requester{root, &groups}, AccessEntry{"dc=example,dc=com"},
                            AccessAttribute::entry()) == up_to(AccessLevel::kWrite));
  }
  SUBCASE("group clauses ask only for bound identities, without groups nothing matches") {
    groups.lookups = 0;
    CHECK(mask(anonymous, &person, mail) == 0);
    CHECK(groups.lookups == 0);
    CHECK(access.privileges(Requester{bob, nullptr}, AccessEntry{kAlice, &person}, mail) ==
          up_to(AccessLevel::kRead));
  }
}

TEST_CASE("AccessControl: a group that cannot be read fails the decision") {
  // access to * by group=cn=blocked none by * read
  AccessSubjectSpec blocked;
  blocked.group = "cn=blocked,dc=example,dc=com";
  blocked.access = 0;
  auto compiled =
      compile({{"access[0]", "", DnScope::kSubtree, "", {}, {blocked, who("*", "read")}}});
  REQUIRE(compiled.ok());
  const AccessControl& access = **compiled;
  FakeGroups groups;
  const Identity alice = user(kAlice);
  const Requester requester{alice, &groups};
  const AccessEntry target{kBob};
  const AccessAttribute cn = AccessAttribute::of(type("cn"));

  SUBCASE("readable: a non-member falls through to the next clause") {
    CHECK(access.privileges(requester, target, cn) == up_to(AccessLevel::kRead));
    CHECK(access.decide(requester, target, cn, AccessLevel::kRead) == AccessDecision::kAllowed);
    CHECK(access.decide(requester, target, cn, AccessLevel::kWrite) == AccessDecision::kDenied);
  }
  SUBCASE("unreadable: neither the group's clause nor a later one decides") {
    groups.unreadable.insert("cn=blocked,dc=example,dc=com");
    CHECK_FALSE(access.privileges(requester, target, cn).has_value());
    CHECK(access.decide(requester, target, cn, AccessLevel::kRead) == AccessDecision::kFailed);
    CHECK(access.decide(requester, target, cn, AccessLevel::kDisclose) == AccessDecision::kFailed);
  }
  SUBCASE("unreadable but never reached: a clause before it decides") {
    groups.unreadable.insert("cn=blocked,dc=example,dc=com");
    auto first =
        compile({{"access[0]", "", DnScope::kSubtree, "", {}, {who("self", "write"), blocked}}});
    REQUIRE(first.ok());
    const Requester bob{Identity{std::string(kBob), std::string(kBob), false}, &groups};
    CHECK((*first)->decide(bob, target, cn, AccessLevel::kWrite) == AccessDecision::kAllowed);
    CHECK((*first)->decide(requester, target, cn, AccessLevel::kRead) == AccessDecision::kFailed);
  }
}

TEST_CASE("AccessControl: rules that do not compile name the rule and key") {
  const auto problem = [](AccessRuleSpec rule) {
    auto compiled = compile({rule});
    REQUIRE_FALSE(compiled.ok());
    return compiled.status().message();
  };
  CHECK(problem({"access[3]", "", DnScope::kSubtree, "", {"nosuchattr"}, {who("*", "read")}})
            .starts_with("access[3].attrs: \"nosuchattr\""));
  CHECK(problem({"access[0]", "not a dn", DnScope::kSubtree, "", {}, {who("*", "read")}})
            .starts_with("access[0].dn:"));
  CHECK(problem({"access[0]", "", DnScope::kSubtree, "(uid=x", {}, {who("*", "read")}})
            .starts_with("access[0].filter:"));
  CHECK(problem({"access[0]", "", DnScope::kSubtree, "", {}, {}}) ==
        "access[0].by: needs at least one clause");
  CHECK(problem({"access[0]", "", DnScope::kSubtree, "", {}, {who("everyone", "read")}})
            .starts_with("access[0].by.who:"));
  CHECK(compile({}).ok());
  CHECK((*compile({}))->is_default());
}

}  // namespace
}  // namespace numadir::server
