// Tests for backend/import.cc: Directory::BulkImporter (entries prepared on worker threads and
// stored by a writer thread, in input order, in one transaction) and MDB_WRITEMAP directories.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "backend/directory.h"
#include "tests/backend/backend_test_util.h"

namespace numadir::backend {
namespace {

using namespace testing;

schema::Entry user(int n) {
  schema::Entry entry = person_entry(user_dn(n), "user" + std::to_string(n),
                                     "User " + std::to_string(n), "Surname" + std::to_string(n));
  entry.attributes.push_back({"mail", {"user" + std::to_string(n) + "@example.com"}});
  return entry;
}

// The suffix, ou=people, then `users` users, then a group of all of them.
std::vector<schema::Entry> directory_entries(int users) {
  std::vector<schema::Entry> entries;
  entries.push_back(domain_entry(std::string(kSuffix), "example"));
  entries.push_back(ou_entry(kPeople, "people"));
  std::vector<std::string> members;
  for (int i = 0; i < users; ++i) {
    entries.push_back(user(i));
    members.push_back(user_dn(i));
  }
  entries.push_back(make_entry(
      "cn=everyone," + std::string(kSuffix),
      {{"objectClass", {"top", "groupOfNames"}}, {"cn", {"everyone"}}, {"member", members}}));
  return entries;
}

Directory::BulkImportOptions small_batches(std::uint32_t workers, std::size_t batch_entries) {
  Directory::BulkImportOptions options;
  options.workers = workers;
  options.batch_entries = batch_entries;
  options.batches_per_worker = 2;
  return options;
}

// Adds every entry (tag = its position + 1). Returns: false if add() refused one.
bool add_all(Directory::BulkImporter& importer, std::vector<schema::Entry> entries) {
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (!importer.add(entries[i], i + 1)) {
      return false;
    }
  }
  return true;
}

std::vector<schema::Entry> exported(const Directory& directory) {
  std::vector<schema::Entry> entries;
  require_ok(directory.export_entries([&](const schema::Entry& entry) {
    entries.push_back(entry);
    return true;
  }));
  return entries;
}

TEST_CASE("BulkImporter: stores every entry in input order with consistent indexes") {
  struct Variant {
    const char* name;
    Directory::BulkImportOptions options;
  };
  const Variant variants[] = {{"defaults", Directory::BulkImportOptions{}},
                              {"one worker, one entry per batch", small_batches(1, 1)},
                              {"three workers, batches of 3", small_batches(3, 3)}};
  for (const Variant& variant : variants) {
    SUBCASE(variant.name) {
      TempDir dir;
      auto directory = open_directory(test_options(dir.path()));
      auto importer = directory->begin_bulk_import({"cn=importer", {}}, variant.options);
      REQUIRE(importer.ok());
      const std::vector<schema::Entry> entries = directory_entries(40);
      REQUIRE(add_all(**importer, entries));
      require_ok((*importer)->finish());
      CHECK((*importer)->failure() == nullptr);
      importer = Result<std::unique_ptr<Directory::BulkImporter>>(
          Status(StatusCode::kInternal, "released"));

      CHECK(directory->entry_count().value() == entries.size());
      require_ok(directory->verify_indexes());
      auto txn = directory->begin_read();
      // Ids, and so entryCSNs, follow the input order.
      std::string previous_csn;
      for (int i = 0; i < 40; ++i) {
        Result<schema::Entry> stored = directory->get(*txn, user_dn(i));
        REQUIRE(stored.ok());
        CHECK(values_of(*stored, "creatorsName") == std::vector<std::string>{"cn=importer"});
        CHECK(values_of(*stored, "structuralObjectClass") ==
              std::vector<std::string>{"inetOrgPerson"});
        const std::vector<std::string> csn = values_of(*stored, "entryCSN");
        REQUIRE(csn.size() == 1);
        CHECK(csn[0] > previous_csn);
        previous_csn = csn[0];
      }
      SearchResult found = search(*directory, *txn, kSuffix, Scope::kSubtree, "(uid=user17)");
      CHECK(found.dns == std::vector<std::string>{user_dn(17)});
      found = search(*directory, *txn, kSuffix, Scope::kSubtree, "(mail=user3@example.com)");
      CHECK(found.dns == std::vector<std::string>{user_dn(3)});
      // Updates work after the import.
      require_ok(directory->add(user(100), {}));
      require_ok(directory->verify_indexes());
    }
  }
}

TEST_CASE("BulkImporter: stores the same entries as Importer") {
  TempDir dir1;
  TempDir dir2;
  auto bulk = open_directory(test_options(dir1.path()));
  auto plain = open_directory(test_options(dir2.path()));
  const UpdateContext context{"cn=importer", std::chrono::system_clock::time_point{}};
  {
    auto importer = bulk->begin_bulk_import(context, small_batches(2, 4));
    REQUIRE(importer.ok());
    REQUIRE(add_all(**importer, directory_entries(10)));
    require_ok((*importer)->finish());
  }
  {
    auto importer = plain->begin_import(context);
    REQUIRE(importer.ok());
    for (const schema::Entry& entry : directory_entries(10)) {
      require_ok((*importer)->add(entry));
    }
    require_ok((*importer)->finish());
  }
  std::vector<schema::Entry> a = exported(*bulk);
  std::vector<schema::Entry> b = exported(*plain);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    // entryUUID and entryCSN (and so the suffix's contextCSN) differ by nature; everything else
    // is the same.
    for (schema::Entry* entry : {&a[i], &b[i]}) {
      std::erase_if(entry->attributes, [](const schema::EntryAttribute& attribute) {
        return attribute.description == "entryUUID" || attribute.description == "entryCSN" ||
               attribute.description == "contextCSN";
      });
    }
    CHECK(a[i] == b[i]);
  }
}

TEST_CASE(
    "BulkImporter: the first failing entry in input order is reported and nothing is committed") {
  TempDir dir;
  auto directory = open_directory(test_options(dir.path()));
  std::vector<schema::Entry> entries = directory_entries(30);
  std::size_t bad = 0;
  StatusCode code = StatusCode::kOk;
  SUBCASE("a schema violation (found by a worker)") {
    bad = 12;
    entries[bad].attributes.pop_back();  // mail
    entries[bad].attributes.pop_back();  // sn, which person requires
    code = StatusCode::kObjectClassViolation;
  }
  SUBCASE("a missing parent (found by the writer)") {
    bad = 20;
    entries[bad].dn = "uid=user18,ou=nowhere," + std::string(kSuffix);
    code = StatusCode::kNoSuchObject;
  }
  SUBCASE("an entry twice (found by the writer)") {
    bad = 9;
    entries[bad] = user(3);
    code = StatusCode::kEntryAlreadyExists;
  }
  // Later entries fail too, a worker may see them first: the earliest one is reported.
  entries[25].attributes[0].values = {"noSuchClass"};
  entries[27].dn = "not a dn";

  auto importer = directory->begin_bulk_import({}, small_batches(3, 2));
  REQUIRE(importer.ok());
  add_all(**importer, entries);
  const Status finished = (*importer)->finish();
  CHECK(finished.code() == code);
  const Directory::ImportFailure* failure = (*importer)->failure();
  REQUIRE(failure != nullptr);
  CHECK(failure->tag == bad + 1);
  CHECK(failure->dn == entries[bad].dn);
  CHECK(failure->status.code() == code);
  if (code == StatusCode::kNoSuchObject) {
    // The parent itself, not the nearest entry that exists (the suffix).
    CHECK(failure->missing_parent == "ou=nowhere," + std::string(kSuffix));
    CHECK(failure->status.message() ==
          "parent entry ou=nowhere," + std::string(kSuffix) + " is missing");
  } else {
    CHECK(failure->missing_parent.empty());
  }
  if (code == StatusCode::kEntryAlreadyExists) {
    // user(3) is entries[5] (after the suffix and ou=people), added with tag 6.
    CHECK(failure->earlier_tag == std::optional<std::uint64_t>(6));
    CHECK(failure->earlier_dn == entries[bad].dn);
    CHECK(failure->status.message() == "an entry with this DN is already stored");
  } else {
    CHECK_FALSE(failure->earlier_tag.has_value());
  }
  importer =
      Result<std::unique_ptr<Directory::BulkImporter>>(Status(StatusCode::kInternal, "released"));
  CHECK(directory->entry_count().value() == 0);

  // The directory is as before: a new import works.
  importer = directory->begin_bulk_import({}, {});
  REQUIRE(importer.ok());
  REQUIRE(add_all(**importer, directory_entries(5)));
  require_ok((*importer)->finish());
  CHECK(directory->entry_count().value() == 8);
}

TEST_CASE("BulkImporter: a DN given twice names the earlier entry by its tag and spelling") {
  TempDir dir;
  auto directory = open_directory(test_options(dir.path()));
  std::vector<schema::Entry> entries = directory_entries(300);
  // Tags as a caller may give them: large, and not in order (each kept as a difference from
  // the one before: large ones, and ones below it, take several bytes).
  auto tag_of = [](std::size_t i) -> std::uint64_t {
    return i % 2 == 0 ? (std::uint64_t{1} << 40) + i * 1'000'003 : 7 * i + 1;
  };
  const std::size_t earlier = 2 + 217;  // user(217)
  schema::Entry again = user(217);
  again.dn = "UID=User217," + kPeople;
  entries.insert(entries.begin() + 290, again);
  auto importer = directory->begin_bulk_import({}, small_batches(2, 16));
  REQUIRE(importer.ok());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (!(*importer)->add(entries[i], tag_of(i))) {
      break;
    }
  }
  CHECK((*importer)->finish().code() == StatusCode::kEntryAlreadyExists);
  const Directory::ImportFailure* failure = (*importer)->failure();
  REQUIRE(failure != nullptr);
  CHECK(failure->tag == tag_of(290));
  CHECK(failure->dn == "UID=User217," + kPeople);
  CHECK(failure->earlier_tag == std::optional<std::uint64_t>(tag_of(earlier)));
  CHECK(failure->earlier_dn == user_dn(217));
  CHECK(failure->status.message() == "an entry with this DN is already stored as " + user_dn(217));
}

TEST_CASE("BulkImporter: an entry outside the suffix says so") {
  TempDir dir;
  auto directory = open_directory(test_options(dir.path()));
  std::vector<schema::Entry> entries = directory_entries(3);
  entries[3].dn = "uid=user1,dc=elsewhere,dc=org";
  auto importer = directory->begin_bulk_import({}, small_batches(1, 4));
  REQUIRE(importer.ok());
  add_all(**importer, entries);
  CHECK((*importer)->finish().code() == StatusCode::kNoSuchObject);
  REQUIRE((*importer)->failure() != nullptr);
  CHECK((*importer)->failure()->tag == 4);
  CHECK((*importer)->failure()->status.message() == "not under the suffix " + std::string(kSuffix));
  CHECK((*importer)->failure()->missing_parent.empty());
}

TEST_CASE("BulkImporter: add() says stop once an entry failed") {
  TempDir dir;
  auto directory = open_directory(test_options(dir.path()));
  auto importer = directory->begin_bulk_import({}, small_batches(1, 1));
  REQUIRE(importer.ok());
  schema::Entry orphan = user(1);  // No suffix, no ou=people.
  bool refused = false;
  // Entries in flight are bounded, so add() refuses within a few more entries.
  for (int i = 0; i < 1000 && !refused; ++i) {
    orphan = user(i);
    refused = !(*importer)->add(orphan, static_cast<std::uint64_t>(i));
  }
  CHECK(refused);
  REQUIRE((*importer)->failure() != nullptr);
  CHECK((*importer)->failure()->tag == 0);
  CHECK((*importer)->failure()->status.code() == StatusCode::kNoSuchObject);
  CHECK((*importer)->finish().code() == StatusCode::kNoSuchObject);
}

TEST_CASE("BulkImporter: abort() and dropping commit nothing") {
  TempDir dir;
  auto directory = open_directory(test_options(dir.path()));
  SUBCASE("abort() with good entries") {
    auto importer = directory->begin_bulk_import({}, small_batches(2, 3));
    REQUIRE(importer.ok());
    REQUIRE(add_all(**importer, directory_entries(20)));
    CHECK((*importer)->abort() == nullptr);
  }
  SUBCASE("abort() reports a failed entry among those queued") {
    auto importer = directory->begin_bulk_import({}, small_batches(2, 3));
    REQUIRE(importer.ok());
    std::vector<schema::Entry> entries = directory_entries(20);
    entries[7].dn = "cn=x,ou=nowhere," + std::string(kSuffix);
    add_all(**importer, entries);
    const Directory::ImportFailure* failure = (*importer)->abort();
    REQUIRE(failure != nullptr);
    CHECK(failure->tag == 8);
  }
  SUBCASE("dropped without finish()") {
    auto importer = directory->begin_bulk_import({}, small_batches(2, 3));
    REQUIRE(importer.ok());
    REQUIRE(add_all(**importer, directory_entries(20)));
  }
  CHECK(directory->entry_count().value() == 0);
  require_ok(directory->add(domain_entry(std::string(kSuffix), "example"), {}));
}

TEST_CASE("BulkImporter: refuses a directory that is not empty") {
  TempDir dir;
  auto directory = open_directory(test_options(dir.path()));
  require_ok(directory->add(domain_entry(std::string(kSuffix), "example"), {}));
  auto importer = directory->begin_bulk_import({}, {});
  CHECK(importer.status().code() == StatusCode::kInvalidArgument);
  CHECK(importer.status().message() ==
        "the directory holds 1 entry: an import loads only into an empty one");
  // The writer mutex was released: updates go on.
  require_ok(directory->add(ou_entry(kPeople, "people"), {}));
}

TEST_CASE(
    "Directory: a write_map import leaves a data file of its pages that opens without write_map") {
  TempDir dir;
  DirectoryOptions options = test_options(dir.path());
  options.write_map = true;
  {
    auto directory = open_directory(options);
    auto importer = directory->begin_bulk_import({}, {});
    REQUIRE(importer.ok());
    REQUIRE(add_all(**importer, directory_entries(50)));
    require_ok((*importer)->finish());
  }
  // LMDB grows a MDB_WRITEMAP data file to the map size; closing cuts it back.
  const auto size = std::filesystem::file_size(dir.path() / "data.mdb");
  CHECK(size < options.map_size_bytes / 16);
  options.write_map = false;
  auto directory = open_directory(options);
  CHECK(directory->entry_count().value() == 53);
  require_ok(directory->verify_indexes());
  require_ok(directory->add(user(100), {}));
  require_ok(directory->verify_indexes());
}

}  // namespace
}  // namespace numadir::backend
