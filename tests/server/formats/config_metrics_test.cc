// Tests for the [metrics] table of numadir.toml (server/formats/config_metrics.cc): off by
// default, every key read, the listen address's forms and bad values, and the rules that keep a
// metrics port from being an open door (TLS needs [tls]; a client certificate needs TLS and CAs;
// a token file must hold a token; an address beyond loopback needs TLS and a client check).
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
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

// Lines 5-8.
constexpr const char* kTls = R"([tls]
certificate = "server.crt"
key = "server.key"
ca_file = "ca.crt"
)";

ConfigReport report_of(const std::string& rest, const std::filesystem::path& base = "/etc/nd") {
  return parse_config_report(std::string(kDatabase) + rest, "test.toml", base);
}

std::vector<std::string> lines_of(const std::vector<ConfigDiagnostic>& diagnostics) {
  std::vector<std::string> lines;
  for (const ConfigDiagnostic& diagnostic : diagnostics) {
    lines.push_back(diagnostic.to_string());
  }
  return lines;
}

// A fresh directory holding a token file "token" with `text` and permissions `mode`.
std::filesystem::path token_dir(const std::string& text, mode_t mode) {
  char pattern[] = "/tmp/numadir-metrics-config-XXXXXX";
  const std::filesystem::path dir = mkdtemp(pattern);
  std::ofstream(dir / "token") << text;
  chmod((dir / "token").c_str(), mode);
  return dir;
}

TEST_CASE("Config metrics: off by default with the contract's defaults") {
  const ConfigReport report = report_of("");
  REQUIRE(report.ok());
  const MetricsSettings& metrics = report.config->metrics;
  CHECK_FALSE(metrics.enabled());
  CHECK_FALSE(metrics.tls);
  CHECK_FALSE(metrics.client_certificate);
  CHECK(metrics.bearer_token_file.empty());
  CHECK(metrics.max_connections == 16);
  CHECK(metrics.request_timeout_s == 5);
  SUBCASE("an empty listen is off too") {
    const ConfigReport empty = report_of("[metrics]\nlisten = \"\"\n");
    REQUIRE(empty.ok());
    CHECK_FALSE(empty.config->metrics.enabled());
  }
}

TEST_CASE("Config metrics: every key is read") {
  const std::filesystem::path dir = token_dir("s3cr3t-Token_1\n", 0600);
  const ConfigReport report =
      report_of(std::string(kTls) +
                    "[metrics]\nlisten = \"0.0.0.0:9330\"\ntls = true\nclient_certificate = true\n"
                    "bearer_token_file = \"token\"\nmax_connections = 3\nrequest_timeout = 7\n",
                dir);
  REQUIRE_MESSAGE(report.ok(), lines_of(report.errors));
  CHECK(report.warnings.empty());
  const MetricsSettings& metrics = report.config->metrics;
  CHECK(metrics.enabled());
  CHECK(metrics.listen == "0.0.0.0:9330");
  CHECK(metrics.tls);
  CHECK(metrics.client_certificate);
  CHECK(metrics.bearer_token_file == dir / "token");
  CHECK(metrics.max_connections == 3);
  CHECK(metrics.request_timeout_s == 7);
  std::filesystem::remove_all(dir);
}

TEST_CASE("Config metrics: listen forms") {
  Result<MetricsListen> v4 = parse_metrics_listen("127.0.0.1:9330");
  REQUIRE(v4.ok());
  CHECK(v4->host == "127.0.0.1");
  CHECK(v4->port == 9330);
  CHECK(v4->loopback);
  CHECK_FALSE(v4->ipv6);
  Result<MetricsListen> v6 = parse_metrics_listen("[::1]:1");
  REQUIRE(v6.ok());
  CHECK(v6->host == "::1");
  CHECK(v6->port == 1);
  CHECK(v6->ipv6);
  CHECK(v6->loopback);
  Result<MetricsListen> local = parse_metrics_listen("localhost:65535");
  REQUIRE(local.ok());
  CHECK(local->loopback);
  CHECK(local->port == 65535);
  CHECK(parse_metrics_listen("127.9.8.7:80")->loopback);
  CHECK_FALSE(parse_metrics_listen("10.0.0.1:80")->loopback);
  CHECK_FALSE(parse_metrics_listen("[::]:80")->loopback);
  CHECK_FALSE(parse_metrics_listen("0.0.0.0:80")->loopback);
}

TEST_CASE("Config metrics: bad listen addresses are refused with what is wrong") {
  for (const char* bad : {"9330", "127.0.0.1", "127.0.0.1:", "127.0.0.1:0", "127.0.0.1:65536",
                          "127.0.0.1:93x0", "example.com:9330", "::1:9330", "[::1]9330",
                          "[::1]:", "[127.0.0.1]:9330", "[::1:9330", ":9330", "1.2.3:9330"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_metrics_listen(bad).ok());
  }
  const ConfigReport report = report_of("[metrics]\nlisten = \"example.com:9330\"\n");
  CHECK(lines_of(report.errors) ==
        std::vector<std::string>{"test.toml:6: metrics.listen: \"example.com:9330\": the host "
                                 "must be an IP address or \"localhost\""});
}

TEST_CASE("Config metrics: bad values and unknown keys are reported with their lines") {
  const ConfigReport report = report_of(
      "[metrics]\nlisten = 9330\ntls = \"yes\"\nmax_connections = 0\nrequest_timeout = 0\n"
      "port = 1\nclient_certificate = 1\n");
  CHECK(lines_of(report.errors) ==
        std::vector<std::string>{
            "test.toml:6: metrics.listen: must be a string",
            "test.toml:7: metrics.tls: must be true or false",
            "test.toml:8: metrics.max_connections: must be an integer from 1 to 4096",
            "test.toml:9: metrics.request_timeout: must be an integer from 1 to 3600 (seconds)",
            "test.toml:10: metrics.port: unknown key",
            "test.toml:11: metrics.client_certificate: must be true or false",
        });
}

TEST_CASE("Config metrics: settings without listen are warned about") {
  const ConfigReport report = report_of("[metrics]\ntls = true\n");
  REQUIRE(report.ok());
  CHECK(lines_of(report.warnings) ==
        std::vector<std::string>{"test.toml:6: metrics.tls: ignored: metrics.listen is "
                                 "not set, so there is no metrics endpoint"});
}

TEST_CASE("Config metrics: TLS needs [tls] and a client certificate needs TLS and CAs") {
  SUBCASE("tls without [tls]") {
    const ConfigReport report = report_of("[metrics]\nlisten = \"127.0.0.1:9330\"\ntls = true\n");
    CHECK(lines_of(report.errors) ==
          std::vector<std::string>{
              "test.toml:7: metrics.tls: needs a [tls] section (its certificate and key)"});
  }
  SUBCASE("client_certificate without tls") {
    const ConfigReport report = report_of(std::string(kTls) +
                                          "[metrics]\nlisten = \"127.0.0.1:9330\"\n"
                                          "client_certificate = true\n");
    CHECK(lines_of(report.errors) ==
          std::vector<std::string>{
              "test.toml:11: metrics.client_certificate: needs metrics.tls = true"});
  }
  SUBCASE("client_certificate without a CA") {
    const ConfigReport report = report_of(
        "[tls]\ncertificate = \"s.crt\"\nkey = \"s.key\"\n[metrics]\n"
        "listen = \"127.0.0.1:9330\"\ntls = true\nclient_certificate = true\n");
    REQUIRE(report.errors.size() == 1);
    CHECK(report.errors[0].to_string().starts_with(
        "test.toml:11: metrics.client_certificate: needs tls.ca_file or tls.ca_dir"));
  }
  SUBCASE("both, on loopback") {
    const ConfigReport report = report_of(std::string(kTls) +
                                          "[metrics]\nlisten = \"[::1]:9330\"\ntls = true\n"
                                          "client_certificate = true\n");
    CHECK(report.ok());
  }
}

TEST_CASE("Config metrics: a non-loopback address needs TLS and a client check") {
  const std::string door =
      "\"10.1.2.3:9330\" is not a loopback address: it needs metrics.tls = true and "
      "metrics.client_certificate = true or a metrics.bearer_token_file (a metrics port is never "
      "an open door)";
  const std::filesystem::path dir = token_dir("abc", 0600);
  SUBCASE("plain") {
    const ConfigReport report = report_of("[metrics]\nlisten = \"10.1.2.3:9330\"\n");
    CHECK(lines_of(report.errors) ==
          std::vector<std::string>{"test.toml:6: metrics.listen: " + door});
  }
  SUBCASE("a token without TLS") {
    const ConfigReport report =
        report_of("[metrics]\nlisten = \"10.1.2.3:9330\"\nbearer_token_file = \"token\"\n", dir);
    CHECK(lines_of(report.errors) ==
          std::vector<std::string>{"test.toml:6: metrics.listen: " + door});
  }
  SUBCASE("TLS without a client check") {
    const ConfigReport report =
        report_of(std::string(kTls) + "[metrics]\nlisten = \"10.1.2.3:9330\"\ntls = true\n", dir);
    CHECK(lines_of(report.errors) ==
          std::vector<std::string>{"test.toml:10: metrics.listen: " + door});
  }
  SUBCASE("TLS and a token") {
    const ConfigReport report = report_of(
        std::string(kTls) +
            "[metrics]\nlisten = \"10.1.2.3:9330\"\ntls = true\nbearer_token_file = \"token\"\n",
        dir);
    CHECK_MESSAGE(report.ok(), lines_of(report.errors));
  }
  SUBCASE("loopback without anything") {
    CHECK(report_of("[metrics]\nlisten = \"127.0.0.1:9330\"\n").ok());
    CHECK(report_of("[metrics]\nlisten = \"localhost:9330\"\n").ok());
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("Config metrics: the token file must be readable and hold a token") {
  SUBCASE("missing") {
    const ConfigReport report =
        report_of("[metrics]\nlisten = \"127.0.0.1:9330\"\nbearer_token_file = \"nope\"\n",
                  "/nonexistent-dir");
    REQUIRE(report.errors.size() == 1);
    CHECK(report.errors[0].to_string() ==
          "test.toml:7: metrics.bearer_token_file: /nonexistent-dir/nope: cannot be read (No "
          "such file or directory)");
  }
  SUBCASE("a FIFO or a directory: refused without waiting") {
    const std::filesystem::path dir = token_dir("x", 0600);
    REQUIRE(mkfifo((dir / "fifo").c_str(), 0600) == 0);
    Result<std::string> fifo = read_bearer_token(dir / "fifo");
    REQUIRE_FALSE(fifo.ok());
    CHECK(fifo.status().message() == (dir / "fifo").string() + ": not a regular file");
    CHECK_FALSE(read_bearer_token(dir).ok());
    std::filesystem::remove_all(dir);
  }
  SUBCASE("empty, or only a newline") {
    const std::filesystem::path dir = token_dir("\n", 0600);
    const ConfigReport report =
        report_of("[metrics]\nlisten = \"127.0.0.1:9330\"\nbearer_token_file = \"token\"\n", dir);
    REQUIRE(report.errors.size() == 1);
    CHECK(report.errors[0].message.ends_with(": empty (the file must hold the token)"));
    std::filesystem::remove_all(dir);
  }
  SUBCASE("a space inside") {
    const std::filesystem::path dir = token_dir("two words\n", 0600);
    CHECK_FALSE(
        report_of("[metrics]\nlisten = \"127.0.0.1:9330\"\nbearer_token_file = \"token\"\n", dir)
            .ok());
    std::filesystem::remove_all(dir);
  }
  SUBCASE("readable by others: a warning") {
    const std::filesystem::path dir = token_dir("abc\n", 0644);
    const ConfigReport report =
        report_of("[metrics]\nlisten = \"127.0.0.1:9330\"\nbearer_token_file = \"token\"\n", dir);
    REQUIRE(report.ok());
    CHECK(lines_of(report.warnings) ==
          std::vector<std::string>{
              "test.toml:7: metrics.bearer_token_file: " + (dir / "token").string() +
              " can be read by its group or others: chmod 600 it"});
    Result<std::string> token = read_bearer_token(dir / "token");
    REQUIRE(token.ok());
    CHECK(*token == "abc");
    std::filesystem::remove_all(dir);
  }
}

}  // namespace
}  // namespace numadir::server
