// server/formats/config_diagnostic.h: what a config's checks report (file, line, key, message)
// and where each key of a config file is, below both the config's model (config.h) and its TOML
// helpers (detail/config_toml.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace numadir::server {

// One mistake or warning about a config: where (file, line, key) and what.
struct ConfigDiagnostic {
  std::string file;          // The config file (or another file it names); empty: none.
  std::uint32_t line = 0;    // 1-based; 0: unknown.
  std::uint32_t column = 0;  // 1-based, for TOML syntax errors; 0: unknown.
  std::string key;           // "server.listen[1]"; empty when it concerns no single key.
  std::string message;

  // Returns: "<file>:<line>: <key>: <message>" ("<file>:<line>:<column>: ..." with a column),
  //   leaving out the parts that are unknown, as compilers do, so that editors can jump to the
  //   line; with a `label`, it follows the place: "<file>:<line>: warning: <key>: <message>".
  std::string to_string(std::string_view label = {}) const;
  // Returns: "<file>: <key>: <message>" (without the line).
  std::string without_line() const;
};

// Where each key of a config file is, by the key path Problems names: "server" (the table's
// header), "server.listen", "server.listen[1]", "access[0].by[1].who" -> its 1-based line.
using ConfigKeyLines = std::map<std::string, std::uint32_t, std::less<>>;

// Returns: the line of `key` in `lines`, else that of its nearest enclosing key
//   ("threads.node[1].id" -> "threads.node[1]" -> "threads.node" -> "threads"); 0 when none is
//   there. A message whose first word is a key ("tls.certificate /x: ...") can be passed whole:
//   the key path ends at the first character that cannot be in one.
std::uint32_t config_key_line(const ConfigKeyLines& lines, std::string_view key);

}  // namespace numadir::server
