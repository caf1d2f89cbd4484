// Tests for backend/directory.h: open, add / remove / modify / rename with every error code,
// operational attributes, get, import / export, index rebuild and verification.
#include "backend/directory.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <latch>
#include <set>
#include <thread>

#include "backend/lmdb_env.h"
#include "schema/dn.h"

#include "tests/backend/backend_test_util.h"

namespace numadir::backend {
namespace {

// Returns: true if `value` has `shape`, where 'x' stands for a lower-case hex digit, '9' for a
// decimal digit, 'v' for an RFC 4122 variant digit (8, 9, a, b) and anything else for itself.
// (std::regex trips GCC 12's -Wmaybe-uninitialized under the asan preset.)
bool has_shape(std::string_view value, std::string_view shape) {
  if (value.size() != shape.size()) {
    return false;
  }
  for (std::size_t i = 0; i < shape.size(); ++i) {
    const char c = value[i];
    const bool digit = c >= '0' && c <= '9';
    const bool ok = shape[i] == 'x'   ? digit || (c >= 'a' && c <= 'f')
                    : shape[i] == '9' ? digit
                    : shape[i] == 'v' ? (c == '8' || c == '9' || c == 'a' || c == 'b')
                                      : c == shape[i];
    if (!ok) {
      return false;
    }
  }
  return true;
}

using namespace testing;
using namespace std::string_literals;

const std::string kPeople = "ou=people," + std::string(kSuffix);

std::string user_dn(int n) { return "uid=user" + std::to_string(n) + "," + kPeople; }

schema::Entry user(int n) {
  return person_entry(user_dn(n), "user" + std::to_string(n), "User " + std::to_string(n),
                      "Surname" + std::to_string(n));
}

TEST_CASE("Directory: add then get returns the entry with operational attributes") {
  TempDir dir;
  auto directory = open_directory(test_options(dir.path()));
  add_base_tree(*directory);
  UpdateContext context;
  context.actor_dn = "cn=admin," + std::string(kSuffix);
  context.now = std::chrono::system_clock::time_point(std::chrono::seconds(1764504000));
  require_ok(directory->add(user(1), context));
  auto txn = directory->begin_read();
  Result<schema::Entry> entry = directory->get(*txn, "UID=User1, OU=People,DC=Example,DC=Com");
  REQUIRE_MESSAGE(entry.ok(), entry.status().to_string());
  CHECK(entry->dn == user_dn(1));
  CHECK(values_of(*entry, "uid") == std::vector<std::string>{"user1"});
  CHECK(values_of(*entry, "cn") == std::vector<std::string>{"User 1"});
  CHECK(values_of(*entry, "createTimestamp") == std::vector<std::string>{"20251130120000Z"});
  CHECK(values_of(*entry, "modifyTimestamp") == std::vector<std::string>{"20251130120000Z"});
  CHECK(values_of(*entry, "creatorsName") == std::vector<std::string>{context.actor_dn});
  CHECK(values_of(*entry, "modifiersName") == std::vector<std::string>{context.actor_dn});
  CHECK(values_of(*entry, "structuralObjectClass") == std::vector<std::string>{"inetOrgPerson"});
  CHECK(values_of(*entry, "entryDN") == std::vector<std::string>{user_dn(1)});
  CHECK(values_of(*entry, "hasSubordinates") == std::vector<std::string>{"FALSE"});
  CHECK(values_of(*entry, "numSubordinates") == std::vector<std::string>{"0"});
  CHECK(values_of(*entry, "subschemaSubentry") == std::vector<std::string>{"cn=Subschema"});
  const auto uuid = values_of(*entry, "entryUUID");
  REQUIRE(uuid.size() == 1);
  CHECK(has_shape(uuid[0], "xxxxxxxx-xxxx-4xxx-vxxx-xxxxxxxxxxxx"));
  const auto csn = values_of(*entry, "entryCSN");
  REQUIRE(csn.size() == 1);
  // The CSN clock is process-wide and never goes back, so only its form is fixed here.
  CHECK(has_shape(csn[0], "99999999999999.999999Z#xxxxxx#000#000000"));

  Result<schema::Entry> people = directory->get(*txn, kPeople);
  REQUIRE(people.ok());
  CHECK(values_of(*people, "hasSubordinates") == std::vector<std::string>{"TRUE"});
  CHECK(values_of(*people, "numSubordinates") == std::vector<std::string>{"1"});
  CHECK(directory->verify_indexes().ok());
}

}  // namespace
}  // namespace numadir::backend

namespace numadir::backend {
namespace {

using namespace testing;

schema::Entry posix_user(int n, std::string uid_number) {
  schema::Entry entry = user(n);
  entry.attributes[0].values.push_back("posixAccount");
  entry.attributes.push_back({"uidNumber", {std::move(uid_number)}});
  entry.attributes.push_back({"gidNumber", {"100"}});
  entry.attributes.push_back({"homeDirectory", {"/home/user" + std::to_string(n)}});
  return entry;
}

struct Fixture {
  Fixture() : directory(open_directory(test_options(dir.path()))) {
    add_base_tree(*directory);
    require_ok(directory->add(user(1), {}));
    require_ok(directory->add(user(2), {}));
    txn = directory->begin_read();
  }
  ~Fixture() {
    CHECK_MESSAGE(directory->verify_indexes().ok(), directory->verify_indexes().to_string());
  }

  StatusCode add_code(const schema::Entry& entry) { return directory->add(entry, {}).code(); }
  StatusCode modify_code(std::string_view dn, std::vector<Modification> mods) {
    return directory->modify(dn, mods, {}).code();
  }
  schema::Entry get(std::string_view dn) {
    Result<schema::Entry> entry = directory->get(*txn, dn);
    REQUIRE_MESSAGE(entry.ok(), entry.status().to_string());
    return std::move(*entry);
  }
  bool exists(std::string_view dn) { return directory->get(*txn, dn).ok(); }

  TempDir dir;
  std::unique_ptr<Directory> directory;
  std::unique_ptr<ReadTxn> txn;
};

Modification mod(ModificationKind kind, std::string description, std::vector<std::string> values) {
  return Modification{kind, std::move(description), std::move(values)};
}

TEST_CASE("Directory: add reports each error code") {
  Fixture f;
  SUBCASE("an existing DN in another spelling") {
    schema::Entry again = user(1);
    again.dn = "UID=USER1,ou=People,dc=EXAMPLE,dc=com";
    again.attributes[1].values = {"USER1"};
    CHECK(f.add_code(again) == StatusCode::kEntryAlreadyExists);
  }
  SUBCASE("a missing parent names the matched DN") {
    const Status status = f.directory->add(
        person_entry("uid=x,ou=nowhere," + std::string(kSuffix), "x", "X", "Y"), {});
    CHECK(status.code() == StatusCode::kNoSuchObject);
    CHECK(status.message() == kSuffix);
  }
  SUBCASE("outside the suffix") {
    CHECK(f.add_code(domain_entry("dc=other,dc=org", "other")) == StatusCode::kNoSuchObject);
    CHECK(f.add_code(domain_entry("dc=com", "com")) == StatusCode::kNoSuchObject);
  }
  SUBCASE("a bad DN") {
    CHECK(f.add_code(person_entry("uid=x,,dc=example", "x", "X", "Y")) ==
          StatusCode::kInvalidDnSyntax);
  }
  SUBCASE("a missing MUST attribute") {
    schema::Entry entry = user(3);
    entry.attributes.pop_back();  // sn
    CHECK(f.add_code(entry) == StatusCode::kObjectClassViolation);
  }
  SUBCASE("an RDN value missing from the entry") {
    schema::Entry entry = user(3);
    entry.attributes[1].values = {"someone-else"};
    CHECK(f.add_code(entry) == StatusCode::kNamingViolation);
  }
  SUBCASE("an unknown attribute type") {
    schema::Entry entry = user(3);
    entry.attributes.push_back({"noSuchAttribute", {"x"}});
    CHECK(f.add_code(entry) == StatusCode::kUndefinedAttributeType);
  }
  SUBCASE("a value invalid for its syntax") {
    CHECK(f.add_code(posix_user(3, "not-a-number")) == StatusCode::kInvalidAttributeSyntax);
  }
  SUBCASE("two values for a single-valued type") {
    schema::Entry entry = posix_user(3, "1003");
    entry.attributes[4].values.push_back("1004");
    CHECK(f.add_code(entry) == StatusCode::kConstraintViolation);
  }
  SUBCASE("a NO-USER-MODIFICATION attribute") {
    schema::Entry entry = user(3);
    entry.attributes.push_back({"entryUUID", {"3f2504e0-4f89-41d3-9a0c-0305e82c3301"}});
    CHECK(f.add_code(entry) == StatusCode::kConstraintViolation);
    entry.attributes.back() = {"createTimestamp", {"20200101000000Z"}};
    CHECK(f.add_code(entry) == StatusCode::kConstraintViolation);
  }
  SUBCASE("one attribute under two spellings") {
    schema::Entry entry = user(3);
    entry.attributes.push_back({"CN", {"Another"}});
    CHECK(f.add_code(entry) == StatusCode::kAttributeOrValueExists);
  }
  SUBCASE("the same value twice") {
    schema::Entry entry = user(3);
    entry.attributes[2].values.push_back("USER 3");
    CHECK(f.add_code(entry) == StatusCode::kAttributeOrValueExists);
  }
  CHECK_FALSE(f.exists(user_dn(3)));
  CHECK(f.directory->entry_count().value() == 5);
}

TEST_CASE("Directory: remove deletes leaves only") {
  Fixture f;
  CHECK(f.directory->remove("uid=nobody," + kPeople, {}).code() == StatusCode::kNoSuchObject);
  CHECK(f.directory->remove(kPeople, {}).code() == StatusCode::kNotAllowedOnNonLeaf);
  CHECK(f.directory->remove("not a dn", {}).code() == StatusCode::kInvalidDnSyntax);
  require_ok(f.directory->remove(user_dn(1), {}));
  CHECK_FALSE(f.exists(user_dn(1)));
  CHECK(f.directory->entry_count().value() == 4);
  // The name can be used again, under a new id.
  require_ok(f.directory->add(user(1), {}));
  CHECK(f.exists(user_dn(1)));
}

TEST_CASE("Directory: modify applies add delete and replace") {
  Fixture f;
  require_ok(f.directory->modify(
      user_dn(1),
      std::vector<Modification>{mod(ModificationKind::kAdd, "mail", {"u1@example.com"}),
                                mod(ModificationKind::kAdd, "cn", {"Alias One"}),
                                mod(ModificationKind::kReplace, "sn", {"Renamed"}),
                                mod(ModificationKind::kDelete, "cn", {"user 1"})},
      {}));
  schema::Entry entry = f.get(user_dn(1));
  CHECK(values_of(entry, "mail") == std::vector<std::string>{"u1@example.com"});
  CHECK(values_of(entry, "cn") == std::vector<std::string>{"Alias One"});
  CHECK(values_of(entry, "sn") == std::vector<std::string>{"Renamed"});
  require_ok(f.directory->modify(
      user_dn(1), std::vector<Modification>{mod(ModificationKind::kReplace, "mail", {})}, {}));
  CHECK(values_of(f.get(user_dn(1)), "mail").empty());
  require_ok(f.directory->modify(
      user_dn(1), std::vector<Modification>{mod(ModificationKind::kReplace, "mail", {})}, {}));
}

TEST_CASE("Directory: modify reports each error code and changes nothing on error") {
  Fixture f;
  require_ok(f.directory->add(posix_user(5, "1005"), {}));
  const schema::Entry before = f.get(user_dn(1));
  using K = ModificationKind;
  SUBCASE("add of an existing value") {
    CHECK(f.modify_code(user_dn(1), {mod(K::kAdd, "cn", {"USER 1"})}) ==
          StatusCode::kAttributeOrValueExists);
  }
  SUBCASE("delete of a missing attribute or value") {
    CHECK(f.modify_code(user_dn(1), {mod(K::kDelete, "mail", {})}) == StatusCode::kNoSuchAttribute);
    CHECK(f.modify_code(user_dn(1), {mod(K::kDelete, "cn", {"nope"})}) ==
          StatusCode::kNoSuchAttribute);
  }
  SUBCASE("an RDN value removed") {
    CHECK(f.modify_code(user_dn(1), {mod(K::kDelete, "uid", {"user1"})}) ==
          StatusCode::kNotAllowedOnRdn);
    CHECK(f.modify_code(user_dn(1), {mod(K::kDelete, "uid", {})}) == StatusCode::kNotAllowedOnRdn);
    CHECK(f.modify_code(user_dn(1), {mod(K::kReplace, "uid", {"other"})}) ==
          StatusCode::kNotAllowedOnRdn);
  }
  SUBCASE("a later modification fails after an earlier one applied") {
    CHECK(f.modify_code(user_dn(1), {mod(K::kReplace, "sn", {"Changed"}),
                                     mod(K::kDelete, "mail", {})}) == StatusCode::kNoSuchAttribute);
  }
  SUBCASE("a NO-USER-MODIFICATION attribute") {
    CHECK(f.modify_code(user_dn(1), {mod(K::kReplace, "entryUUID", {"x"})}) ==
          StatusCode::kConstraintViolation);
    CHECK(f.modify_code(user_dn(1), {mod(K::kReplace, "modifyTimestamp", {"20200101000000Z"})}) ==
          StatusCode::kConstraintViolation);
  }
  SUBCASE("a change of the structural class") {
    CHECK(f.modify_code(user_dn(1), {mod(K::kReplace, "objectClass", {"top", "person"})}) ==
          StatusCode::kObjectClassModsProhibited);
  }
  SUBCASE("an auxiliary class without its MUST attributes") {
    CHECK(f.modify_code(user_dn(1), {mod(K::kAdd, "objectClass", {"posixAccount"})}) ==
          StatusCode::kObjectClassViolation);
  }
  SUBCASE("an unknown attribute") {
    CHECK(f.modify_code(user_dn(1), {mod(K::kAdd, "bogusAttr", {"x"})}) ==
          StatusCode::kUndefinedAttributeType);
  }
  SUBCASE("an invalid value") {
    CHECK(f.modify_code(user_dn(5), {mod(K::kReplace, "uidNumber", {"x1"})}) ==
          StatusCode::kInvalidAttributeSyntax);
  }
  SUBCASE("a second value of a single-valued type") {
    CHECK(f.modify_code(user_dn(5), {mod(K::kAdd, "uidNumber", {"7"})}) ==
          StatusCode::kConstraintViolation);
  }
  SUBCASE("a missing entry") {
    CHECK(f.modify_code("uid=none," + kPeople, {mod(K::kAdd, "cn", {"x"})}) ==
          StatusCode::kNoSuchObject);
  }
  SUBCASE("an add without values") {
    CHECK(f.modify_code(user_dn(1), {mod(K::kAdd, "cn", {})}) == StatusCode::kMalformed);
  }
  CHECK(f.get(user_dn(1)) == before);
}

TEST_CASE("Directory: increment adds to integer values") {
  Fixture f;
  require_ok(f.directory->add(posix_user(5, "1005"), {}));
  using K = ModificationKind;
  require_ok(
      f.directory->modify(user_dn(5), std::vector{mod(K::kIncrement, "uidNumber", {"5"})}, {}));
  CHECK(values_of(f.get(user_dn(5)), "uidNumber") == std::vector<std::string>{"1010"});
  require_ok(
      f.directory->modify(user_dn(5), std::vector{mod(K::kIncrement, "uidNumber", {"-20"})}, {}));
  CHECK(values_of(f.get(user_dn(5)), "uidNumber") == std::vector<std::string>{"990"});
  CHECK(f.modify_code(user_dn(5), {mod(K::kIncrement, "cn", {"1"})}) ==
        StatusCode::kConstraintViolation);
  CHECK(f.modify_code(user_dn(5), {mod(K::kIncrement, "uidNumber", {"one"})}) ==
        StatusCode::kInvalidAttributeSyntax);
  CHECK(f.modify_code(user_dn(5), {mod(K::kIncrement, "uidNumber", {"1", "2"})}) ==
        StatusCode::kConstraintViolation);
  CHECK(f.modify_code(user_dn(1), {mod(K::kIncrement, "uidNumber", {"1"})}) ==
        StatusCode::kNoSuchAttribute);
  auto txn = f.directory->begin_read();
  CHECK(search(*f.directory, *txn, kSuffix, Scope::kSubtree, "(uidNumber=990)").dns ==
        std::vector<std::string>{user_dn(5)});
}

TEST_CASE("Directory: modify stamps modifiersName modifyTimestamp and a larger entryCSN") {
  Fixture f;
  const schema::Entry before = f.get(user_dn(1));
  UpdateContext context;
  context.actor_dn = "cn=manager," + std::string(kSuffix);
  context.now = std::chrono::system_clock::time_point(std::chrono::seconds(4102444800));  // 2100
  require_ok(f.directory->modify(
      user_dn(1), std::vector{mod(ModificationKind::kReplace, "sn", {"New"})}, context));
  const schema::Entry after = f.get(user_dn(1));
  CHECK(values_of(after, "modifiersName") == std::vector<std::string>{context.actor_dn});
  CHECK(values_of(after, "modifyTimestamp") == std::vector<std::string>{"21000101000000Z"});
  CHECK(values_of(after, "createTimestamp") == values_of(before, "createTimestamp"));
  CHECK(values_of(after, "entryUUID") == values_of(before, "entryUUID"));
  CHECK(values_of(after, "entryCSN")[0] > values_of(before, "entryCSN")[0]);
}

TEST_CASE("Directory: entryCSN values strictly increase within the process") {
  Fixture f;
  const auto fixed = std::chrono::system_clock::time_point(std::chrono::seconds(1764504000));
  std::string last;
  for (int i = 0; i < 50; ++i) {
    UpdateContext context;
    context.now = fixed;  // The clock standing still must not repeat a CSN.
    require_ok(f.directory->modify(
        user_dn(1), std::vector{mod(ModificationKind::kReplace, "sn", {std::to_string(i)})},
        context));
    const std::string csn = values_of(f.get(user_dn(1)), "entryCSN")[0];
    CHECK(csn > last);
    last = csn;
  }
}

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

TEST_CASE("Directory: import keeps provided operational values and commits only on finish") {
  TempDir dir;
  const DirectoryOptions options = test_options(dir.path());
  std::vector<schema::Entry> exported;
  {
    auto source = open_directory(options);
    add_base_tree(*source);
    for (int i = 0; i < 20; ++i) {
      require_ok(source->add(user(i), {}));
    }
    require_ok(source->export_entries([&](const schema::Entry& e) {
      exported.push_back(e);
      return true;
    }));
  }
  TempDir dir2;
  auto target = open_directory(test_options(dir2.path()));
  {
    Result<std::unique_ptr<Directory::Importer>> importer = target->begin_import({});
    REQUIRE(importer.ok());
    for (const schema::Entry& entry : exported) {
      require_ok((*importer)->add(entry));
    }
    // Dropped without finish(): nothing is committed.
  }
  CHECK(target->entry_count().value() == 0);
  {
    Result<std::unique_ptr<Directory::Importer>> importer = target->begin_import({});
    REQUIRE(importer.ok());
    for (const schema::Entry& entry : exported) {
      require_ok((*importer)->add(entry));
    }
    require_ok((*importer)->finish());
  }
  CHECK(target->entry_count().value() == exported.size());
  require_ok(target->verify_indexes());
  std::vector<schema::Entry> again;
  require_ok(target->export_entries([&](const schema::Entry& e) {
    again.push_back(e);
    return true;
  }));
  CHECK(again == exported);
  CHECK(target->begin_import({}).status().code() == StatusCode::kInvalidArgument);
  // Updates work after the import, with ids after the imported ones.
  require_ok(target->add(user(100), {}));
  require_ok(target->verify_indexes());
}

TEST_CASE("Directory: import generates missing operational values and stops at an error") {
  TempDir dir;
  auto directory = open_directory(test_options(dir.path()));
  Result<std::unique_ptr<Directory::Importer>> importer =
      directory->begin_import({"cn=importer", {}});
  REQUIRE(importer.ok());
  require_ok((*importer)->add(domain_entry(std::string(kSuffix), "example")));
  require_ok((*importer)->add(ou_entry(kPeople, "people")));
  CHECK((*importer)->add(user(1)).ok());
  CHECK((*importer)->add(user(1)).code() == StatusCode::kEntryAlreadyExists);
  CHECK((*importer)->add(user(2)).code() == StatusCode::kInvalidArgument);
  CHECK((*importer)->finish().code() == StatusCode::kInvalidArgument);
  importer =
      Result<std::unique_ptr<Directory::Importer>>(Status(StatusCode::kInternal, "released"));
  CHECK(directory->entry_count().value() == 0);

  importer = directory->begin_import({"cn=importer", {}});
  REQUIRE(importer.ok());
  require_ok((*importer)->add(domain_entry(std::string(kSuffix), "example")));
  require_ok((*importer)->finish());
  importer =
      Result<std::unique_ptr<Directory::Importer>>(Status(StatusCode::kInternal, "released"));
  auto txn = directory->begin_read();
  Result<schema::Entry> suffix = directory->get(*txn, kSuffix);
  REQUIRE(suffix.ok());
  CHECK(values_of(*suffix, "creatorsName") == std::vector<std::string>{"cn=importer"});
  CHECK(values_of(*suffix, "entryUUID").size() == 1);
  CHECK(values_of(*suffix, "structuralObjectClass") == std::vector<std::string>{"domain"});
}

TEST_CASE("Directory: open rejects bad options") {
  TempDir dir;
  SUBCASE("a bad suffix") {
    DirectoryOptions options = test_options(dir.path());
    options.suffix = "dc=example,,";
    CHECK(Directory::open(test_schema(), options).status().code() == StatusCode::kInvalidArgument);
    options.suffix = "";
    CHECK(Directory::open(test_schema(), options).status().code() == StatusCode::kInvalidArgument);
  }
  SUBCASE("an index on an unknown attribute") {
    DirectoryOptions options = test_options(dir.path(), {IndexSpec{"noSuchAttr", true}});
    CHECK(Directory::open(test_schema(), options).status().code() == StatusCode::kInvalidArgument);
  }
  SUBCASE("an index kind without a matching rule") {
    // userPassword has no substrings rule; sn has no ordering rule.
    DirectoryOptions options =
        test_options(dir.path(), {IndexSpec{"sn", false, false, false, true}});
    CHECK(Directory::open(test_schema(), options).status().code() == StatusCode::kInvalidArgument);
  }
  SUBCASE("a different suffix than the database's") {
    { auto directory = open_directory(test_options(dir.path())); }
    DirectoryOptions options = test_options(dir.path());
    options.suffix = "dc=other,dc=org";
    CHECK(Directory::open(test_schema(), options).status().code() == StatusCode::kInvalidArgument);
  }
  SUBCASE("an unusable path") {
    DirectoryOptions options = test_options("/proc/numadir-cannot-create");
    CHECK(Directory::open(test_schema(), options).status().code() == StatusCode::kStorage);
  }
}

TEST_CASE("Directory: data survives close and reopen") {
  TempDir dir;
  {
    auto directory = open_directory(test_options(dir.path()));
    add_base_tree(*directory);
    require_ok(directory->add(user(1), {}));
  }
  auto directory = open_directory(test_options(dir.path()));
  require_ok(directory->add(user(2), {}));
  auto txn = directory->begin_read();
  CHECK(search(*directory, *txn, kSuffix, Scope::kSubtree, "(uid=user*)").dns.size() == 2);
  require_ok(directory->verify_indexes());
}

}  // namespace
}  // namespace numadir::backend

namespace numadir::backend {
namespace {

using namespace testing;

TEST_CASE("Directory: readers on several threads see every acknowledged add") {
  TempDir dir;
  DirectoryOptions options = test_options(dir.path());
  options.durability = Durability::kNoSync;
  auto directory = open_directory(options);
  add_base_tree(*directory);
  constexpr int kAdds = 300;
  constexpr int kReaders = 3;
  std::atomic<int> acknowledged{0};  // Written by the writer after each add returns (release).
  std::atomic<bool> failed{false};
  std::latch start(kReaders + 1);
  std::vector<std::thread> readers;
  for (int r = 0; r < kReaders; ++r) {
    readers.emplace_back([&] {
      auto txn = directory->begin_read();
      const schema::Filter all = parse_filter("(objectClass=inetOrgPerson)");
      start.arrive_and_wait();
      int last = 0;
      while (true) {
        const int floor = acknowledged.load(std::memory_order_acquire);
        int seen = 0;
        const SearchSpec spec{kPeople, Scope::kOneLevel, &all, 0, std::nullopt};
        const Status status = directory->search(*txn, spec, [&](const EntryRef&) {
          ++seen;
          return true;
        });
        // Each search sees at least what was acknowledged before it began, never less than
        // the previous one, and a single user lookup agrees.
        if (!status.ok() || seen < floor || seen < last ||
            (floor > 0 && !directory->get(*txn, user_dn(floor - 1)).ok())) {
          failed = true;
        }
        last = seen;
        if (floor == kAdds) {
          break;
        }
      }
    });
  }
  start.arrive_and_wait();
  for (int n = 0; n < kAdds; ++n) {
    require_ok(directory->add(user(n), {}));
    acknowledged.store(n + 1, std::memory_order_release);
  }
  for (std::thread& reader : readers) {
    reader.join();
  }
  CHECK_FALSE(failed.load());
  require_ok(directory->verify_indexes());
}

TEST_CASE("Directory: updates from several threads are serialized") {
  TempDir dir;
  DirectoryOptions options = test_options(dir.path());
  options.durability = Durability::kNoSync;
  auto directory = open_directory(options);
  add_base_tree(*directory);
  constexpr int kThreads = 4;
  constexpr int kEach = 40;
  std::latch start(kThreads);
  std::vector<std::thread> writers;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < kEach; ++i) {
        const int n = t * 1000 + i;
        if (!directory->add(user(n), {}).ok()) {
          ++failures;
        }
        const std::vector<Modification> mods{{ModificationKind::kAdd, "mail", {"m@x.org"}}};
        if (!directory->modify(user_dn(n), mods, {}).ok()) {
          ++failures;
        }
        if (i % 3 == 0 && !directory->remove(user_dn(n), {}).ok()) {
          ++failures;
        }
      }
    });
  }
  for (std::thread& writer : writers) {
    writer.join();
  }
  CHECK(failures.load() == 0);
  CHECK(directory->entry_count().value() == 3 + kThreads * (kEach - (kEach + 2) / 3));
  require_ok(directory->verify_indexes());
}

}  // namespace
}  // namespace numadir::backend

namespace numadir::backend {
namespace {

using namespace testing;

// Edits one database of a closed directory with raw LMDB calls.
void edit_database(const std::filesystem::path& path, const char* name,
                   const std::function<void(MDB_txn*, MDB_dbi)>& edit) {
  MDB_env* env = nullptr;
  REQUIRE(mdb_env_create(&env) == 0);
  REQUIRE(mdb_env_set_maxdbs(env, 64) == 0);
  REQUIRE(mdb_env_set_mapsize(env, std::size_t{1} << 30) == 0);
  REQUIRE(mdb_env_open(env, path.c_str(), 0, 0600) == 0);
  MDB_txn* txn = nullptr;
  REQUIRE(mdb_txn_begin(env, nullptr, 0, &txn) == 0);
  MDB_dbi dbi = 0;
  REQUIRE(mdb_dbi_open(txn, name, 0, &dbi) == 0);
  edit(txn, dbi);
  REQUIRE(mdb_txn_commit(txn) == 0);
  mdb_env_close(env);
}

MDB_val val(std::string_view bytes) {
  return MDB_val{bytes.size(), const_cast<char*>(bytes.data())};
}

TEST_CASE("Directory: verify_indexes finds missing and extra pairs and rebuild repairs them") {
  TempDir dir;
  EntryId id1 = 0;
  {
    auto directory = open_directory(test_options(dir.path()));
    add_base_tree(*directory);
    require_ok(directory->add(user(1), {}));
    require_ok(directory->add(user(2), {}));
    require_ok(directory->verify_indexes());
  }
  edit_database(dir.path(), "dn2id", [&](MDB_txn* txn, MDB_dbi dbi) {
    const std::string key = "dc=com\0dc=example\0ou=people\0uid=user1"s;
    MDB_val k = val(key);
    MDB_val v;
    REQUIRE(mdb_get(txn, dbi, &k, &v) == 0);
    std::memcpy(&id1, v.mv_data, sizeof id1);
  });
  SUBCASE("a missing pair") {
    edit_database(dir.path(), "ix.uid.eq", [&](MDB_txn* txn, MDB_dbi dbi) {
      MDB_val k = val("user1");
      MDB_val v = val(id_bytes(id1));
      REQUIRE(mdb_del(txn, dbi, &k, &v) == 0);
    });
    auto directory = open_directory(test_options(dir.path()));
    const Status status = directory->verify_indexes();
    CHECK(status.code() == StatusCode::kInternal);
    CHECK(status.message().find("ix.uid.eq: missing key 'user1'") != std::string::npos);
    require_ok(directory->rebuild_indexes());
    require_ok(directory->verify_indexes());
  }
  SUBCASE("an extra pair") {
    edit_database(dir.path(), "ix.cn.eq", [&](MDB_txn* txn, MDB_dbi dbi) {
      MDB_val k = val("nobody");
      MDB_val v = val(id_bytes(id1));
      REQUIRE(mdb_put(txn, dbi, &k, &v, 0) == 0);
    });
    auto directory = open_directory(test_options(dir.path()));
    const Status status = directory->verify_indexes();
    CHECK(status.code() == StatusCode::kInternal);
    CHECK(status.message().find("ix.cn.eq: extra key 'nobody'") != std::string::npos);
    // A search may see the stale key, but full evaluation keeps the results right.
    auto txn = directory->begin_read();
    CHECK(search(*directory, *txn, kSuffix, Scope::kSubtree, "(cn=nobody)").dns.empty());
    require_ok(directory->rebuild_indexes());
    require_ok(directory->verify_indexes());
  }
  SUBCASE("a dn2id key pointing elsewhere") {
    edit_database(dir.path(), "dn2id", [&](MDB_txn* txn, MDB_dbi dbi) {
      const std::string key = "dc=com\0dc=example\0ou=people\0uid=user1"s;
      MDB_val k = val(key);
      const EntryId other = id1 + 1;
      MDB_val v = val(id_bytes(other));
      REQUIRE(mdb_put(txn, dbi, &k, &v, 0) == 0);
    });
    auto directory = open_directory(test_options(dir.path()));
    const Status status = directory->verify_indexes();
    CHECK(status.code() == StatusCode::kInternal);
    CHECK(status.message().find("dn2id maps its key") != std::string::npos);
  }
  SUBCASE("a corrupt entry record") {
    edit_database(dir.path(), "id2entry", [&](MDB_txn* txn, MDB_dbi dbi) {
      MDB_val k = val(id_bytes(id1));
      MDB_val v = val("\x07garbage");
      REQUIRE(mdb_put(txn, dbi, &k, &v, 0) == 0);
    });
    auto directory = open_directory(test_options(dir.path()));
    CHECK(directory->verify_indexes().code() == StatusCode::kStorage);
    auto txn = directory->begin_read();
    CHECK(directory->get(*txn, user_dn(1)).status().code() == StatusCode::kStorage);
    const SearchResult result = search(*directory, *txn, kSuffix, Scope::kSubtree, "(uid=user1)");
    CHECK(result.status.code() == StatusCode::kStorage);
    CHECK(directory->remove(user_dn(1), {}).code() == StatusCode::kStorage);
  }
}

}  // namespace
}  // namespace numadir::backend

namespace numadir::backend {
namespace {

using namespace testing;

TEST_CASE("Directory: a DN too long for the dn2id key is refused cleanly") {
  TempDir dir;
  auto directory = open_directory(test_options(dir.path()));
  add_base_tree(*directory);
  const std::string long_value(500, 'x');
  const std::string long_dn = "ou=" + long_value + "," + kPeople;
  CHECK(directory->add(ou_entry(long_dn, long_value), {}).code() ==
        StatusCode::kUnwillingToPerform);
  auto txn = directory->begin_read();
  CHECK(directory->get(*txn, long_dn).status() == Status(StatusCode::kNoSuchObject, kPeople));
  const SearchResult found = search(*directory, *txn, long_dn, Scope::kSubtree, "(ou=*)");
  CHECK(found.status == Status(StatusCode::kNoSuchObject, kPeople));
  // A move that would push a descendant's DN over the limit fails as a whole.
  const std::string mid(200, 'm');
  require_ok(directory->add(ou_entry("ou=" + mid + "," + kPeople, mid), {}));
  require_ok(directory->add(ou_entry("ou=deep,ou=" + mid + "," + kPeople, "deep"), {}));
  const std::string other(300, 'o');
  require_ok(directory->add(ou_entry("ou=" + other + "," + kPeople, other), {}));
  CHECK(directory
            ->rename("ou=" + mid + "," + kPeople, "ou=" + mid, true, "ou=" + other + "," + kPeople,
                     {})
            .code() == StatusCode::kUnwillingToPerform);
  CHECK(directory->get(*txn, "ou=deep,ou=" + mid + "," + kPeople).ok());
  require_ok(directory->verify_indexes());
}

}  // namespace
}  // namespace numadir::backend
