// libFuzzer target for the reader of authrate's JSON summary that numadir tune uses
// (server/commands/tune_candidates.h): any input is read or refused as kMalformed naming the
// summary, never crashes, and what is read is what the text says.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/commands/tune_candidates.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto summary = numadir::server::parse_authrate_summary(text);
  if (!summary.ok()) {
    if (summary.status().code() != numadir::StatusCode::kMalformed ||
        summary.status().message().rfind("authrate summary: ", 0) != 0) {
      __builtin_trap();
    }
    return 0;
  }
  // Every field it read is in the text.
  if (text.find("\"auths_per_sec\":") == std::string_view::npos ||
      text.find("\"latency_ms\":") == std::string_view::npos ||
      text.find("\"errors\":") == std::string_view::npos ||
      text.find("\"server_cpu_us_per_auth\":") == std::string_view::npos) {
    __builtin_trap();
  }
  // A summary read twice reads the same.
  auto again = numadir::server::parse_authrate_summary(std::string(text));
  if (!again.ok() || again->errors != summary->errors ||
      again->cpu_us_per_auth.has_value() != summary->cpu_us_per_auth.has_value()) {
    __builtin_trap();
  }
  return 0;
}
