// parse_config_report / load_config_report (server/formats/config.h): every mistake of a config,
// each with its file, line and key, the parse going on after each one; warnings for settings
// that cannot take effect; files that cannot be read reported, never thrown.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "server/formats/config.h"
#include "tests/backend/backend_test_util.h"

namespace numadir::server {
namespace {

ConfigReport report_of(const std::string& text) {
  return parse_config_report(text, "test.toml", "/etc/nd");
}

// Returns: each diagnostic's to_string(), in order.
std::vector<std::string> lines_of(const std::vector<ConfigDiagnostic>& diagnostics) {
  std::vector<std::string> lines;
  for (const ConfigDiagnostic& diagnostic : diagnostics) {
    lines.push_back(diagnostic.to_string());
  }
  return lines;
}

TEST_CASE("ConfigReport: three mistakes give three messages with their lines") {
  const ConfigReport report = report_of(
      "[database]\n"                      // 1
      "path = \"db\"\n"                   // 2
      "suffix = \"dc=example,dc=com\"\n"  // 3
      "colour = \"blue\"\n"               // 4: unknown key
      "[server]\n"                        // 5
      "max_connections = \"many\"\n"      // 6: wrong type
      "[limits]\n"                        // 7
      "max_output_bytes = \"1KiB\"\n");   // 8: out of range
  CHECK_FALSE(report.ok());
  CHECK_FALSE(report.config.has_value());
  const std::vector<std::string> expected = {
      "test.toml:4: database.colour: unknown key",
      "test.toml:6: server.max_connections: must be an integer from 0 to 1000000",
      "test.toml:8: limits.max_output_bytes: must be at least 64KiB (a response is queued whole "
      "before the bound applies)",
  };
  CHECK(lines_of(report.errors) == expected);
  CHECK(report.errors[1].line == 6);
  CHECK(report.errors[1].key == "server.max_connections");
}

TEST_CASE("ConfigReport: each bad list element is named by its position and the rest are kept") {
  const ConfigReport report = report_of(
      "[database]\npath = \"db\"\nsuffix = \"dc=x\"\n"
      "indexes = [\"uid eq\",\n"                  // 4
      "           \"cn equality\",\n"             // 5
      "           \"sn\"]\n"                      // 6
      "[server]\n"                                // 7
      "listen = [\"ldap://127.0.0.1:389\",\n"     // 8
      "          \"ftp://x\",\n"                  // 9
      "          \"ldaps://127.0.0.1:636\"]\n");  // 10: no [tls]
  const std::vector<std::string> lines = lines_of(report.errors);
  REQUIRE(lines.size() == 4);
  CHECK(lines[0].starts_with(
      "test.toml:5: database.indexes[1]: index \"cn equality\": unknown kind"));
  CHECK(lines[1].starts_with("test.toml:6: database.indexes[2]: index \"sn\": expected"));
  CHECK(lines[2].starts_with("test.toml:9: server.listen[1]: "));
  CHECK(lines[3] == "test.toml:10: server.listen[2]: ldaps://127.0.0.1:636 needs a [tls] section");
}

TEST_CASE("ConfigReport: a missing key is placed at its table and a missing table has no line") {
  CHECK(lines_of(report_of("\n[database]\nsuffix = \"dc=x\"\n").errors) ==
        std::vector<std::string>{"test.toml:2: database.path: missing"});
  CHECK(lines_of(report_of("[schema]\n").errors) ==
        std::vector<std::string>{"test.toml: database: missing (path and suffix are required)"});
  // A wrong type is that, not also "missing".
  CHECK(lines_of(report_of("[database]\npath = 1\nsuffix = 2\n").errors) ==
        std::vector<std::string>{"test.toml:2: database.path: must be a string",
                                 "test.toml:3: database.suffix: must be a string"});
}

TEST_CASE("ConfigReport: mistakes in [[access]] and [[threads.node]] tables carry their lines") {
  const ConfigReport report = report_of(
      "[database]\npath = \"db\"\nsuffix = \"dc=x\"\n"
      "[[access]]\n"                                      // 4
      "by = [{ who = \"*\", access = \"read\" }]\n"       // 5
      "[[access]]\n"                                      // 6
      "scope = \"base\"\n"                                // 7: without dn
      "by = [{ who = \"nobody\", access = \"read\" }]\n"  // 8: bad subject
      "[[threads.node]]\n"                                // 9: no id
      "workers = 1\n");                                   // 10
  const std::vector<std::string> lines = lines_of(report.errors);
  REQUIRE(lines.size() == 3);
  CHECK(lines[0] == "test.toml:7: access[1].scope: set without dn");
  CHECK(lines[1].starts_with("test.toml:8: access[1].by[0].who: \"nobody\" is not a subject"));
  CHECK(lines[2] == "test.toml:9: threads.node[0].id: missing");
}

TEST_CASE("ConfigReport: a TOML syntax error stops the parse with its line and column") {
  const ConfigReport report = report_of("[database]\npath = \"db\"\nsuffix = = 3\n[server\n");
  REQUIRE(report.errors.size() == 1);
  CHECK(report.errors[0].line == 3);
  CHECK(report.errors[0].column > 0);
  CHECK(report.errors[0].to_string().starts_with(
      "test.toml:3:" + std::to_string(report.errors[0].column) + ": "));
  // Not UTF-8 text, outside a comment.
  const ConfigReport binary = report_of("[database]\n\xff\xfe\x00\x01");
  REQUIRE(binary.errors.size() == 1);
  CHECK(binary.errors[0].to_string().starts_with("test.toml:2: non-ASCII character"));
}

TEST_CASE("ConfigReport: a cleartext rootpw that can never bind is a warning") {
  const std::string base =
      "[database]\npath = \"db\"\nsuffix = \"dc=x\"\n"
      "[server]\nrootdn = \"cn=admin,dc=x\"\n";
  const std::string warning =
      "test.toml:6: server.rootpw: the rootdn can never bind: rootpw is cleartext and "
      "passwords.allow_cleartext is off; hash it with `numadir passwd`";
  SUBCASE("cleartext, allow_cleartext off") {
    const ConfigReport report = report_of(base + "rootpw = \"secret\"\n");
    CHECK(report.ok());
    CHECK(lines_of(report.warnings) == std::vector<std::string>{warning});
  }
  SUBCASE("{CLEARTEXT} is cleartext too") {
    const ConfigReport report = report_of(base + "rootpw = \"{CLEARTEXT}secret\"\n");
    CHECK(report.ok());
    CHECK(lines_of(report.warnings) == std::vector<std::string>{warning});
  }
  SUBCASE("cleartext allowed") {
    const ConfigReport report =
        report_of("[passwords]\nallow_cleartext = true\n" + base + "rootpw = \"secret\"\n");
    CHECK(report.ok());
    CHECK(report.warnings.empty());
  }
  SUBCASE("hashed") {
    const ConfigReport report = report_of(base + "rootpw = \"{SSHA}c2VjcmV0\"\n");
    CHECK(report.ok());
    CHECK(report.warnings.empty());
  }
  SUBCASE("an unknown scheme is an error, as binds could never check it") {
    const ConfigReport report = report_of(base + "rootpw = \"{ROT13}frperg\"\n");
    REQUIRE(report.errors.size() == 1);
    CHECK(report.errors[0].to_string().starts_with("test.toml:6: server.rootpw: "));
  }
}

TEST_CASE("ConfigReport: settings another setting makes ineffective are warned about") {
  const std::string db = "[database]\npath = \"db\"\nsuffix = \"dc=x\"\n";  // Lines 1-3.
  SUBCASE("log.file and log.format without a log level") {
    const ConfigReport report =
        report_of(db + "[log]\nfile = \"/var/log/numadir.log\"\nformat = \"json\"\n");
    REQUIRE(report.ok());
    CHECK(lines_of(report.warnings) ==
          std::vector<std::string>{
              "test.toml:5: log.file: ignored: log.level is \"off\" (the default), so no access "
              "log is written",
              "test.toml:6: log.format: ignored: log.level is \"off\" (the default), so no access "
              "log is written"});
    CHECK(report_of(db + "[log]\nlevel = \"stats\"\nfile = \"/x.log\"\n").warnings.empty());
  }
  SUBCASE("server.listeners and threads.pin with the single dispatcher") {
    const ConfigReport report = report_of(db + "[server]\nlisteners = 2\nworkers = 4\n" +
                                          "[threads]\ndispatcher = \"single\"\npin = false\n");
    REQUIRE(report.ok());
    const std::vector<std::string> lines = lines_of(report.warnings);
    REQUIRE(lines.size() == 2);
    CHECK(lines[0].starts_with("test.toml:5: server.listeners: ignored with threads.dispatcher"));
    CHECK(lines[1].starts_with("test.toml:9: threads.pin: ignored with threads.dispatcher"));
  }
  SUBCASE("server.workers beside [[threads.node]]") {
    const ConfigReport report =
        report_of(db + "[server]\nworkers = 4\n[[threads.node]]\nid = 0\nworkers = 2\n");
    REQUIRE(report.ok());
    CHECK(lines_of(report.warnings) ==
          std::vector<std::string>{"test.toml:5: server.workers: ignored: [[threads.node]] gives "
                                   "each node's listeners and workers"});
    CHECK(report_of(db + "[server]\nworkers = 4\n").warnings.empty());
  }
  SUBCASE("tls.external_map without client certificates") {
    const std::string tls = db + "[tls]\ncertificate = \"s.crt\"\nkey = \"s.key\"\n" +
                            "external_map = \"uid={cn},dc=x\"\n";
    const ConfigReport report = report_of(tls);
    REQUIRE(report.ok());
    REQUIRE(report.warnings.size() == 1);
    CHECK(report.warnings[0].to_string().starts_with(
        "test.toml:7: tls.external_map: ignored: tls.verify_client is \"never\""));
    CHECK(report_of(tls + "verify_client = \"allow\"\n").warnings.empty());
  }
}

TEST_CASE("config_key_line: the key's line or else its nearest enclosing key's") {
  const ConfigKeyLines lines = {
      {"threads", 4}, {"threads.node", 9}, {"threads.node[1]", 12}, {"access[0].by", 7}};
  CHECK(config_key_line(lines, "threads.node[1].id") == 12);
  CHECK(config_key_line(lines, "threads.node[2].id") == 9);
  CHECK(config_key_line(lines, "threads.pin") == 4);
  CHECK(config_key_line(lines, "server.listen") == 0);
  CHECK(config_key_line(lines, "") == 0);
  // A message that begins with its key.
  CHECK(config_key_line(lines, "access[0].by.dn: DN: value invalid") == 7);
  CHECK(config_key_line(lines, "threads.node[1] /x: no such node") == 12);
}

TEST_CASE("load_config_report: a file that cannot be read is one error and never an exception") {
  backend::testing::TempDir dir;
  SUBCASE("a directory") {
    const ConfigReport report = load_config_report(dir.path());
    REQUIRE(report.errors.size() == 1);
    CHECK(report.errors[0].to_string() ==
          dir.path().string() + ": is a directory, not a config file");
    const Result<Config> loaded = load_config(dir.path());
    REQUIRE_FALSE(loaded.ok());
    CHECK(loaded.status().code() == StatusCode::kIo);
  }
  SUBCASE("missing") {
    const std::filesystem::path missing = dir.path() / "numadir.toml";
    const ConfigReport report = load_config_report(missing);
    REQUIRE(report.errors.size() == 1);
    CHECK(report.errors[0].to_string() ==
          missing.string() + ": cannot be read (No such file or directory)");
    CHECK(load_config(missing).status().code() == StatusCode::kNotFound);
  }
  SUBCASE("unreadable") {
    if (geteuid() == 0) {
      MESSAGE("skipped: root reads a mode 000 file (the integration test runs as another user)");
      return;
    }
    const std::filesystem::path locked = dir.path() / "locked.toml";
    std::ofstream(locked) << "[database]\n";
    REQUIRE(::chmod(locked.c_str(), 0) == 0);
    const ConfigReport report = load_config_report(locked);
    REQUIRE(report.errors.size() == 1);
    CHECK(report.errors[0].to_string() == locked.string() + ": cannot be read (Permission denied)");
  }
  SUBCASE("several mistakes: load_config gives the first and counts the others") {
    const std::filesystem::path path = dir.path() / "numadir.toml";
    std::ofstream(path) << "[database]\npath = \"db\"\nsuffix = \"dc=x\"\na = 1\nb = 2\nc = 3\n";
    const Result<Config> loaded = load_config(path);
    REQUIRE_FALSE(loaded.ok());
    CHECK(loaded.status().message() ==
          path.string() +
              ":4: database.a: unknown key (and 2 more: numadir check-config lists them all)");
    CHECK(load_config_report(path).errors.size() == 3);
  }
}

}  // namespace
}  // namespace numadir::server
