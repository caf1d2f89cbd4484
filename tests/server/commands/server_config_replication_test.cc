// compile_server_config (server/commands/server_config.h) on [[replication.consumer]] tables:
// the searchbase checked with the schema against the suffix, credentials_file read (its
// newline stripped; unreadable or empty refused; open to group or others a warning), the TLS
// files loaded.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "server/commands/server_config.h"
#include "tests/backend/backend_test_util.h"
#include "tests/listener/tls_test_util.h"

namespace numadir::server {
namespace {

constexpr std::string_view kReplicaDatabase =
    "[database]\npath = \"db\"\nsuffix = \"dc=example,dc=com\"\n";

// A config directory: numadir.toml and the files the consumers name.
class ConfigDir {
 public:
  void write(const std::string& name, const std::string& text,
             std::filesystem::perms mode = std::filesystem::perms::owner_read |
                                           std::filesystem::perms::owner_write) {
    std::ofstream(dir_.path() / name, std::ios::binary) << text;
    std::filesystem::permissions(dir_.path() / name, mode);
  }
  ServerConfigOutcome compile(const std::string& consumers) {
    write("numadir.toml", std::string(kReplicaDatabase) + consumers);
    return compile_server_config(dir_.path() / "numadir.toml");
  }
  std::string path(const std::string& name) const { return (dir_.path() / name).string(); }
  // Returns: "<numadir.toml's path>:<line>: <what>", as a diagnostic's to_string() names it.
  std::string named(int line, const std::string& what) const {
    return path("numadir.toml") + ":" + std::to_string(line) + ": " + what;
  }

 private:
  backend::testing::TempDir dir_;
};

std::string consumer(const std::string& searchbase, const std::string& extra = "") {
  return "[[replication.consumer]]\nrid = 1\nprovider = \"ldap://ldap1\"\nsearchbase = \"" +
         searchbase +
         "\"\nbinddn = \"cn=repl,dc=example,dc=com\"\ncredentials_file = \"repl.pw\"\n" + extra;
}

TEST_CASE("ServerConfig replication: the credentials are read less their newline") {
  ConfigDir dir;
  dir.write("repl.pw", "s3cret \n");
  const ServerConfigOutcome outcome = dir.compile(consumer("ou=People,DC=Example,dc=com"));
  REQUIRE_MESSAGE(outcome.ok(), outcome.errors[0].to_string());
  const ReplicationConsumerConfig& c = outcome.compiled->config.replication_consumers.at(0);
  CHECK(c.credentials == "s3cret ");  // Only the newline is the editor's.
  CHECK(outcome.warnings.empty());
}

TEST_CASE("ServerConfig replication: the searchbase must be the suffix or under it") {
  ConfigDir dir;
  dir.write("repl.pw", "pw");
  CHECK(dir.compile(consumer("dc=example,dc=com")).ok());
  CHECK(dir.compile(consumer("DC=EXAMPLE, DC=COM")).ok());
  ServerConfigOutcome outside = dir.compile(consumer("dc=example,dc=org"));
  REQUIRE(outside.errors.size() == 1);
  CHECK(outside.errors[0].to_string() ==
        dir.named(7,
                  "replication.consumer[0].searchbase: \"dc=example,dc=org\" is not "
                  "database.suffix (dc=example,dc=com) or under it: a replica replicates into "
                  "its own database"));
  ServerConfigOutcome above = dir.compile(consumer("dc=com"));
  REQUIRE(above.errors.size() == 1);
  CHECK(above.errors[0].to_string().find("\"dc=com\" is not database.suffix") != std::string::npos);
  // Parses as a DN, but the schema has no such type.
  ServerConfigOutcome unknown = dir.compile(consumer("noSuchType=x,dc=example,dc=com"));
  REQUIRE(unknown.errors.size() == 1);
  CHECK(
      unknown.errors[0].to_string() ==
      dir.named(7, "replication.consumer[0].searchbase: DN: undefined attribute type noSuchType"));
}

TEST_CASE("ServerConfig replication: a credentials file that cannot serve is an error") {
  ConfigDir dir;
  SUBCASE("missing") {
    const ServerConfigOutcome outcome = dir.compile(consumer("dc=example,dc=com"));
    REQUIRE(outcome.errors.size() == 1);
    CHECK(outcome.errors[0].to_string() ==
          dir.named(9, "replication.consumer[0].credentials_file: " + dir.path("repl.pw") +
                           ": cannot be read (No such file or directory)"));
  }
  SUBCASE("empty but for a newline") {
    dir.write("repl.pw", "\r\n");
    const ServerConfigOutcome outcome = dir.compile(consumer("dc=example,dc=com"));
    REQUIRE(outcome.errors.size() == 1);
    CHECK(outcome.errors[0].to_string() ==
          dir.named(9, "replication.consumer[0].credentials_file: " + dir.path("repl.pw") +
                           " is empty (a simple bind without a password is anonymous)"));
  }
  SUBCASE("a directory") {
    std::filesystem::create_directory(dir.path("repl.pw"));
    const ServerConfigOutcome outcome = dir.compile(consumer("dc=example,dc=com"));
    REQUIRE(outcome.errors.size() == 1);
    CHECK(outcome.errors[0].to_string() ==
          dir.named(9, "replication.consumer[0].credentials_file: " + dir.path("repl.pw") +
                           ": not a regular file"));
  }
  SUBCASE("too long to be a password") {
    dir.write("repl.pw", std::string(5000, 'x'));
    const ServerConfigOutcome outcome = dir.compile(consumer("dc=example,dc=com"));
    REQUIRE(outcome.errors.size() == 1);
    CHECK(outcome.errors[0].to_string().find("longer than 4096 bytes") != std::string::npos);
  }
}

TEST_CASE("ServerConfig replication: a credentials file open to others is a warning") {
  using std::filesystem::perms;
  ConfigDir dir;
  dir.write("repl.pw", "pw\n", perms::owner_read | perms::owner_write | perms::group_read);
  const ServerConfigOutcome outcome = dir.compile(consumer("dc=example,dc=com"));
  REQUIRE(outcome.ok());
  REQUIRE(outcome.warnings.size() == 1);
  CHECK(outcome.warnings[0].to_string() ==
        dir.named(9, "replication.consumer[0].credentials_file: " + dir.path("repl.pw") +
                         " holds the password of replication.consumer[0] (rid 1) and is open to "
                         "group or others (mode 0640): chmod 600 it"));
}

TEST_CASE("ServerConfig replication: the TLS files are loaded as a connection loads them") {
  ConfigDir dir;
  dir.write("repl.pw", "pw");
  listener::testing::Pki pki;
  const std::string tls = "ca_file = \"" + pki.path("ca.crt").string() + "\"\n";
  const std::string ldaps =
      "[[replication.consumer]]\nrid = 1\nprovider = \"ldaps://ldap1\"\n"
      "searchbase = \"dc=example,dc=com\"\nbinddn = \"cn=r\"\n"
      "credentials_file = \"repl.pw\"\n";
  CHECK(dir.compile(ldaps + tls).ok());
  ServerConfigOutcome missing_ca = dir.compile(ldaps + "ca_file = \"nowhere.crt\"\n");
  REQUIRE(missing_ca.errors.size() == 1);
  CHECK(missing_ca.errors[0].to_string().starts_with(
      dir.named(10, "replication.consumer[0].ca_file " + dir.path("nowhere.crt") + ": ")));
  // The server's key is no match for the CA's certificate.
  ServerConfigOutcome mismatch =
      dir.compile(ldaps + tls + "certificate = \"" + pki.path("ca.crt").string() + "\"\nkey = \"" +
                  pki.path("server.key").string() + "\"\n");
  REQUIRE(mismatch.errors.size() == 1);
  CHECK(mismatch.errors[0].to_string() ==
        dir.named(12, "replication.consumer[0].key " + pki.path("server.key").string() +
                          " does not match certificate " + pki.path("ca.crt").string()));
  ServerConfigOutcome bad_certificate =
      dir.compile(ldaps + tls + "certificate = \"" + pki.path("server.key").string() +
                  "\"\nkey = \"" + pki.path("server.key").string() + "\"\n");
  REQUIRE(bad_certificate.errors.size() == 1);
  CHECK(bad_certificate.errors[0].to_string().starts_with(dir.named(
      11, "replication.consumer[0].certificate " + pki.path("server.key").string() + ": ")));
}

}  // namespace
}  // namespace numadir::server
