// Tests for backend/directory.h: import (provided and generated operational values, commit only on
// finish, stop at an error) and index verification and rebuild over raw LMDB edits.
#include "backend/directory.h"

#include <doctest/doctest.h>

#include <lmdb.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "backend/lmdb_env.h"

#include "tests/backend/backend_test_util.h"
#include "tests/backend/directory_test_util.h"

namespace numadir::backend {
namespace {

using namespace testing;
using namespace std::string_literals;

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
