// perf/authrate_report.h: what authrate prints: one line per reporting interval (text or CSV)
// and the final summary (text, or one JSON object for scripts).
//
// Thread contract: plain values and functions of their arguments; the reporting thread builds
// and formats them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "perf/auth_stats.h"

namespace numadir::perf {

struct IntervalLine {
  const char* noun = "auths";  // "modifications" in modify mode (operation_noun()).
  double elapsed_s = 0;
  double auths_per_sec = 0;          // In this interval.
  double overall_auths_per_sec = 0;  // Since the start of the run.
  double mean_ms = 0;                // Latency of this interval's auths.
  double p99_ms = 0;
  double errors_per_sec = 0;
  // --wrong-percent: binds made with a wrong password and answered, and of those the ones
  // refused with invalidCredentials as expected (also in auths_per_sec). Shown only when
  // wrong_passwords is set.
  bool wrong_passwords = false;
  double wrong_per_sec = 0;
  double wrong_refused_per_sec = 0;
  // Several servers (-H): the failovers of this interval and each server's auths/s, by its
  // index in the URL list. Empty with one server: the line is as it always was.
  std::uint64_t failovers = 0;
  std::vector<double> server_auths_per_sec;
};

// Returns: "modifications" for mode "modify", else "auths": what the counts count.
const char* operation_noun(std::string_view mode);

// Returns: one line (with its newline), e.g.
//   "    2.0 s  auths/s 31234  overall 30877  mean 0.126 ms  p99 0.410 ms  errors/s 0\n"
//   (with the line's noun in place of "auths"); with wrong_passwords it ends
//   "errors/s 0  wrong/s 3120  refused/s 3120\n"; with several servers, then
//   "  failovers 2  by server/s 15617 15617\n".
std::string format_interval_text(const IntervalLine& line);
// Returns: the CSV header line, and one CSV line, each with its newline; with
//   `wrong_passwords` (line.wrong_passwords) two more columns, wrong_per_sec and
//   wrong_refused_per_sec; with `servers` > 1 (line.server_auths_per_sec's size) then a
//   failovers column and server0_per_sec, server1_per_sec, ...
std::string interval_csv_header(bool wrong_passwords = false, std::size_t servers = 1);
std::string format_interval_csv(const IntervalLine& line);

struct AuthrateReport {
  AuthTotals totals;  // The measured window (after warm-up).
  double duration_s = 0;
  int connections = 0;
  int threads = 0;
  std::string mode;
  double wrong_percent = 0;  // --wrong-percent (totals count those binds).
  std::string tls = "none";  // "none", "ldaps" or "starttls" (totals count the handshakes).
  bool tls_resume = false;
  std::optional<double> server_cpu_us_per_auth;
  std::optional<std::uint64_t> server_peak_rss_kib;
  // The -H URLs in order (totals' server_auths and server_failovers follow it), and which ones
  // the preflight reached. Empty: per_server is an empty list.
  std::vector<std::string> urls;
  std::vector<bool> reachable_at_start;
};

// Returns: the human-readable summary, several lines (modify mode counts modifications where
//   the others count auths); with a wrong_percent, a line of the wrong-password binds and how
//   many were refused as expected; with several URLs, the failovers and a line per server
//   (its auths and the failovers away from it).
std::string format_summary_text(const AuthrateReport& report);
// Returns: one JSON object and a newline, with keys auths, auths_per_sec, wrong_percent,
//   wrong_password_binds, wrong_password_refused (binds made with a wrong password and
//   answered; of them, refused with invalidCredentials as expected, which auths counts too),
//   latency_ms {p50, p90, p99, p999, max, mean}, errors {total, by_kind {<kind>: n},
//   by_code {"<code>": n}},
//   server_cpu_us_per_auth and server_peak_rss_kib (null without --server-pid), connections,
//   threads, duration_s, mode, and tls: null in the clear, else {mode, resume, handshakes,
//   resumed} (mode "mixed" when ldap:// and ldaps:// URLs are mixed); failovers (connections
//   that left a failed server for the next URL) and per_server, one object per URL in -H
//   order: [{url, auths (completed there), failovers_from (failovers away from it),
//   reachable_at_start (the preflight reached it)}]. In modify mode "modifications" stands
//   for "auths" in the first three names and in per_server (modifications,
//   modifications_per_sec, server_cpu_us_per_modification).
std::string format_summary_json(const AuthrateReport& report);

}  // namespace numadir::perf
