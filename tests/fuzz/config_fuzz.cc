// libFuzzer target for the numadir.toml parser: any input either parses or gives a
// kInvalidArgument naming the file, and never crashes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "server/formats/config.h"

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
  return 0;
}
