// Tests for Directory::search (backend/search.cc, candidates.cc, filter_eval.cc): scopes, every
// filter kind indexed and not, three-valued logic, extensible match, limits, missing bases.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "backend/directory.h"
#include "backend/dn_index.h"
#include "tests/backend/backend_test_util.h"

namespace numadir::backend {
namespace {

using namespace testing;

// Ten users (uidNumber 1000 + n, mail for even n, cn;lang-de for n == 3), a nested ou with
// one person: 15 entries with the suffix, ou=people and ou=groups.
class SearchFixture {
 public:
  explicit SearchFixture(std::vector<IndexSpec> indexes = default_indexes())
      : directory_(open_directory(test_options(dir_.path(), std::move(indexes)))) {
    add_base_tree(*directory_);
    for (int n = 0; n < 10; ++n) {
      schema::Entry entry = person_entry(user_dn(n), "user" + std::to_string(n),
                                         "User " + std::to_string(n), "Smith" + std::to_string(n));
      entry.attributes[0].values.push_back("posixAccount");
      entry.attributes.push_back({"uidNumber", {std::to_string(1000 + n)}});
      entry.attributes.push_back({"gidNumber", {"100"}});
      entry.attributes.push_back({"homeDirectory", {"/home/user" + std::to_string(n)}});
      if (n % 2 == 0) {
        entry.attributes.push_back({"mail", {"user" + std::to_string(n) + "@Example.COM"}});
      }
      if (n == 3) {
        entry.attributes.push_back({"cn;lang-de", {"Benutzer Drei"}});
      }
      require_ok(directory_->add(entry, {}));
    }
    require_ok(directory_->add(ou_entry("ou=staff," + kPeople, "staff"), {}));
    require_ok(
        directory_->add(person_entry("cn=Boss,ou=staff," + kPeople, "boss", "Boss", "Chief"), {}));
    txn_ = directory_->begin_read();
  }

  // Sorted DNs matching `filter` under `base`; REQUIREs success.
  std::vector<std::string> dns(std::string_view filter, std::string_view base = kSuffix,
                               Scope scope = Scope::kSubtree) {
    SearchResult result = search(*directory_, *txn_, base, scope, filter);
    INFO("filter: ", std::string(filter));
    REQUIRE_MESSAGE(result.status.ok(), result.status.to_string());
    std::sort(result.dns.begin(), result.dns.end());
    return result.dns;
  }
  std::size_t count(std::string_view filter) { return dns(filter).size(); }

  Directory& directory() { return *directory_; }
  ReadTxn& txn() { return *txn_; }

 private:
  TempDir dir_;
  std::unique_ptr<Directory> directory_;
  std::unique_ptr<ReadTxn> txn_;
};

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST_CASE("Search: scopes base one subtree and children") {
  SearchFixture f;
  CHECK(f.dns("(objectClass=*)", kPeople, Scope::kBase) == std::vector<std::string>{kPeople});
  CHECK(f.dns("(objectClass=*)", kPeople, Scope::kOneLevel).size() == 11);
  CHECK(f.dns("(objectClass=*)", kPeople, Scope::kSubtree).size() == 13);
  CHECK(f.dns("(objectClass=*)", kPeople, Scope::kChildren).size() == 12);
  CHECK(f.dns("(objectClass=*)").size() == 15);
  CHECK(f.dns("(uid=user1)", kPeople, Scope::kBase).empty());
  CHECK(f.dns("(uid=boss)", kPeople, Scope::kOneLevel).empty());
  CHECK(f.dns("(uid=boss)", kPeople, Scope::kChildren).size() == 1);
  CHECK(f.dns("(ou=people)", kPeople, Scope::kChildren).empty());
  CHECK(f.dns("(ou=people)", kPeople, Scope::kSubtree) == std::vector<std::string>{kPeople});
  CHECK(f.dns("(uid=user1)", kGroups).empty());
}

TEST_CASE("Search: the auth filter finds one entry by an index lookup") {
  SearchFixture f;
  std::size_t calls = 0;
  const schema::Filter filter = parse_filter("(uid=USER7)");
  SearchSpec spec{kPeople, Scope::kSubtree, &filter, 0, std::nullopt, std::nullopt};
  require_ok(f.directory().search(f.txn(), spec, [&](const EntryRef& entry) {
    ++calls;
    CHECK(entry.dn() == user_dn(7));
    const schema::Entry full = entry.materialize();
    CHECK(values_of(full, "uidNumber") == std::vector<std::string>{"1007"});
    CHECK(values_of(full, "hasSubordinates") == std::vector<std::string>{"FALSE"});
    return true;
  }));
  CHECK(calls == 1);
}

TEST_CASE("Search: each result tells its normalized DN without normalizing it again") {
  SearchFixture f;
  const SchemaDnNormalizer normalizer(test_schema());
  const schema::Filter filter = parse_filter("(objectClass=*)");
  SearchSpec spec{std::string(kSuffix), Scope::kSubtree, &filter, 0, std::nullopt, std::nullopt};
  std::size_t calls = 0;
  std::string ndn;
  require_ok(f.directory().search(f.txn(), spec, [&](const EntryRef& entry) {
    ++calls;
    CAPTURE(entry.dn());
    REQUIRE(entry.normalized_dn(ndn));
    CHECK(ndn == schema::Dn::parse(entry.dn()).value().normalized(&normalizer));
    return true;
  }));
  CHECK(calls == 15);
}

TEST_CASE("Search: a search resumed at an entry's resume point goes on from that entry") {
  SearchFixture f;
  struct Variant {
    std::string base;
    Scope scope;
    const char* filter;
  };
  // A subtree scan (dn2id order), a one-level scan (children, id order), index candidates (id
  // order) and a children scope.
  const std::vector<Variant> variants = {
      {std::string(kSuffix), Scope::kSubtree, "(objectClass=*)"},
      {kPeople, Scope::kOneLevel, "(objectClass=*)"},
      {std::string(kSuffix), Scope::kSubtree,
       "(|(uid=user1)(uid=user3)(uid=user5)(uid=user7)(uid=user9))"},
      {kPeople, Scope::kChildren, "(objectClass=*)"}};
  for (const Variant& variant : variants) {
    CAPTURE(variant.filter);
    CAPTURE(static_cast<int>(variant.scope));
    const schema::Filter filter = parse_filter(variant.filter);
    SearchSpec spec{variant.base, variant.scope, &filter, 0, std::nullopt, std::nullopt};
    std::vector<std::string> all;
    require_ok(f.directory().search(f.txn(), spec, [&](const EntryRef& entry) {
      all.emplace_back(entry.dn());
      return true;
    }));
    REQUIRE(all.size() >= 4);
    for (std::size_t stop = 1; stop < all.size(); ++stop) {
      CAPTURE(stop);
      // Stops at entry `stop` without handling it, as a search pausing at the output bound.
      std::vector<std::string> got;
      std::optional<SearchPoint> point;
      require_ok(f.directory().search(f.txn(), spec, [&](const EntryRef& entry) {
        if (got.size() == stop) {
          point = entry.resume_point();
          return false;
        }
        got.emplace_back(entry.dn());
        return true;
      }));
      REQUIRE(point.has_value());
      SearchSpec resumed = spec;
      resumed.resume_at = point;
      require_ok(f.directory().search(f.txn(), resumed, [&](const EntryRef& entry) {
        got.emplace_back(entry.dn());
        return true;
      }));
      CHECK(got == all);  // Each entry once, in the same order.
    }
  }
}

TEST_CASE("Search: every filter kind with and without indexes") {
  // The same answers whether attributes are indexed or scanned.
  std::vector<IndexSpec> indexes = default_indexes();
  SUBCASE("indexed") {}
  SUBCASE("unindexed") { indexes.clear(); }
  SUBCASE("equality only") {
    indexes = {IndexSpec{"uid", true}, IndexSpec{"cn", true}, IndexSpec{"uidNumber", true}};
  }
  SearchFixture f(indexes);
  CHECK(f.dns("(uid=user3)") == std::vector<std::string>{user_dn(3)});
  CHECK(f.dns("(uid= User3 )") == std::vector<std::string>{user_dn(3)});
  CHECK(f.dns("(uid~=user3)") == std::vector<std::string>{user_dn(3)});
  CHECK(f.count("(uid=*)") == 11);
  CHECK(f.count("(mail=*)") == 5);
  CHECK(f.dns("(mail=USER4@example.com)") == std::vector<std::string>{user_dn(4)});
  CHECK(f.count("(uid=user*)") == 10);
  CHECK(f.count("(uid=u*)") == 10);
  CHECK(f.count("(uid=*er1*)") == 1);
  CHECK(f.count("(uid=*1)") == 1);
  CHECK(f.count("(uid=*r*)") == 10);
  CHECK(f.count("(cn=user *)") == 10);
  CHECK(f.count("(cn=*ser 1*)") == 1);
  CHECK(f.count("(cn=b*s)") == 1);
  CHECK(f.count("(mail=*@example.com)") == 5);
  CHECK(f.count("(mail=user*@*.com)") == 5);
  CHECK(f.count("(uidNumber>=1005)") == 5);
  CHECK(f.count("(uidNumber<=1002)") == 3);
  CHECK(f.count("(&(uidNumber>=1002)(uidNumber<=1004))") == 3);
  CHECK(f.count("(uidNumber>=999)") == 10);
  CHECK(f.count("(uidNumber<=999)") == 0);
  CHECK(f.count("(sn>=a)") == 0);  // sn has no ordering rule: Undefined.
  CHECK(f.count("(&(objectClass=person)(uid=user1))") == 1);
  CHECK(f.count("(|(uid=user1)(uid=user2)(cn=boss))") == 3);
  CHECK(f.count("(&(uid=user1)(uid=user2))") == 0);
  CHECK(f.count("(!(uid=user1))") == 14);
  CHECK(f.count("(&(objectClass=inetOrgPerson)(!(mail=*)))") == 6);
  CHECK(f.count("(&)") == 15);
  CHECK(f.count("(|)") == 0);
  CHECK(f.count("(objectClass=2.5.6.6)") == 11);  // person by OID.
  CHECK(f.count("(objectClass=organizationalUnit)") == 3);
}

TEST_CASE("Search: objectClass equality matches the subclasses of the class") {
  // RFC 4512 §2.4.1: superclasses are implicitly present. The fixture's people list top,
  // person and inetOrgPerson; one more lists inetOrgPerson alone.
  std::vector<IndexSpec> indexes = default_indexes();
  SUBCASE("indexed") {}
  SUBCASE("unindexed") { indexes.clear(); }
  SearchFixture f(indexes);
  const std::string only = "cn=Only,ou=staff," + kPeople;
  require_ok(f.directory().add(
      make_entry(only,
                 {{"objectClass", {"inetOrgPerson"}}, {"cn", {"Only"}}, {"sn", {"Subclass"}}}),
      {}));
  CHECK(f.count("(objectClass=inetOrgPerson)") == 12);
  CHECK(f.count("(objectClass=person)") == 12);
  CHECK(f.count("(objectClass=PERSON)") == 12);
  CHECK(f.count("(objectClass=2.5.6.6)") == 12);
  CHECK(f.count("(objectClass~=person)") == 12);
  CHECK(f.count("(objectClass=organizationalPerson)") == 12);  // Listed by no entry.
  CHECK(f.count("(objectClass=top)") == 16);
  CHECK(f.count("(objectClass=posixAccount)") == 10);
  CHECK(f.count("(objectClass=organizationalUnit)") == 3);
  CHECK(f.count("(!(objectClass=person))") == 4);
  CHECK(f.dns("(&(objectClass=person)(sn=subclass))") == std::vector<std::string>{only});
  // An explicit objectIdentifierMatch compares the OIDs themselves.
  CHECK(f.count("(objectClass:objectIdentifierMatch:=person)") == 11);
  require_ok(f.directory().verify_indexes());
}

TEST_CASE("Search: undefined items follow RFC 4511 three-valued logic") {
  SearchFixture f;
  CHECK(f.count("(noSuchAttr=x)") == 0);
  CHECK(f.count("(!(noSuchAttr=x))") == 0);
  CHECK(f.count("(noSuchAttr=*)") == 0);
  CHECK(f.count("(!(noSuchAttr=*))") == 15);  // Presence of an unknown type is FALSE.
  CHECK(f.count("(|(noSuchAttr=x)(uid=user1))") == 1);
  CHECK(f.count("(&(noSuchAttr=x)(uid=user1))") == 0);
  CHECK(f.count("(!(&(noSuchAttr=x)(uid=user1)))") == 14);  // NOT(FALSE) where uid differs.
  CHECK(f.count("(!(|(noSuchAttr=x)(uid=user1)))") == 0);   // NOT(Undefined) elsewhere.
  CHECK(f.count("(uidNumber=abc)") == 0);                   // Invalid assertion value.
  CHECK(f.count("(!(uidNumber=abc))") == 0);
  CHECK(f.count("(!(sn>=a))") == 0);
}

TEST_CASE("Search: attribute subtypes and options") {
  SearchFixture f;
  CHECK(f.dns("(name=benutzer drei)") == std::vector<std::string>{user_dn(3)});
  CHECK(f.dns("(cn=Benutzer Drei)") == std::vector<std::string>{user_dn(3)});
  CHECK(f.dns("(cn;lang-de=benutzer drei)") == std::vector<std::string>{user_dn(3)});
  CHECK(f.dns("(cn;lang-de=user 3)").empty());
  CHECK(f.count("(cn;lang-de=*)") == 1);
  CHECK(f.count("(name=user 1)") == 1);
}

TEST_CASE("Search: extensible match") {
  SearchFixture f;
  CHECK(f.dns("(uid:caseExactMatch:=user5)") == std::vector<std::string>{user_dn(5)});
  CHECK(f.dns("(uid:caseExactMatch:=USER5)").empty());
  CHECK(f.dns("(uid:=USER5)") == std::vector<std::string>{user_dn(5)});
  CHECK(f.count("(:caseIgnoreMatch:=user 5)") == 1);
  CHECK(f.count("(ou:dn:=people)") == 13);
  CHECK(f.count("(ou:=people)") == 1);
  CHECK(f.count("(:dn:caseIgnoreMatch:=staff)") == 2);
  CHECK(f.count("(uid:noSuchRule:=user5)") == 0);
  CHECK(f.count("(!(uid:noSuchRule:=user5))") == 0);
  CHECK(f.count("(uidNumber:integerMatch:=1004)") == 1);
  CHECK(f.count("(uid:integerMatch:=1004)") == 0);  // Not usable with uid's syntax.
}

TEST_CASE("Search: computed operational attributes in filters") {
  SearchFixture f;
  CHECK(sorted(f.dns("(hasSubordinates=TRUE)")) ==
        sorted({std::string(kSuffix), kPeople, "ou=staff," + kPeople}));
  CHECK(f.dns("(entryDN=UID=User2,OU=People,DC=Example,DC=Com)") ==
        std::vector<std::string>{user_dn(2)});
  CHECK(f.count("(numSubordinates>=2)") == 2);
  CHECK(f.count("(subschemaSubentry=cn=subschema)") == 15);
}

TEST_CASE("Search: size limit delivers exactly the limit then fails") {
  SearchFixture f;
  SearchResult result = search(f.directory(), f.txn(), kPeople, Scope::kOneLevel, "(uid=*)", 4);
  CHECK(result.status.code() == StatusCode::kSizeLimitExceeded);
  CHECK(result.dns.size() == 4);
  result = search(f.directory(), f.txn(), kPeople, Scope::kSubtree, "(uid=user*)", 4);
  CHECK(result.status.code() == StatusCode::kSizeLimitExceeded);
  CHECK(result.dns.size() == 4);
  result = search(f.directory(), f.txn(), kPeople, Scope::kSubtree, "(uid=user*)", 10);
  CHECK(result.status.ok());
  CHECK(result.dns.size() == 10);
}

TEST_CASE("Search: a passed deadline ends with kTimeLimitExceeded") {
  SearchFixture f;
  const schema::Filter filter = parse_filter("(objectClass=*)");
  SearchSpec spec{std::string(kSuffix),
                  Scope::kSubtree,
                  &filter,
                  0,
                  std::chrono::steady_clock::now() - std::chrono::seconds(1),
                  std::nullopt};
  std::size_t delivered = 0;
  const Status status = f.directory().search(f.txn(), spec, [&](const EntryRef&) {
    ++delivered;
    return true;
  });
  CHECK(status.code() == StatusCode::kTimeLimitExceeded);
  CHECK(delivered == 0);
}

TEST_CASE("Search: the callback stops the stream") {
  SearchFixture f;
  const schema::Filter filter = parse_filter("(objectClass=*)");
  SearchSpec spec{std::string(kSuffix), Scope::kSubtree, &filter, 0, std::nullopt, std::nullopt};
  std::size_t delivered = 0;
  require_ok(f.directory().search(f.txn(), spec, [&](const EntryRef&) { return ++delivered < 3; }));
  CHECK(delivered == 3);
}

TEST_CASE("Search: a missing base reports the matched DN") {
  SearchFixture f;
  SearchResult result =
      search(f.directory(), f.txn(), "uid=x,ou=nowhere," + kPeople, Scope::kSubtree, "(uid=*)");
  CHECK(result.status.code() == StatusCode::kNoSuchObject);
  CHECK(result.status.message() == kPeople);
  result = search(f.directory(), f.txn(), "dc=other,dc=org", Scope::kSubtree, "(uid=*)");
  CHECK(result.status.code() == StatusCode::kNoSuchObject);
  CHECK(result.status.message().empty());
  result = search(f.directory(), f.txn(), "bad dn", Scope::kSubtree, "(uid=*)");
  CHECK(result.status.code() == StatusCode::kInvalidDnSyntax);
  CHECK(f.directory().get(f.txn(), "uid=nobody," + kPeople).status() ==
        Status(StatusCode::kNoSuchObject, kPeople));
}

TEST_CASE("Search: a read transaction sees later commits on its next operation") {
  SearchFixture f;
  CHECK(f.count("(uid=newcomer)") == 0);
  require_ok(f.directory().add(
      person_entry("uid=newcomer," + kPeople, "newcomer", "New Comer", "Comer"), {}));
  CHECK(f.count("(uid=newcomer)") == 1);
  CHECK(f.count("(cn=*comer)") == 1);
}

TEST_CASE("Search: an index added later is unused until rebuilt") {
  TempDir dir;
  {
    auto directory = open_directory(test_options(dir.path(), {}));
    add_base_tree(*directory);
    for (int n = 0; n < 5; ++n) {
      require_ok(
          directory->add(person_entry(user_dn(n), "user" + std::to_string(n), "U", "S"), {}));
    }
  }
  auto directory = open_directory(test_options(dir.path()));
  auto txn = directory->begin_read();
  // Maintained but not built: results must still be complete, and older entries (absent from
  // the new indexes) can still be modified and removed.
  require_ok(directory->add(person_entry(user_dn(9), "user9", "U", "S"), {}));
  require_ok(directory->modify(
      user_dn(2), std::vector<Modification>{{ModificationKind::kReplace, "cn", {"Two"}}}, {}));
  require_ok(directory->rename(user_dn(3), "uid=user3b", true, std::nullopt, {}));
  require_ok(directory->remove(user_dn(4), {}));
  require_ok(directory->add(person_entry(user_dn(4), "user4", "U", "S"), {}));
  CHECK(search(*directory, *txn, kSuffix, Scope::kSubtree, "(uid=user1)").dns.size() == 1);
  CHECK(search(*directory, *txn, kSuffix, Scope::kSubtree, "(uid=user*)").dns.size() == 6);
  CHECK(search(*directory, *txn, kSuffix, Scope::kSubtree, "(uid=user3b)").dns.size() == 1);
  CHECK(directory->verify_indexes().code() == StatusCode::kInternal);
  require_ok(directory->rebuild_indexes());
  require_ok(directory->verify_indexes());
  CHECK(search(*directory, *txn, kSuffix, Scope::kSubtree, "(uid=user1)").dns.size() == 1);
  CHECK(search(*directory, *txn, kSuffix, Scope::kSubtree, "(uid=user*)").dns.size() == 6);
  txn.reset();
  directory.reset();
  // Reopened with the same indexes: they are built.
  directory = open_directory(test_options(dir.path()));
  require_ok(directory->verify_indexes());
  // Reopened without them and again with them: dropped, then unbuilt again.
  directory.reset();
  directory = open_directory(test_options(dir.path(), {}));
  directory.reset();
  directory = open_directory(test_options(dir.path()));
  CHECK(directory->verify_indexes().code() == StatusCode::kInternal);
}

}  // namespace
}  // namespace numadir::backend

namespace numadir::backend {
namespace {

using namespace testing;

TEST_CASE("Search: lookup reads values in place for bind") {
  SearchFixture f;
  require_ok(f.directory().modify(
      user_dn(4),
      std::vector<Modification>{{ModificationKind::kAdd, "userPassword", {"{SSHA}secret"}},
                                {ModificationKind::kAdd, "cn;lang-de", {"Vier"}}},
      {}));
  std::size_t calls = 0;
  require_ok(f.directory().lookup(
      f.txn(), "UID=user4,ou=people,dc=example,dc=com", [&](const EntryRef& entry) {
        ++calls;
        CHECK(entry.dn() == "uid=user4," + kPeople);
        CHECK(entry.values("userPassword") == std::vector<std::string_view>{"{SSHA}secret"});
        CHECK(entry.values("cn") == std::vector<std::string_view>{"User 4", "Vier"});
        CHECK(entry.values("cn;lang-de") == std::vector<std::string_view>{"Vier"});
        CHECK(entry.values("name").size() == 3);  // cn and sn.
        CHECK(entry.values("mail").size() == 1);
        CHECK(entry.values("telephoneNumber").empty());
        CHECK(entry.values("noSuchType").empty());
      }));
  CHECK(calls == 1);
  const Status missing =
      f.directory().lookup(f.txn(), "uid=nobody," + kPeople, [&](const EntryRef&) { ++calls; });
  CHECK(missing == Status(StatusCode::kNoSuchObject, kPeople));
  CHECK(f.directory().lookup(f.txn(), "=bad", [&](const EntryRef&) { ++calls; }).code() ==
        StatusCode::kInvalidDnSyntax);
  CHECK(calls == 1);
}

TEST_CASE("Search: lookup_normalized finds the entry its normalized DN names as lookup does") {
  SearchFixture f;
  const schema::DnValueNormalizer& normalizer = f.directory().dn_normalizer();
  const std::string ndn =
      schema::Dn::parse("UID=User4, OU=People, DC=Example, DC=Com").value().normalized(&normalizer);
  CHECK(ndn == "uid=user4,ou=people,dc=example,dc=com");
  std::size_t calls = 0;
  require_ok(f.directory().lookup_normalized(f.txn(), ndn, [&](const EntryRef& entry) {
    ++calls;
    CHECK(entry.dn() == user_dn(4));
    CHECK(entry.values("uid") == std::vector<std::string_view>{"user4"});
  }));
  CHECK(calls == 1);
  // Twice in a row, as a worker's binds do: the transaction's scratch is reused.
  require_ok(f.directory().lookup_normalized(f.txn(), ndn, [&](const EntryRef&) { ++calls; }));
  CHECK(calls == 2);
  const Status missing = f.directory().lookup_normalized(
      f.txn(), "uid=nobody,ou=people,dc=example,dc=com", [&](const EntryRef&) { ++calls; });
  CHECK(missing == Status(StatusCode::kNoSuchObject, kPeople));
  CHECK(f.directory().lookup_normalized(f.txn(), "", [&](const EntryRef&) { ++calls; }).code() ==
        StatusCode::kNoSuchObject);
  CHECK(calls == 2);
}

}  // namespace
}  // namespace numadir::backend

namespace numadir::backend {
namespace {

using namespace testing;

// The stored DN of the entry lookup() finds by `dn` in `txn`, or the lookup's error as text.
std::string looked_up_in(Directory& directory, ReadTxn& txn, std::string_view dn) {
  std::string found;
  const Status status =
      directory.lookup(txn, dn, [&](const EntryRef& entry) { found = entry.dn(); });
  return status.ok() ? found : status.to_string();
}

std::string looked_up(SearchFixture& f, std::string_view dn) {
  return looked_up_in(f.directory(), f.txn(), dn);
}

TEST_CASE("Search: lookup after a search finds the entry now named so and never a stale one") {
  SearchFixture f;
  // Each search leaves a hint for the entries it returns (dn_hints.h); each lookup below comes
  // after a search that returned the entry once named by the DN looked up.
  CHECK(f.dns("(uid=user4)") == std::vector<std::string>{user_dn(4)});
  CHECK(looked_up(f, user_dn(4)) == user_dn(4));

  // Renamed: the old name's hint points at an entry that now carries another name.
  require_ok(f.directory().rename(user_dn(4), "uid=user4b", true, std::nullopt, {}));
  CHECK(looked_up(f, user_dn(4)) == Status(StatusCode::kNoSuchObject, kPeople).to_string());
  CHECK(looked_up(f, "uid=user4b," + kPeople) == "uid=user4b," + kPeople);

  // Deleted, then the name given to a new entry (a new id): the lookup finds the new one.
  CHECK(f.dns("(uid=user5)") == std::vector<std::string>{user_dn(5)});
  require_ok(f.directory().remove(user_dn(5), {}));
  CHECK(looked_up(f, user_dn(5)) == Status(StatusCode::kNoSuchObject, kPeople).to_string());
  require_ok(f.directory().add(person_entry("UID=User5," + kPeople, "user5", "New", "Five"), {}));
  CHECK(looked_up(f, user_dn(5)) == "UID=User5," + kPeople);

  // Two names swapped by renames: each name must reach the entry that carries it now.
  CHECK(f.dns("(|(uid=user6)(uid=user7))") == std::vector<std::string>{user_dn(6), user_dn(7)});
  require_ok(f.directory().rename(user_dn(6), "uid=tmp", true, std::nullopt, {}));
  require_ok(f.directory().rename(user_dn(7), "uid=user6", true, std::nullopt, {}));
  require_ok(f.directory().rename("uid=tmp," + kPeople, "uid=user7", true, std::nullopt, {}));
  std::vector<std::string> uids;
  require_ok(f.directory().lookup(f.txn(), user_dn(6), [&](const EntryRef& entry) {
    for (std::string_view uid : entry.values("uid")) {
      uids.emplace_back(uid);
    }
  }));
  CHECK(uids == std::vector<std::string>{"user6"});  // The old user7, uid replaced by the RDN.
  CHECK(looked_up(f, user_dn(7)) == user_dn(7));
}

}  // namespace
}  // namespace numadir::backend

namespace numadir::backend {
namespace {

using namespace testing;

TEST_CASE("Search: 600 read transactions open at once as 600 reading threads keep them") {
  // A server keeps one reset read transaction per reading thread: a worker per PU on a large
  // machine, plus the listeners that help. Each ReadTxn here holds a reader slot likewise.
  SearchFixture f;
  std::vector<std::unique_ptr<ReadTxn>> txns;
  for (int i = 0; i < 600; ++i) {
    txns.push_back(f.directory().begin_read());
    INFO("read transaction ", i);
    REQUIRE(looked_up_in(f.directory(), *txns.back(), user_dn(i % 10)) == user_dn(i % 10));
  }
}

TEST_CASE("Search: a scan for want of an index is noted once per attribute and kind") {
  SearchFixture f;  // mail has eq and sub indexes, sn and gidNumber none, uid eq pres sub.
  std::vector<std::string> notices;
  f.directory().set_notices([&](std::string_view text) { notices.emplace_back(text); });
  CHECK(f.count("(mail=*)") == 5);
  REQUIRE(notices.size() == 1);
  CHECK(notices[0] ==
        "unindexed search: mail has no pres index, so a search with this filter item scans its "
        "scope (add \"pres\" to mail in database.indexes)");
  CHECK(f.count("(mail=*)") == 5);  // Noted already.
  CHECK(f.count("(sn=Smith1)") == 1);
  REQUIRE(notices.size() == 2);
  CHECK(notices[1].find("sn has no eq index") != std::string::npos);
  // Indexed items, and an unindexed one that an indexed AND narrows, say nothing.
  CHECK(f.count("(uid=*)") == 11);
  CHECK(f.count("(mail=user2@example.com)") == 1);
  CHECK(f.count("(&(uid=user4)(description=x))") == 0);
  CHECK(f.count("(uidNumber>=1008)") == 2);
  CHECK(notices.size() == 2);
  CHECK(f.count("(gidNumber>=100)") == 10);
  REQUIRE(notices.size() == 3);
  CHECK(notices[2].find("gidNumber has no ordering index") != std::string::npos);
}

TEST_CASE("Search: (objectClass=*) matches every entry in scope and notes nothing") {
  // objectClass has an eq index and no pres one (default_indexes), as most configs have it:
  // ldapsearch's default filter is no search that an index would help.
  SearchFixture f;
  std::vector<std::string> notices;
  f.directory().set_notices([&](std::string_view text) { notices.emplace_back(text); });
  CHECK(f.count("(objectClass=*)") == 15);
  CHECK(f.count("(&(objectClass=*)(uid=user3))") == 1);
  CHECK(f.count("(!(objectClass=*))") == 0);
  CHECK(notices.empty());
  // An options-qualified one is an ordinary presence item (no entry here has such a value).
  CHECK(f.count("(objectClass;x-tag=*)") == 0);
  REQUIRE(notices.size() == 1);
  CHECK(notices[0].find("objectClass has no pres index") != std::string::npos);
  // Another attribute without a pres index is still noted.
  CHECK(f.count("(mail=*)") == 5);
  REQUIRE(notices.size() == 2);
  CHECK(notices[1].find("mail has no pres index") != std::string::npos);
}

TEST_CASE("Search: (objectClass=*) scans its scope even where objectClass has a pres index") {
  // A pres index on objectClass lists every id: reading the entries by id would only replace a
  // scan of the scope with random reads. The order of delivery tells which ran: a scan follows
  // the DN keys; candidates follow the ids, i.e. the order the entries were added in.
  std::vector<IndexSpec> indexes = default_indexes();
  indexes[0].presence = true;
  SearchFixture f(indexes);
  std::vector<std::string> added = {std::string(kSuffix), kPeople, kGroups};
  for (int n = 0; n < 10; ++n) {
    added.push_back(user_dn(n));
  }
  added.push_back("ou=staff," + kPeople);
  added.push_back("cn=Boss,ou=staff," + kPeople);
  const SearchResult scanned =
      search(f.directory(), f.txn(), kSuffix, Scope::kSubtree, "(!(uid=no-such-user))");
  REQUIRE(scanned.status.ok());
  REQUIRE(scanned.dns.size() == added.size());
  REQUIRE(scanned.dns != added);  // Otherwise the order could not tell.
  const SearchResult everything =
      search(f.directory(), f.txn(), kSuffix, Scope::kSubtree, "(objectClass=*)");
  REQUIRE(everything.status.ok());
  CHECK(everything.dns == scanned.dns);
  // Another presence item with a pres index does use it: its entries come in id order.
  const SearchResult indexed = search(f.directory(), f.txn(), kSuffix, Scope::kSubtree, "(uid=*)");
  REQUIRE(indexed.status.ok());
  std::vector<std::string> users(added.begin() + 3, added.begin() + 13);  // user0 .. user9
  users.push_back(added.back());                                          // and the boss
  CHECK(indexed.dns == users);
}

}  // namespace
}  // namespace numadir::backend
