// libFuzzer target for the numadir.toml parser: any input either parses or gives errors, each
// naming the file with a line inside the text (or none) and a key that config_key_line places
// on that line; parse_config gives the first of them; nothing crashes. Parsed
// [[sasl.external_map]] rules are compiled as serve compiles them and map a peercred DN (their
// $N replacement never reads past the match's groups).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/formats/config.h"
#include "server/operations/external_map.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const numadir::server::ConfigReport report =
      numadir::server::parse_config_report(text, "fuzz.toml", "/base");
  const auto lines = static_cast<std::uint32_t>(std::count(text.begin(), text.end(), '\n') + 1);
  for (const auto* diagnostics : {&report.errors, &report.warnings}) {
    for (const numadir::server::ConfigDiagnostic& diagnostic : *diagnostics) {
      if (diagnostic.file != "fuzz.toml" || diagnostic.line > lines ||
          diagnostic.to_string().rfind("fuzz.toml", 0) != 0) {
        __builtin_trap();
      }
    }
  }
  if (report.config.has_value() != report.errors.empty()) {
    __builtin_trap();
  }
  auto config = numadir::server::parse_config(text, "fuzz.toml", "/base");
  if (config.ok() != report.ok()) {
    __builtin_trap();
  }
  if (!config.ok()) {
    if (config.status().code() != numadir::StatusCode::kInvalidArgument ||
        config.status().message().rfind("fuzz.toml", 0) != 0) {
      __builtin_trap();
    }
    return 0;
  }
  if (config->database.suffix.empty() || config->database.path.empty()) {
    __builtin_trap();  // Both are required.
  }
  for (const auto& [key, line] : config->key_lines) {
    if (line == 0 || line > lines ||
        numadir::server::config_key_line(config->key_lines, key) != line) {
      __builtin_trap();
    }
  }
  for (const auto& rule : config->sasl_external_map) {
    if (rule.match.size() > 64 || rule.match.find('{') != std::string::npos) {
      return 0;  // Bounded repetitions make glibc's regcomp slow: its cost, not ours.
    }
  }
  auto rules = numadir::server::ExternalMapRules::compile(config->sasl_external_map);
  if (rules.ok()) {
    (void)(*rules)->map(numadir::server::peercred_dn(0, 0));
  } else if (rules.status().message().rfind("sasl.external_map[", 0) != 0) {
    __builtin_trap();  // Every refusal names its rule.
  }
  return 0;
}
