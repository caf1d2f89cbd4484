// Tests for backend/directory.h: rename (the RDN values, every error code, a subtree move that
// renames every descendant) and export order after moves.
#include "backend/directory.h"

#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "schema/dn.h"
#include "tests/backend/backend_test_util.h"
#include "tests/backend/directory_test_util.h"

namespace numadir::backend {
namespace {

using namespace testing;

TEST_CASE("Directory: rename changes the RDN values") {
  Fixture f;
  SUBCASE("deleting the old RDN value") {
    require_ok(f.directory->rename(user_dn(1), "uid=first", true, std::nullopt, {}));
    CHECK_FALSE(f.exists(user_dn(1)));
    const schema::Entry entry = f.get("uid=first," + kPeople);
    CHECK(entry.dn == "uid=first," + kPeople);
    CHECK(values_of(entry, "uid") == std::vector<std::string>{"first"});
  }
  SUBCASE("keeping the old RDN value") {
    require_ok(f.directory->rename(user_dn(1), "uid=first", false, std::nullopt, {}));
    CHECK(values_of(f.get("uid=first," + kPeople), "uid") ==
          std::vector<std::string>{"user1", "first"});
  }
  SUBCASE("to a multi-valued RDN") {
    require_ok(f.directory->rename(user_dn(1), "cn=Someone+uid=user1", true, std::nullopt, {}));
    const schema::Entry entry = f.get("uid=user1+cn=someone," + kPeople);
    CHECK(values_of(entry, "cn") == std::vector<std::string>{"User 1", "Someone"});
    CHECK(values_of(entry, "uid") == std::vector<std::string>{"user1"});
  }
  SUBCASE("only the spelling") {
    require_ok(f.directory->rename(user_dn(1), "UID=User1", false, std::nullopt, {}));
    CHECK(f.get(user_dn(1)).dn == "UID=User1," + kPeople);
  }
  auto txn = f.directory->begin_read();
  CHECK(search(*f.directory, *txn, kSuffix, Scope::kSubtree, "(uid=user1)").dns.size() <= 1);
}

TEST_CASE("Directory: rename reports each error code") {
  Fixture f;
  CHECK(f.directory->rename("uid=none," + kPeople, "uid=x", true, std::nullopt, {}).code() ==
        StatusCode::kNoSuchObject);
  CHECK(f.directory->rename(user_dn(1), "uid=user2", true, std::nullopt, {}).code() ==
        StatusCode::kEntryAlreadyExists);
  CHECK(f.directory->rename(user_dn(1), "uid=x", true, "ou=none," + std::string(kSuffix), {})
            .code() == StatusCode::kNoSuchObject);
  CHECK(f.directory->rename(kPeople, "ou=staff", true, user_dn(1), {}).code() ==
        StatusCode::kUnwillingToPerform);
  CHECK(f.directory->rename(kPeople, "ou=staff", true, kPeople, {}).code() ==
        StatusCode::kUnwillingToPerform);
  CHECK(f.directory->rename(std::string(kSuffix), "dc=other", true, std::nullopt, {}).code() ==
        StatusCode::kUnwillingToPerform);
  CHECK(f.directory->rename(user_dn(1), "uid=a,ou=b", true, std::nullopt, {}).code() ==
        StatusCode::kInvalidDnSyntax);
  CHECK(f.directory->rename(user_dn(1), "bogusAttr=x", true, std::nullopt, {}).code() ==
        StatusCode::kUndefinedAttributeType);
  CHECK(f.directory
            ->rename(user_dn(1), "entryUUID=3f2504e0-4f89-41d3-9a0c-0305e82c3301", true,
                     std::nullopt, {})
            .code() == StatusCode::kConstraintViolation);
  CHECK(f.exists(user_dn(1)));
}

TEST_CASE("Directory: a subtree move renames every descendant") {
  Fixture f;
  require_ok(f.directory->add(ou_entry("ou=staff," + kPeople, "staff"), {}));
  require_ok(f.directory->add(
      person_entry("uid=deep,ou=staff," + kPeople, "deep", "Deep One", "One"), {}));
  const std::string groups = "ou=groups," + std::string(kSuffix);
  require_ok(f.directory->rename(kPeople, "ou=humans", true, groups, {}));
  const std::string humans = "ou=humans," + groups;
  CHECK_FALSE(f.exists(kPeople));
  CHECK_FALSE(f.exists(user_dn(1)));
  CHECK(f.get("uid=user1," + humans).dn == "uid=user1," + humans);
  CHECK(f.get("uid=deep,ou=staff," + humans).dn == "uid=deep,ou=staff," + humans);
  CHECK(values_of(f.get(humans), "ou") == std::vector<std::string>{"humans"});
  auto txn = f.directory->begin_read();
  SearchResult found = search(*f.directory, *txn, groups, Scope::kSubtree, "(objectClass=*)");
  std::sort(found.dns.begin(), found.dns.end());
  CHECK(found.dns == std::vector<std::string>{groups, humans, "ou=staff," + humans,
                                              "uid=deep,ou=staff," + humans, "uid=user1," + humans,
                                              "uid=user2," + humans});
  CHECK(search(*f.directory, *txn, humans, Scope::kOneLevel, "(uid=*)").dns.size() == 2);
  CHECK(search(*f.directory, *txn, groups, Scope::kOneLevel, "(ou=*)").dns ==
        std::vector<std::string>{humans});
  const SearchResult deep = search(*f.directory, *txn, kSuffix, Scope::kSubtree, "(uid=deep)");
  INFO(deep.status.to_string(), " ", deep.dns.size());
  CHECK(deep.dns == std::vector<std::string>{"uid=deep,ou=staff," + humans});
}

TEST_CASE("Directory: export lists parents before children even after moves") {
  Fixture f;
  // ou=later gets a larger id than ou=people; moving people under it breaks id order.
  require_ok(f.directory->add(ou_entry("ou=later," + std::string(kSuffix), "later"), {}));
  require_ok(
      f.directory->rename(kPeople, "ou=people", true, "ou=later," + std::string(kSuffix), {}));
  std::vector<std::string> seen_keys;
  std::set<std::string> seen;
  Status status = f.directory->export_entries([&](const schema::Entry& entry) {
    Result<std::string> ndn = schema::normalize_dn(entry.dn);
    REQUIRE(ndn.ok());
    Result<schema::Dn> dn = schema::Dn::parse(*ndn);
    REQUIRE(dn.ok());
    if (dn->rdn_count() > 2) {
      CHECK_MESSAGE(seen.count(dn->parent().normalized()) == 1, entry.dn);
    }
    seen.insert(*ndn);
    CHECK(entry.find("entryUUID") != nullptr);
    CHECK(entry.find("hasSubordinates") == nullptr);  // Computed attributes are not exported.
    return true;
  });
  require_ok(status);
  CHECK(seen.size() == 6);
  int count = 0;
  require_ok(f.directory->export_entries([&](const schema::Entry&) { return ++count < 2; }));
  CHECK(count == 2);
}

}  // namespace
}  // namespace numadir::backend
