// Tests for backend/directory.h: open, add / remove / modify with every error code, operational
// attributes, get, and what a DN too long for its key does. Renames: directory_rename_test.cc;
// import, export and index verification: directory_import_test.cc; threads:
// directory_threads_test.cc.
#include "backend/directory.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "tests/backend/backend_test_util.h"
#include "tests/backend/directory_test_util.h"

namespace numadir::backend {
namespace {

using namespace testing;

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

using namespace std::string_literals;

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
  CHECK(has_shape(uuid[0], "xxxxxxxx-xxxx-7xxx-vxxx-xxxxxxxxxxxx"));
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

TEST_CASE("Directory: open rejects bad options") {
  TempDir dir;
  SUBCASE("a bad suffix") {
    DirectoryOptions options = test_options(dir.path());
    options.suffix = "dc=example,,";
    CHECK(Directory::open(test_schema(), options, OpenMode::kCreate).status().code() ==
          StatusCode::kInvalidArgument);
    options.suffix = "";
    CHECK(Directory::open(test_schema(), options, OpenMode::kCreate).status().code() ==
          StatusCode::kInvalidArgument);
  }
  SUBCASE("an index on an unknown attribute") {
    DirectoryOptions options = test_options(dir.path(), {IndexSpec{"noSuchAttr", true}});
    CHECK(Directory::open(test_schema(), options, OpenMode::kCreate).status().code() ==
          StatusCode::kInvalidArgument);
  }
  SUBCASE("an index kind without a matching rule") {
    // userPassword has no substrings rule; sn has no ordering rule.
    DirectoryOptions options =
        test_options(dir.path(), {IndexSpec{"sn", false, false, false, true}});
    CHECK(Directory::open(test_schema(), options, OpenMode::kCreate).status().code() ==
          StatusCode::kInvalidArgument);
  }
  SUBCASE("a different suffix than the database's") {
    { auto directory = open_directory(test_options(dir.path())); }
    DirectoryOptions options = test_options(dir.path());
    options.suffix = "dc=other,dc=org";
    CHECK(Directory::open(test_schema(), options, OpenMode::kCreate).status().code() ==
          StatusCode::kInvalidArgument);
  }
  SUBCASE("an unusable path") {
    DirectoryOptions options = test_options("/proc/numadir-cannot-create");
    CHECK(Directory::open(test_schema(), options, OpenMode::kCreate).status().code() ==
          StatusCode::kStorage);
  }
}

TEST_CASE("Directory: kMustExist opens only a database that is there and creates nothing") {
  TempDir dir;
  SUBCASE("a path that does not exist") {
    const std::filesystem::path missing = dir.path() / "typo" / "db";
    Result<std::unique_ptr<Directory>> refused =
        Directory::open(test_schema(), test_options(missing), OpenMode::kMustExist);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == StatusCode::kNotFound);
    CHECK(refused.status().message() == "no database in " + missing.string());
    CHECK_FALSE(std::filesystem::exists(dir.path() / "typo"));
  }
  SUBCASE("an empty directory: neither data.mdb nor lock.mdb is made in it") {
    Result<std::unique_ptr<Directory>> refused =
        Directory::open(test_schema(), test_options(dir.path()), OpenMode::kMustExist);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == StatusCode::kNotFound);
    CHECK(std::filesystem::is_empty(dir.path()));
  }
  SUBCASE("kCreate makes the database and says so; then kMustExist opens it") {
    const std::filesystem::path made = dir.path() / "new" / "db";
    {
      Result<std::unique_ptr<Directory>> created =
          Directory::open(test_schema(), test_options(made), OpenMode::kCreate);
      REQUIRE_MESSAGE(created.ok(), created.status().to_string());
      CHECK((*created)->created());
      require_ok((*created)->add(domain_entry(std::string(kSuffix), "example"), {}));
    }
    for (const OpenMode mode : {OpenMode::kMustExist, OpenMode::kCreate}) {
      Result<std::unique_ptr<Directory>> opened =
          Directory::open(test_schema(), test_options(made), mode);
      REQUIRE_MESSAGE(opened.ok(), opened.status().to_string());
      CHECK_FALSE((*opened)->created());
      CHECK((*opened)->entry_count().value() == 1);
    }
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

TEST_CASE("Directory: lookup_id finds a change's entry wherever it was moved since") {
  TempDir dir;
  auto directory = open_directory(test_options(dir.path()));
  add_base_tree(*directory);
  std::vector<std::uint64_t> ids;
  {
    auto subscription = directory->subscribe_changes(
        [&ids](const ChangeRecord& record) { ids.push_back(record.entry_id); });
    require_ok(directory->add(ou_entry("ou=leaf," + kPeople, "leaf"), {}));
  }
  REQUIRE(ids.size() == 1);
  require_ok(directory->add(ou_entry("ou=other," + kPeople, "other"), {}));
  require_ok(directory->rename("ou=leaf," + kPeople, "ou=moved", true, "ou=other," + kPeople, {}));
  auto txn = directory->begin_read();
  std::string found;
  require_ok(directory->lookup_id(*txn, ids[0],
                                  [&found](const EntryRef& entry) { found.assign(entry.dn()); }));
  CHECK(found == "ou=moved,ou=other," + kPeople);
  require_ok(directory->remove("ou=moved,ou=other," + kPeople, {}));
  bool called = false;
  CHECK(directory->lookup_id(*txn, ids[0], [&called](const EntryRef&) { called = true; }) ==
        Status(StatusCode::kNoSuchObject, ""));
  CHECK_FALSE(called);
}

}  // namespace
}  // namespace numadir::backend
