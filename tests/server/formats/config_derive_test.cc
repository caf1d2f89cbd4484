// tests/server/formats/config_derive_test.cc: derive_config_text, a config for a private server
// made from a live one.
#include "server/formats/config_derive.h"

#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "server/formats/config.h"
#include "tests/backend/backend_test_util.h"

namespace numadir::server {
namespace {

using backend::testing::TempDir;

constexpr const char* kLive = R"(# A comment with non-ASCII: Müller
[database]
path = "db"
suffix = "o=M\\C3\\BCller,c=de"
indexes = ["objectClass eq", "uid eq"]
durability = "nosync"

[schema]
files = ["local.schema", "/abs/other.schema"]

[server]
listen = ["ldap://:389", "ldap://[::1]:3389"]
workers = 3
max_connections = 77

[log]
level = "stats"
file = "access.log"

[threads]
pin = false
listener_helps = false

[[threads.node]]
id = 0
listeners = 2
workers = 5

[[access]]
attrs = ["userPassword"]
by = [{ who = "self", access = "=wx" }, { who = "*", access = "auth" }]

[[access]]
by = [{ who = "*", access = "read" }]
)";

std::filesystem::path write_live(const TempDir& dir) {
  const std::filesystem::path path = dir.path() / "numadir.toml";
  std::ofstream(path) << kLive;
  return path;
}

Config parse_derived(const std::string& text) {
  Result<Config> config = parse_config(text, "derived.toml", "/elsewhere");
  REQUIRE_MESSAGE(config.ok(), (config.status().to_string() + "\n" + text));
  return std::move(*config);
}

}  // namespace

TEST_CASE("ConfigDerive: database listen and log replaced and the rest kept with absolute paths") {
  TempDir dir;
  const std::filesystem::path live = write_live(dir);
  ConfigDerivation derivation;
  derivation.database_path = dir.path() / "snapshot";
  derivation.listen = {"ldap://127.0.0.1:0"};
  Result<std::string> text = derive_config_text(live, derivation);
  REQUIRE_MESSAGE(text.ok(), text.status().to_string());
  const Config config = parse_derived(*text);
  CHECK(config.database.path == dir.path() / "snapshot");
  CHECK(config.database.suffix == "o=M\\C3\\BCller,c=de");
  CHECK(config.database.indexes.size() == 2);
  CHECK(config.database.durability == backend::Durability::kNoSync);
  REQUIRE(config.server.listen.size() == 1);
  CHECK(config.server.listen[0].to_string() == "ldap://127.0.0.1:0");
  CHECK(config.server.workers == 3);
  CHECK(config.server.max_connections == 77);
  CHECK(config.log_level == LogLevel::kOff);
  REQUIRE(config.schema_files.size() == 2);
  CHECK(config.schema_files[0] == dir.path() / "local.schema");
  CHECK(config.schema_files[1] == "/abs/other.schema");
  CHECK(config.access.size() == 2);
  // [threads] kept without a fragment.
  CHECK_FALSE(config.threads.pin);
  CHECK_FALSE(config.threads.listener_helps);
  REQUIRE(config.threads.nodes.size() == 1);
  CHECK(config.threads.nodes[0].listeners == 2);
  CHECK(config.threads.nodes[0].workers == 5);
}

TEST_CASE("ConfigDerive: a threads fragment replaces the whole threads table") {
  TempDir dir;
  const std::filesystem::path live = write_live(dir);
  ConfigDerivation derivation;
  derivation.database_path = "/tmp/snap";
  derivation.listen = {"ldap://127.0.0.1:0"};
  derivation.threads_toml =
      "[threads]\ndispatcher = \"percpu\"\npin = true\n\n[[threads.node]]\nid = 0\n"
      "listeners = 1\nworkers = 2\n\n[[threads.node]]\nid = 1\nlisteners = 1\nworkers = 3\n";
  Result<std::string> text = derive_config_text(live, derivation);
  REQUIRE_MESSAGE(text.ok(), text.status().to_string());
  const Config config = parse_derived(*text);
  CHECK(config.threads.pin);
  CHECK(config.threads.listener_helps);  // Not in the fragment: the default, not the file's.
  REQUIRE(config.threads.nodes.size() == 2);
  CHECK(config.threads.nodes[1].node == 1);
  CHECK(config.threads.nodes[1].workers == 3);
}

TEST_CASE("ConfigDerive: the identity to switch to is dropped on request") {
  TempDir dir;
  const std::filesystem::path live = dir.path() / "numadir.toml";
  std::ofstream(live) << "[database]\npath = \"db\"\nsuffix = \"dc=example,dc=com\"\n"
                         "[server]\nuser = \"numadir\"\ngroup = \"numadir\"\nworkers = 2\n";
  ConfigDerivation derivation;
  derivation.database_path = "/tmp/snap";
  Result<std::string> kept = derive_config_text(live, derivation);
  REQUIRE(kept.ok());
  CHECK(parse_derived(*kept).server.user == "numadir");
  derivation.drop_identity = true;
  Result<std::string> dropped = derive_config_text(live, derivation);
  REQUIRE(dropped.ok());
  const Config config = parse_derived(*dropped);
  CHECK(config.server.user.empty());
  CHECK(config.server.group.empty());
  CHECK(config.server.workers == 2);
}

TEST_CASE("ConfigDerive: log paths made absolute when the log stays on") {
  TempDir dir;
  const std::filesystem::path live = write_live(dir);
  ConfigDerivation derivation;
  derivation.database_path = "/tmp/snap";
  derivation.log_off = false;
  Result<std::string> text = derive_config_text(live, derivation);
  REQUIRE(text.ok());
  const Config config = parse_derived(*text);
  CHECK(config.server.listen.size() == 2);  // No listen URLs given: the file's.
  CHECK(config.log_level == LogLevel::kStats);
  CHECK(config.log_file == dir.path() / "access.log");
}

TEST_CASE("ConfigDerive: bad input is named") {
  TempDir dir;
  ConfigDerivation derivation;
  derivation.database_path = "/tmp/snap";
  SUBCASE("a missing file") {
    Result<std::string> text = derive_config_text(dir.path() / "none.toml", derivation);
    CHECK(text.status().code() == StatusCode::kNotFound);
  }
  SUBCASE("a file that is not TOML") {
    std::ofstream(dir.path() / "bad.toml") << "[database\n";
    Result<std::string> text = derive_config_text(dir.path() / "bad.toml", derivation);
    REQUIRE_FALSE(text.ok());
    CHECK(text.status().message().find((dir.path() / "bad.toml").string() + ":1:") == 0);
  }
  SUBCASE("a fragment without a threads table") {
    derivation.threads_toml = "[server]\nworkers = 1\n";
    Result<std::string> text = derive_config_text(write_live(dir), derivation);
    REQUIRE_FALSE(text.ok());
    CHECK(text.status().message() == "threads fragment: no [threads] table");
  }
  SUBCASE("a server key that is not a table") {
    derivation.listen = {"ldap://127.0.0.1:0"};
    std::ofstream(dir.path() / "odd.toml") << "server = 3\n";
    Result<std::string> text = derive_config_text(dir.path() / "odd.toml", derivation);
    REQUIRE_FALSE(text.ok());
    CHECK(text.status().message() ==
          (dir.path() / "odd.toml").string() + ": server: must be a table");
  }
}

}  // namespace numadir::server
