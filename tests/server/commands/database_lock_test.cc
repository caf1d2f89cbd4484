// tests/server/commands/database_lock_test.cc: numadir.lock, one server per database. flock
// locks belong to open file descriptions, so two acquisitions in one process conflict as two
// processes would.
#include "server/commands/database_lock.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "tests/backend/backend_test_util.h"

namespace numadir::server {
namespace {

using backend::testing::TempDir;

std::string file_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string text;
  std::getline(in, text);
  return text;
}

}  // namespace

TEST_CASE("DatabaseLock: a second acquisition is refused naming the holder's pid") {
  TempDir dir;
  Result<DatabaseLock> first = DatabaseLock::acquire(dir.path());
  REQUIRE_MESSAGE(first.ok(), first.status().to_string());
  CHECK(file_text(dir.path() / kDatabaseLockFile) == std::to_string(getpid()));

  Result<DatabaseLock> second = DatabaseLock::acquire(dir.path());
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().code() == StatusCode::kAlreadyExists);
  CHECK(second.status().message() == "database " + dir.path().string() +
                                         " is in use by another numadir serve (pid " +
                                         std::to_string(getpid()) + ")");
  Result<std::optional<pid_t>> holder = database_lock_holder(dir.path());
  REQUIRE(holder.ok());
  REQUIRE(holder->has_value());
  CHECK(**holder == getpid());
}

TEST_CASE("DatabaseLock: released with its owner and then free to take again") {
  TempDir dir;
  {
    Result<DatabaseLock> lock = DatabaseLock::acquire(dir.path());
    REQUIRE(lock.ok());
    DatabaseLock moved = std::move(*lock);  // The moved-from one must not release it.
    lock = Status(StatusCode::kInternal, "dropped");
    CHECK_FALSE(DatabaseLock::acquire(dir.path()).ok());
  }
  Result<std::optional<pid_t>> holder = database_lock_holder(dir.path());
  REQUIRE(holder.ok());
  CHECK_FALSE(holder->has_value());
  CHECK(std::filesystem::exists(dir.path() / kDatabaseLockFile));  // The file stays.
  CHECK(DatabaseLock::acquire(dir.path()).ok());
}

TEST_CASE("DatabaseLock: the holder check creates nothing") {
  TempDir dir;
  Result<std::optional<pid_t>> holder = database_lock_holder(dir.path());
  REQUIRE(holder.ok());
  CHECK_FALSE(holder->has_value());
  CHECK(std::filesystem::is_empty(dir.path()));
}

TEST_CASE("DatabaseLock: a directory that does not exist is an io error naming it") {
  TempDir dir;
  Result<DatabaseLock> lock = DatabaseLock::acquire(dir.path() / "missing");
  REQUIRE_FALSE(lock.ok());
  CHECK(lock.status().code() == StatusCode::kIo);
  CHECK(lock.status().message().find("database " + (dir.path() / "missing").string() +
                                     ": numadir.lock: ") == 0);
}

}  // namespace numadir::server
