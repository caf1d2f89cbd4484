// tests/backend/directory_snapshot_test.cc: copy_directory_snapshot, the compacted read-only
// copy of a directory's environment.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>

#include "backend/directory.h"
#include "tests/backend/directory_test_util.h"

namespace numadir::backend::testing {
namespace {

std::string file_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("DirectorySnapshot: the copy holds every entry and the source file is unchanged") {
  TempDir source;
  {
    std::unique_ptr<Directory> directory = open_directory(test_options(source.path()));
    add_base_tree(*directory);
    require_ok(directory->add(user(1), {}));
    require_ok(directory->add(user(2), {}));
  }
  const std::string before = file_bytes(source.path() / "data.mdb");
  REQUIRE_FALSE(before.empty());
  TempDir copy;
  require_ok(copy_directory_snapshot(source.path(), copy.path()));
  CHECK(file_bytes(source.path() / "data.mdb") == before);

  std::unique_ptr<Directory> copied = open_directory(test_options(copy.path()));
  Result<std::uint64_t> count = copied->entry_count();
  REQUIRE(count.ok());
  CHECK(*count == 5);  // The base tree (suffix, ou=people, ou=groups) and two users.
  std::unique_ptr<ReadTxn> txn = copied->begin_read();
  CHECK(copied->get(*txn, user_dn(2)).ok());
  CHECK(copied->verify_indexes().ok());
  // A write to the copy leaves the source as it was.
  require_ok(copied->add(user(3), {}));
  CHECK(file_bytes(source.path() / "data.mdb") == before);
}

TEST_CASE("DirectorySnapshot: a source without a data file is not found and creates nothing") {
  TempDir source;
  TempDir copy;
  const Status status = copy_directory_snapshot(source.path() / "missing", copy.path());
  CHECK(status.code() == StatusCode::kNotFound);
  CHECK_FALSE(std::filesystem::exists(source.path() / "missing"));
  CHECK(copy_directory_snapshot(source.path(), copy.path()).code() == StatusCode::kNotFound);
  CHECK(std::filesystem::is_empty(source.path()));
}

TEST_CASE("DirectorySnapshot: a destination that holds a data file is refused") {
  TempDir source;
  { open_directory(test_options(source.path())); }
  TempDir copy;
  require_ok(copy_directory_snapshot(source.path(), copy.path()));
  const Status again = copy_directory_snapshot(source.path(), copy.path());
  CHECK(again.code() == StatusCode::kStorage);
}

}  // namespace numadir::backend::testing
