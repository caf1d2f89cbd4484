// Tests for the [replication.provider] table of numadir.toml
// (server/formats/config_replication.cc): the defaults, every key read, the session log size handed
// to the directory only when the provider is enabled, each key's bad values refused with its full
// key, and the warnings of settings that cannot do what they seem to.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "server/formats/config.h"

namespace numadir::server {
namespace {

// Lines 1-4 (the first is empty).
constexpr const char* kDatabase = R"(
[database]
path = "db"
suffix = "dc=example,dc=com"
)";

ConfigReport report_of(const std::string& rest) {
  return parse_config_report(std::string(kDatabase) + rest, "test.toml", "/etc/nd");
}

std::vector<std::string> lines_of(const std::vector<ConfigDiagnostic>& diagnostics) {
  std::vector<std::string> lines;
  for (const ConfigDiagnostic& diagnostic : diagnostics) {
    lines.push_back(diagnostic.to_string());
  }
  return lines;
}

// A consumer with only its required keys.
constexpr const char* kConsumer = R"([[replication.consumer]]
rid = 1
provider = "ldap://ldap1:389"
searchbase = "dc=example,dc=com"
binddn = "cn=repl,dc=example,dc=com"
credentials_file = "repl.pw"
)";

TEST_CASE("Config provider: off by default with slapd-like defaults and no session log") {
  const ConfigReport report = report_of("");
  REQUIRE(report.ok());
  const ReplicationProviderSettings& provider = report.config->replication_provider;
  CHECK_FALSE(provider.enabled);
  CHECK(provider.sessionlog == 10000);
  CHECK(provider.queue_changes == 4096);
  CHECK(provider.max_consumers == 64);
  CHECK(report.config->database.session_log_entries == 0);
  CHECK(report.warnings.empty());
}

TEST_CASE("Config provider: enabled alone keeps a session log of the default size") {
  const ConfigReport report = report_of("[replication.provider]\nenabled = true\n");
  REQUIRE(report.ok());
  CHECK(report.config->replication_provider.enabled);
  CHECK(report.config->database.session_log_entries == 10000);
  CHECK(report.warnings.empty());
}

TEST_CASE("Config provider: every key is read") {
  const ConfigReport report = report_of(
      "[replication.provider]\nenabled = true\nsessionlog = 250\nqueue_changes = 17\n"
      "max_consumers = 3\n");
  REQUIRE(report.ok());
  const ReplicationProviderSettings& provider = report.config->replication_provider;
  CHECK(provider.enabled);
  CHECK(provider.sessionlog == 250);
  CHECK(provider.queue_changes == 17);
  CHECK(provider.max_consumers == 3);
  CHECK(report.config->database.session_log_entries == 250);
  CHECK(report.warnings.empty());
  SUBCASE("the largest values") {
    const ConfigReport largest = report_of(
        "[replication.provider]\nenabled = true\nsessionlog = 10000000\n"
        "queue_changes = 1000000\nmax_consumers = 10000\n");
    REQUIRE(largest.ok());
    CHECK(largest.config->database.session_log_entries == 10'000'000);
    CHECK(largest.config->replication_provider.queue_changes == 1'000'000);
    CHECK(largest.config->replication_provider.max_consumers == 10'000);
  }
  SUBCASE("the same table written inline in [replication]") {
    const ConfigReport inline_table =
        report_of("[replication]\nprovider = { enabled = true, sessionlog = 5 }\n");
    REQUIRE(inline_table.ok());
    CHECK(inline_table.config->database.session_log_entries == 5);
  }
}

TEST_CASE("Config provider: every mistake is listed with its line and key") {
  const ConfigReport report = report_of(
      "[replication.provider]\n"  // 5
      "enabled = \"yes\"\n"       // 6
      "sessionlog = 10000001\n"   // 7
      "queue_changes = 0\n"       // 8
      "max_consumers = 10001\n"   // 9
      "colour = \"blue\"\n");     // 10
  CHECK_FALSE(report.ok());
  CHECK(lines_of(report.errors) ==
        std::vector<std::string>{
            "test.toml:6: replication.provider.enabled: must be true or false",
            "test.toml:7: replication.provider.sessionlog: must be an integer from 0 to 10000000",
            "test.toml:8: replication.provider.queue_changes: must be an integer from 1 to "
            "1000000",
            "test.toml:9: replication.provider.max_consumers: must be an integer from 1 to 10000",
            "test.toml:10: replication.provider.colour: unknown key",
        });
  // An `enabled` that is not a boolean is that mistake, not a provider that is off.
  CHECK(report.warnings.empty());
  SUBCASE("wrong types and negative numbers") {
    const ConfigReport types = report_of(
        "[replication.provider]\nenabled = true\nsessionlog = \"10k\"\nqueue_changes = -1\n"
        "max_consumers = 1.5\n");
    CHECK(lines_of(types.errors) ==
          std::vector<std::string>{
              "test.toml:7: replication.provider.sessionlog: must be an integer from 0 to "
              "10000000",
              "test.toml:8: replication.provider.queue_changes: must be an integer from 1 to "
              "1000000",
              "test.toml:9: replication.provider.max_consumers: must be an integer from 1 to "
              "10000",
          });
  }
  SUBCASE("the table itself") {
    CHECK(lines_of(report_of("[replication]\nprovider = true\n").errors) ==
          std::vector<std::string>{
              "test.toml:6: replication.provider: must be a table ([replication.provider])"});
    CHECK(lines_of(report_of("[[replication.provider]]\nenabled = true\n").errors) ==
          std::vector<std::string>{
              "test.toml:5: replication.provider: must be a table ([replication.provider])"});
  }
}

TEST_CASE("Config provider: settings that cannot do what they seem to are warned about") {
  SUBCASE("provider keys while the provider is off") {
    const ConfigReport report = report_of(
        "[replication.provider]\n"  // 5
        "sessionlog = 100\n"        // 6
        "max_consumers = 2\n");     // 7
    REQUIRE(report.ok());
    const std::string why =
        ": ignored: replication.provider.enabled is false (the default), so no sync search is "
        "served";
    CHECK(lines_of(report.warnings) ==
          std::vector<std::string>{"test.toml:6: replication.provider.sessionlog" + why,
                                   "test.toml:7: replication.provider.max_consumers" + why});
    CHECK(report.config->database.session_log_entries == 0);
    const ConfigReport off =
        report_of("[replication.provider]\nenabled = false\nqueue_changes = 9\n");
    REQUIRE(off.ok());
    CHECK(lines_of(off.warnings) ==
          std::vector<std::string>{"test.toml:7: replication.provider.queue_changes" + why});
  }
  SUBCASE("a provider without a session log") {
    const ConfigReport report =
        report_of("[replication.provider]\nenabled = true\nsessionlog = 0\n");
    REQUIRE(report.ok());
    CHECK(report.config->database.session_log_entries == 0);
    CHECK(lines_of(report.warnings) ==
          std::vector<std::string>{
              "test.toml:7: replication.provider.sessionlog: 0: no session log, so every "
              "consumer that reconnects with a cookie gets a present phase (every entry of its "
              "search named again) instead of only what changed"});
  }
  SUBCASE("a cascade with server_id 0") {
    const std::string provider = "[replication.provider]\nenabled = true\n";
    const ConfigReport report = report_of(std::string(kConsumer) + provider);
    REQUIRE(report.ok());
    // No server_id in [database]: the warning is placed at the table (line 2).
    CHECK(lines_of(report.warnings) ==
          std::vector<std::string>{
              "test.toml:2: database.server_id: 0 on a server that is both a replication "
              "consumer and a provider (a cascade): give it a server id of its own (1..4095), "
              "as slapd consumers tell the CSNs of different servers apart by it"});
    // With a server id of its own, or without a consumer, or without the provider: no warning.
    const ConfigReport own = parse_config_report(
        std::string(kDatabase) + "server_id = 2\n" + kConsumer + provider, "test.toml", "/etc/nd");
    REQUIRE(own.ok());
    CHECK(own.warnings.empty());
    CHECK(report_of(provider).warnings.empty());
    CHECK(report_of(kConsumer).warnings.empty());
    // server_id = 0 written out is warned about at its own line.
    const ConfigReport written = parse_config_report(
        std::string(kDatabase) + "server_id = 0\n" + kConsumer + provider, "test.toml", "/etc/nd");
    REQUIRE(written.ok());
    REQUIRE(written.warnings.size() == 1);
    CHECK(written.warnings[0].line == 5);
  }
}

}  // namespace
}  // namespace numadir::server
