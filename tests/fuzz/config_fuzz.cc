// libFuzzer target for the numadir.toml parser: any input either parses or gives a
// kInvalidArgument naming the file, and never crashes. Parsed [[sasl.external_map]] rules are
// compiled as serve compiles them and map a peercred DN (their $N replacement never reads past
// the match's groups).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "server/formats/config.h"
#include "server/operations/external_map.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = numadir::server::parse_config(text, "fuzz.toml", "/base");
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
