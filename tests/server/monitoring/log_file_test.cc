#include "server/monitoring/log_file.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include "tests/read_file.h"

namespace numadir::server {
namespace {

using numadir::testing::read_file;

TEST_CASE("LogFile: appended lines reach the file and reopen follows a rotation") {
  std::string pattern = (std::filesystem::temp_directory_path() / "numadir-log-XXXXXX").string();
  REQUIRE(mkdtemp(pattern.data()) != nullptr);
  const std::filesystem::path dir = pattern;
  const std::filesystem::path path = dir / "access.log";
  auto log = LogFile::open(path);
  REQUIRE_MESSAGE(log.ok(), log.status().to_string());
  (*log)->append("first\n");
  (*log)->append("second\n");
  (*log)->flush();
  CHECK(read_file(path) == "first\nsecond\n");
  std::filesystem::rename(path, dir / "access.log.1");  // What logrotate does.
  REQUIRE((*log)->reopen().ok());
  (*log)->append("third\n");
  (*log)->flush();
  CHECK(read_file(dir / "access.log.1") == "first\nsecond\n");
  CHECK(read_file(path) == "third\n");
  CHECK((*log)->dropped() == 0);
  log->reset();
  std::filesystem::remove_all(dir);
}

TEST_CASE("LogFile: a file that cannot be opened is an error naming it") {
  auto log = LogFile::open("/nonexistent-dir-numadir/access.log");
  REQUIRE_FALSE(log.ok());
  CHECK(log.status().message().find("/nonexistent-dir-numadir/access.log") != std::string::npos);
}

}  // namespace
}  // namespace numadir::server
