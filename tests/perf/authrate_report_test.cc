#include "perf/authrate_report.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>

namespace numadir::perf {
namespace {

AuthrateReport sample_report() {
  WorkerStats stats;
  for (int i = 0; i < 100; ++i) {
    stats.count_auth(100'000 + 1'000 * static_cast<std::uint64_t>(i));
  }
  stats.count_result_code(49);
  stats.count_result_code(49);
  stats.count_result_code(5000);
  stats.count_error(AuthError::kNoEntry);
  AuthrateReport report;
  report.totals.add_live(stats);
  report.duration_s = 2;
  report.connections = 4;
  report.threads = 2;
  report.mode = "same";
  return report;
}

TEST_CASE("AuthTotals: collects a worker's counts and subtracts an earlier total") {
  WorkerStats stats;
  stats.count_auth(1000);
  stats.count_error(AuthError::kConnectionDropped);
  AuthTotals earlier;
  earlier.add_live(stats);
  stats.count_auth(2000);
  stats.count_result_code(32);
  AuthTotals later;
  later.add_live(stats);
  later.subtract(earlier);
  CHECK(later.auths == 1);
  CHECK(later.latency.count() == 1);
  CHECK(later.errors[static_cast<std::size_t>(AuthError::kConnectionDropped)] == 0);
  CHECK(later.errors[static_cast<std::size_t>(AuthError::kLdapResult)] == 1);
  CHECK(later.result_codes[32] == 1);
  CHECK(later.error_total() == 1);
}

TEST_CASE("AuthTotals: counts TLS handshakes and resumed ones over a window") {
  WorkerStats stats;
  stats.count_tls_handshake(/*resumed=*/false);
  AuthTotals earlier;
  earlier.add_live(stats);
  stats.count_tls_handshake(/*resumed=*/true);
  stats.count_tls_handshake(/*resumed=*/true);
  stats.count_tls_handshake(/*resumed=*/false);
  stats.count_error(AuthError::kTlsFailed);
  AuthTotals later;
  later.add_live(stats);
  later.subtract(earlier);
  CHECK(later.tls_handshakes == 3);
  CHECK(later.tls_resumed == 2);
  CHECK(later.errors[static_cast<std::size_t>(AuthError::kTlsFailed)] == 1);
  AuthTotals both = later;
  both.add(earlier);
  CHECK(both.tls_handshakes == 4);
  CHECK(both.tls_resumed == 2);
}

TEST_CASE("AuthTotals: counts wrong-password binds and those refused as expected") {
  WorkerStats stats;
  stats.count_wrong_password_bind();
  stats.count_wrong_password_refused(1000);
  AuthTotals earlier;
  earlier.add_live(stats);
  stats.count_wrong_password_bind();
  stats.count_wrong_password_refused(2000);
  stats.count_wrong_password_bind();
  stats.count_error(AuthError::kWrongPasswordAccepted);
  AuthTotals later;
  later.add_live(stats);
  later.subtract(earlier);
  CHECK(later.wrong_password_binds == 2);
  CHECK(later.wrong_password_refused == 1);
  // A refusal as expected is a completed auth, with its latency; an acceptance an error.
  CHECK(later.auths == 1);
  CHECK(later.latency.count() == 1);
  CHECK(later.error_total() == 1);
  CHECK(auth_error_name(AuthError::kWrongPasswordAccepted) == "wrong_password_accepted");
  AuthTotals both = later;
  both.add(earlier);
  CHECK(both.wrong_password_binds == 3);
  CHECK(both.wrong_password_refused == 2);
}

TEST_CASE("authrate report: wrong-password binds in the summary and the interval lines") {
  AuthrateReport report = sample_report();
  std::string json = format_summary_json(report);
  for (const char* key : {"\"wrong_percent\": 0, ", "\"wrong_password_binds\": 0, ",
                          "\"wrong_password_refused\": 0, ", "\"wrong_password_accepted\": 0"}) {
    CAPTURE(key);
    CHECK(json.find(key) != std::string::npos);
  }
  CHECK(format_summary_text(report).find("wrong") == std::string::npos);

  report.wrong_percent = 10;
  report.totals.wrong_password_binds = 12;
  report.totals.wrong_password_refused = 11;
  json = format_summary_json(report);
  for (const char* key : {"\"wrong_percent\": 10, ", "\"wrong_password_binds\": 12, ",
                          "\"wrong_password_refused\": 11, "}) {
    CAPTURE(key);
    CHECK(json.find(key) != std::string::npos);
  }
  CHECK(format_summary_text(report).find("12 wrong-password binds answered, 11 refused as "
                                         "expected") != std::string::npos);

  IntervalLine line;
  CHECK(format_interval_text(line).find("wrong") == std::string::npos);
  line.wrong_passwords = true;
  line.wrong_per_sec = 310;
  line.wrong_refused_per_sec = 309;
  CHECK(format_interval_text(line).find("errors/s 0  wrong/s 310  refused/s 309\n") !=
        std::string::npos);
  const std::string header = interval_csv_header(/*wrong_passwords=*/true);
  const std::string row = format_interval_csv(line);
  CHECK(header.find(",wrong_per_sec,wrong_refused_per_sec\n") != std::string::npos);
  CHECK(std::count(header.begin(), header.end(), ',') == std::count(row.begin(), row.end(), ','));
  CHECK(row.find(",310.0,309.0\n") != std::string::npos);
}

TEST_CASE("format_summary_json: tls is null in the clear and counts handshakes over TLS") {
  AuthrateReport report = sample_report();
  CHECK(format_summary_json(report).find("\"tls\": null") != std::string::npos);
  CHECK(format_summary_json(report).find("\"tls_failed\": 0") != std::string::npos);
  report.tls = "ldaps";
  report.tls_resume = true;
  report.totals.tls_handshakes = 10;
  report.totals.tls_resumed = 9;
  const std::string json = format_summary_json(report);
  CHECK(json.find("\"tls\": {\"mode\": \"ldaps\", \"resume\": true, \"handshakes\": 10, "
                  "\"resumed\": 9}") != std::string::npos);
  const std::string text = format_summary_text(report);
  CHECK(text.find("TLS          ldaps, 10 handshakes, 9 resumed (90.0%)") != std::string::npos);
  report.tls_resume = false;
  CHECK(format_summary_text(report).find("resumed") == std::string::npos);
}

TEST_CASE("format_summary_json: has every key scripts read") {
  AuthrateReport report = sample_report();
  std::string json = format_summary_json(report);
  for (const char* key :
       {"\"auths\": 100", "\"auths_per_sec\": 50.000", "\"latency_ms\": {\"p50\": ", "\"p90\": ",
        "\"p99\": ", "\"p999\": ", "\"max\": ", "\"mean\": ", "\"errors\": {\"total\": 4",
        "\"ldap_result\": 3", "\"no_entry\": 1", "\"by_code\": {\"49\": 2, \"other\": 1}",
        "\"server_cpu_us_per_auth\": null", "\"server_peak_rss_kib\": null", "\"connections\": 4",
        "\"threads\": 2", "\"duration_s\": 2.000", "\"mode\": \"same\""}) {
    CAPTURE(key);
    CHECK(json.find(key) != std::string::npos);
  }
  CHECK(json.front() == '{');
  CHECK(json.back() == '\n');

  report.server_cpu_us_per_auth = 12.5;
  report.server_peak_rss_kib = 4096;
  json = format_summary_json(report);
  CHECK(json.find("\"server_cpu_us_per_auth\": 12.500") != std::string::npos);
  CHECK(json.find("\"server_peak_rss_kib\": 4096") != std::string::npos);
}

TEST_CASE("format_summary_json: modify mode counts modifications") {
  AuthrateReport report = sample_report();
  report.mode = "modify";
  report.server_cpu_us_per_auth = 80;
  const std::string json = format_summary_json(report);
  for (const char* key : {"\"modifications\": 100", "\"modifications_per_sec\": 50.000",
                          "\"server_cpu_us_per_modification\": 80.000", "\"mode\": \"modify\""}) {
    CAPTURE(key);
    CHECK(json.find(key) != std::string::npos);
  }
  CHECK(json.find("auths") == std::string::npos);
  const std::string text = format_summary_text(report);
  CHECK(text.find("modifications/s 50.0") != std::string::npos);
  CHECK(text.find("us/modification") != std::string::npos);
  IntervalLine line;
  line.noun = operation_noun(report.mode);
  CHECK(format_interval_text(line).find("modifications/s") != std::string::npos);
}

TEST_CASE("format_summary_text: names errors by kind and by code") {
  const std::string text = format_summary_text(sample_report());
  CHECK(text.find("auths        100") != std::string::npos);
  CHECK(text.find("no_entry") != std::string::npos);
  CHECK(text.find("result code 49") != std::string::npos);
  CHECK(text.find("result code other") != std::string::npos);
  CHECK(text.find("server CPU") == std::string::npos);
  CHECK(text.find("TLS") == std::string::npos);
}

TEST_CASE("format_interval_csv: one field per header column") {
  IntervalLine line;
  line.elapsed_s = 1;
  line.auths_per_sec = 1000;
  const std::string header = interval_csv_header();
  const std::string row = format_interval_csv(line);
  CHECK(std::count(header.begin(), header.end(), ',') == std::count(row.begin(), row.end(), ','));
  CHECK(row.back() == '\n');
  CHECK(format_interval_text(line).find("auths/s 1000") != std::string::npos);
}

TEST_CASE("AuthTotals: counts auths and failovers by server over a window") {
  WorkerStats stats;
  stats.count_auth(1000, 0);
  stats.count_failover(0);
  AuthTotals earlier;
  earlier.add_live(stats);
  stats.count_auth(1000, 1);
  stats.count_auth(1000, 1);
  stats.count_wrong_password_refused(1000, 1);
  stats.count_failover(1);
  AuthTotals later;
  later.add_live(stats);
  later.subtract(earlier);
  CHECK(later.auths == 3);
  CHECK(later.server_auths[0] == 0);
  CHECK(later.server_auths[1] == 3);
  CHECK(later.failovers == 1);
  CHECK(later.server_failovers[0] == 0);
  CHECK(later.server_failovers[1] == 1);
  AuthTotals both = later;
  both.add(earlier);
  CHECK(both.server_auths[0] == 1);
  CHECK(both.failovers == 2);
}

TEST_CASE("authrate report: failovers and per-server counts with several URLs") {
  AuthrateReport report = sample_report();
  SUBCASE("one URL: the summary text is as it was and the JSON has one entry") {
    report.urls = {"ldap://127.0.0.1:3389"};
    report.reachable_at_start = {true};
    report.totals.server_auths[0] = 100;
    CHECK(format_summary_text(report).find("failover") == std::string::npos);
    const std::string json = format_summary_json(report);
    CHECK(json.find("\"failovers\": 0, \"per_server\": [{\"url\": \"ldap://127.0.0.1:3389\", "
                    "\"auths\": 100, \"failovers_from\": 0, \"reachable_at_start\": true}], ") !=
          std::string::npos);
  }
  SUBCASE("two URLs, one down at the start") {
    report.urls = {"ldap://a:389", "ldap://b\"q:389"};
    report.reachable_at_start = {true, false};
    report.totals.server_auths[0] = 70;
    report.totals.server_auths[1] = 30;
    report.totals.server_failovers[0] = 3;
    report.totals.failovers = 3;
    const std::string json = format_summary_json(report);
    CHECK(json.find("\"failovers\": 3, \"per_server\": [{\"url\": \"ldap://a:389\", \"auths\": "
                    "70, \"failovers_from\": 3, \"reachable_at_start\": true}, {\"url\": "
                    "\"ldap://b\\\"q:389\", \"auths\": 30, \"failovers_from\": 0, "
                    "\"reachable_at_start\": false}], ") != std::string::npos);
    const std::string text = format_summary_text(report);
    CHECK(text.find("failovers    3\n") != std::string::npos);
    CHECK(text.find("  ldap://a:389  auths 70  failovers from 3\n") != std::string::npos);
    CHECK(text.find("auths 30  failovers from 0  (unreachable at start)\n") != std::string::npos);
    report.mode = "modify";
    CHECK(format_summary_json(report).find("auths") == std::string::npos);
    CHECK(format_summary_json(report).find("\"modifications\": 70, \"failovers_from\"") !=
          std::string::npos);
  }
  SUBCASE("no URL list: an empty per_server") {
    CHECK(format_summary_json(report).find("\"failovers\": 0, \"per_server\": [], ") !=
          std::string::npos);
  }
}

TEST_CASE("authrate report: interval lines end with failovers and auths/s by server") {
  IntervalLine line;
  line.auths_per_sec = 1000;
  const std::string plain = format_interval_text(line);
  CHECK(plain.find("failovers") == std::string::npos);
  line.failovers = 2;
  line.server_auths_per_sec = {600, 400};
  CHECK(format_interval_text(line).find("errors/s 0  failovers 2  by server/s 600 400\n") !=
        std::string::npos);
  const std::string header = interval_csv_header(/*wrong_passwords=*/false, 2);
  const std::string row = format_interval_csv(line);
  CHECK(header.find(",failovers,server0_per_sec,server1_per_sec\n") != std::string::npos);
  CHECK(std::count(header.begin(), header.end(), ',') == std::count(row.begin(), row.end(), ','));
  CHECK(row.find(",2,600.0,400.0\n") != std::string::npos);
  CHECK(interval_csv_header(false, 1) == interval_csv_header());
}

}  // namespace
}  // namespace numadir::perf
