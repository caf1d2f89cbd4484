#include "perf/authrate_report.h"

#include <cstdio>
#include <string_view>

namespace numadir::perf {
namespace {

// Appends printf-style text; the formats here are short.
template <typename... Args>
void append(std::string& out, const char* format, Args... args) {
  char line[256];
  const int n = std::snprintf(line, sizeof line, format, args...);
  if (n > 0) {
    out.append(line, std::min<std::size_t>(static_cast<std::size_t>(n), sizeof line - 1));
  }
}

double ms(std::uint64_t ns) { return static_cast<double>(ns) / 1e6; }

double auths_per_sec(const AuthrateReport& report) {
  return report.duration_s > 0 ? static_cast<double>(report.totals.auths) / report.duration_s : 0;
}

// "auth" or "modification": the noun without its plural s.
std::string singular(std::string_view mode) {
  const std::string plural = operation_noun(mode);
  return plural.substr(0, plural.size() - 1);
}

// A JSON string: `text` quoted, with '"', '\\' and control characters escaped.
std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      append(out, "\\u%04x", static_cast<unsigned>(c));
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

}  // namespace

const char* operation_noun(std::string_view mode) {
  return mode == "modify" ? "modifications" : "auths";
}

std::string format_interval_text(const IntervalLine& line) {
  std::string out;
  append(out, "%7.1f s  %s/s %.0f  overall %.0f  mean %.3f ms  p99 %.3f ms  errors/s %.0f",
         line.elapsed_s, line.noun, line.auths_per_sec, line.overall_auths_per_sec, line.mean_ms,
         line.p99_ms, line.errors_per_sec);
  if (line.wrong_passwords) {
    append(out, "  wrong/s %.0f  refused/s %.0f", line.wrong_per_sec, line.wrong_refused_per_sec);
  }
  if (!line.server_auths_per_sec.empty()) {
    append(out, "  failovers %llu  by server/s", static_cast<unsigned long long>(line.failovers));
    for (const double rate : line.server_auths_per_sec) {
      append(out, " %.0f", rate);
    }
  }
  out += "\n";
  return out;
}

std::string interval_csv_header(bool wrong_passwords, std::size_t servers) {
  std::string out = "elapsed_s,auths_per_sec,overall_auths_per_sec,mean_ms,p99_ms,errors_per_sec";
  if (wrong_passwords) {
    out += ",wrong_per_sec,wrong_refused_per_sec";
  }
  if (servers > 1) {
    out += ",failovers";
    for (std::size_t i = 0; i < servers; ++i) {
      append(out, ",server%zu_per_sec", i);
    }
  }
  out += "\n";
  return out;
}

std::string format_interval_csv(const IntervalLine& line) {
  std::string out;
  append(out, "%.3f,%.1f,%.1f,%.4f,%.4f,%.1f", line.elapsed_s, line.auths_per_sec,
         line.overall_auths_per_sec, line.mean_ms, line.p99_ms, line.errors_per_sec);
  if (line.wrong_passwords) {
    append(out, ",%.1f,%.1f", line.wrong_per_sec, line.wrong_refused_per_sec);
  }
  if (!line.server_auths_per_sec.empty()) {
    append(out, ",%llu", static_cast<unsigned long long>(line.failovers));
    for (const double rate : line.server_auths_per_sec) {
      append(out, ",%.1f", rate);
    }
  }
  out += "\n";
  return out;
}

std::string format_summary_text(const AuthrateReport& report) {
  const AuthTotals& totals = report.totals;
  const LatencyHistogram& latency = totals.latency;
  std::string out;
  append(out, "mode %s, %d connections on %d threads, measured %.1f s\n", report.mode.c_str(),
         report.connections, report.threads, report.duration_s);
  const char* noun = operation_noun(report.mode);
  const std::string per_sec = std::string(noun) + "/s";
  append(out, "%-12s %llu\n", noun, static_cast<unsigned long long>(totals.auths));
  append(out, "%-12s %.1f\n", per_sec.c_str(), auths_per_sec(report));
  if (report.wrong_percent > 0) {
    append(out,
           "wrong pw     %g%% of auths: %llu wrong-password binds answered, %llu refused as "
           "expected (49, counted in %s)\n",
           report.wrong_percent, static_cast<unsigned long long>(totals.wrong_password_binds),
           static_cast<unsigned long long>(totals.wrong_password_refused), noun);
  }
  append(out, "latency ms   p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f  mean %.3f\n",
         ms(latency.value_at_percentile(50)), ms(latency.value_at_percentile(90)),
         ms(latency.value_at_percentile(99)), ms(latency.value_at_percentile(99.9)),
         ms(latency.max()), latency.mean() / 1e6);
  if (report.tls != "none") {
    append(out, "TLS          %s, %llu handshakes", report.tls.c_str(),
           static_cast<unsigned long long>(totals.tls_handshakes));
    if (report.tls_resume) {
      append(out, ", %llu resumed (%.1f%%)", static_cast<unsigned long long>(totals.tls_resumed),
             totals.tls_handshakes == 0 ? 0.0
                                        : 100.0 * static_cast<double>(totals.tls_resumed) /
                                              static_cast<double>(totals.tls_handshakes));
    }
    out += "\n";
  }
  if (report.urls.size() > 1) {
    append(out, "failovers    %llu\n", static_cast<unsigned long long>(totals.failovers));
    for (std::size_t i = 0; i < report.urls.size() && i < kMaxServers; ++i) {
      const bool reached = i >= report.reachable_at_start.size() || report.reachable_at_start[i];
      out += "  " + report.urls[i];
      append(out, "  %s %llu  failovers from %llu%s\n", noun,
             static_cast<unsigned long long>(totals.server_auths[i]),
             static_cast<unsigned long long>(totals.server_failovers[i]),
             reached ? "" : "  (unreachable at start)");
    }
  }
  append(out, "errors       %llu\n", static_cast<unsigned long long>(totals.error_total()));
  for (std::size_t kind = 0; kind < kAuthErrorKinds; ++kind) {
    if (totals.errors[kind] != 0) {
      const std::string_view name = auth_error_name(static_cast<AuthError>(kind));
      append(out, "  %-20.*s %llu\n", static_cast<int>(name.size()), name.data(),
             static_cast<unsigned long long>(totals.errors[kind]));
    }
  }
  for (std::size_t code = 0; code < kResultCodeSlots; ++code) {
    if (totals.result_codes[code] != 0) {
      if (code == kOtherResultCodeSlot) {
        append(out, "  result code other    %llu\n",
               static_cast<unsigned long long>(totals.result_codes[code]));
      } else {
        append(out, "  result code %-8zu %llu\n", code,
               static_cast<unsigned long long>(totals.result_codes[code]));
      }
    }
  }
  if (report.server_cpu_us_per_auth) {
    append(out, "server CPU   %.1f us/%s\n", *report.server_cpu_us_per_auth,
           singular(report.mode).c_str());
  }
  if (report.server_peak_rss_kib) {
    append(out, "server RSS   %llu KiB peak\n",
           static_cast<unsigned long long>(*report.server_peak_rss_kib));
  }
  return out;
}

std::string format_summary_json(const AuthrateReport& report) {
  const AuthTotals& totals = report.totals;
  const LatencyHistogram& latency = totals.latency;
  const char* noun = operation_noun(report.mode);
  std::string out = "{";
  append(out, "\"%s\": %llu, \"%s_per_sec\": %.3f, ", noun,
         static_cast<unsigned long long>(totals.auths), noun, auths_per_sec(report));
  append(out,
         "\"wrong_percent\": %g, \"wrong_password_binds\": %llu, \"wrong_password_refused\": "
         "%llu, ",
         report.wrong_percent, static_cast<unsigned long long>(totals.wrong_password_binds),
         static_cast<unsigned long long>(totals.wrong_password_refused));
  append(out,
         "\"latency_ms\": {\"p50\": %.6f, \"p90\": %.6f, \"p99\": %.6f, \"p999\": %.6f, "
         "\"max\": %.6f, \"mean\": %.6f}, ",
         ms(latency.value_at_percentile(50)), ms(latency.value_at_percentile(90)),
         ms(latency.value_at_percentile(99)), ms(latency.value_at_percentile(99.9)),
         ms(latency.max()), latency.mean() / 1e6);
  append(out, "\"errors\": {\"total\": %llu, \"by_kind\": {",
         static_cast<unsigned long long>(totals.error_total()));
  for (std::size_t kind = 0; kind < kAuthErrorKinds; ++kind) {
    const std::string_view name = auth_error_name(static_cast<AuthError>(kind));
    append(out, "%s\"%.*s\": %llu", kind == 0 ? "" : ", ", static_cast<int>(name.size()),
           name.data(), static_cast<unsigned long long>(totals.errors[kind]));
  }
  out += "}, \"by_code\": {";
  bool first = true;
  for (std::size_t code = 0; code < kResultCodeSlots; ++code) {
    if (totals.result_codes[code] == 0) {
      continue;
    }
    const std::string key = code == kOtherResultCodeSlot ? "other" : std::to_string(code);
    append(out, "%s\"%s\": %llu", first ? "" : ", ", key.c_str(),
           static_cast<unsigned long long>(totals.result_codes[code]));
    first = false;
  }
  out += "}}, ";
  const std::string cpu_key = "server_cpu_us_per_" + singular(report.mode);
  if (report.server_cpu_us_per_auth) {
    append(out, "\"%s\": %.3f, ", cpu_key.c_str(), *report.server_cpu_us_per_auth);
  } else {
    append(out, "\"%s\": null, ", cpu_key.c_str());
  }
  if (report.server_peak_rss_kib) {
    append(out, "\"server_peak_rss_kib\": %llu, ",
           static_cast<unsigned long long>(*report.server_peak_rss_kib));
  } else {
    out += "\"server_peak_rss_kib\": null, ";
  }
  // The mode names are fixed identifiers: no JSON escaping needed.
  if (report.tls == "none") {
    out += "\"tls\": null, ";
  } else {
    append(out,
           "\"tls\": {\"mode\": \"%s\", \"resume\": %s, \"handshakes\": %llu, "
           "\"resumed\": %llu}, ",
           report.tls.c_str(), report.tls_resume ? "true" : "false",
           static_cast<unsigned long long>(totals.tls_handshakes),
           static_cast<unsigned long long>(totals.tls_resumed));
  }
  append(out, "\"failovers\": %llu, \"per_server\": [",
         static_cast<unsigned long long>(totals.failovers));
  for (std::size_t i = 0; i < report.urls.size() && i < kMaxServers; ++i) {
    const bool reached = i >= report.reachable_at_start.size() || report.reachable_at_start[i];
    out += (i == 0 ? "{\"url\": " : ", {\"url\": ") + json_string(report.urls[i]);
    append(out, ", \"%s\": %llu, \"failovers_from\": %llu, \"reachable_at_start\": %s}", noun,
           static_cast<unsigned long long>(totals.server_auths[i]),
           static_cast<unsigned long long>(totals.server_failovers[i]), reached ? "true" : "false");
  }
  out += "], ";
  append(out, "\"connections\": %d, \"threads\": %d, \"duration_s\": %.3f, \"mode\": \"%s\"}\n",
         report.connections, report.threads, report.duration_s, report.mode.c_str());
  return out;
}

}  // namespace numadir::perf
