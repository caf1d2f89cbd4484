// server/formats/detail/config_toml.h: what the parts of the numadir.toml reader share: toml++
// (included here, and only here, with the same settings in every file that reads it), the
// collector of the problems, the typed key readers, and the sections parsed in files of
// their own (config_security.cc: [tls] and [[access]]; config_passwords.cc: [passwords];
// config_replication.cc: [replication]; config_metrics.cc: [metrics]). Private to
// server/formats.
//
// Thread contract: used only while a config is parsed, by the thread parsing it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "server/formats/config_diagnostic.h"

// Without exceptions toml++ reports errors as values (STYLE.md: no exceptions on our side of a
// library call). Debian's shared libtomlplusplus is built with exceptions, so the no-exception
// flavour is compiled from the headers, the same in every file that includes this one.
#define TOML_EXCEPTIONS 0
#define TOML_HEADER_ONLY 1
// toml++'s internal assertions are not checks of its input: one (parse_key's, 3.3) aborts a
// debug build on the header "[=database]", which a release build rejects with a parse error.
// Off in every build, so that debug and sanitizer builds parse as the shipped one does.
#define TOML_ASSERT(expr) static_assert(true)
#include <toml++/toml.h>

namespace numadir::server::detail {

// Parses numadir.toml text as a TOML document (the non-ASCII bytes of comments masked first: see
// config.cc). Returns: the document, or nullopt with `error` set: "non-ASCII character ..." with
//   its line, or toml++'s description with its line and column.
std::optional<toml::table> parse_toml_text(std::string_view text, std::string_view origin,
                                           ConfigDiagnostic& error);

// As parse_toml_text. Errors: kInvalidArgument with the error's ConfigDiagnostic::to_string():
//   "<origin>:<line>: non-ASCII character ..." or "<origin>:<line>:<col>: <toml++'s description>".
Result<toml::table> parse_toml_document(std::string_view text, std::string_view origin);

// Collects every error and warning, each with the origin, the key and the key's line (from
// the file's ConfigKeyLines: the key's own line, else its nearest enclosing key's).
class Problems {
 public:
  Problems(std::string_view origin, const ConfigKeyLines& lines) : origin_(origin), lines_(lines) {}

  void add(std::string_view key, std::string_view problem) { errors_.push_back(at(key, problem)); }
  // A setting that is accepted but cannot take effect (or will fail later): reported, but the
  // config still loads.
  void warn(std::string_view key, std::string_view problem) {
    warnings_.push_back(at(key, problem));
  }
  bool any() const { return !errors_.empty(); }
  std::vector<ConfigDiagnostic>& errors() { return errors_; }
  std::vector<ConfigDiagnostic>& warnings() { return warnings_; }

 private:
  ConfigDiagnostic at(std::string_view key, std::string_view problem) const {
    return ConfigDiagnostic{origin_, config_key_line(lines_, key), 0, std::string(key),
                            std::string(problem)};
  }

  std::string origin_;
  const ConfigKeyLines& lines_;
  std::vector<ConfigDiagnostic> errors_;
  std::vector<ConfigDiagnostic> warnings_;
};

// Returns: the line of every key of `root` (each table, key, array element), by its path as
// Problems names it: "server.listen", "server.listen[1]", "access[0].by[1].who".
ConfigKeyLines collect_key_lines(const toml::table& root);

// Rejects keys of `table` not in `known` (reported as `prefix.key`, or `key` with no prefix).
void check_keys(const toml::table& table, std::string_view prefix,
                std::initializer_list<std::string_view> known, Problems& problems);

// The get_* readers read the optional key `key` of `table`, reported as `prefix.key`.
// Returns: true with `out` set when the key is there with the right type; false when it is
//   absent, or of another type (then added to `problems`, `out` unchanged).

// Reads an optional string key.
bool get_string(const toml::table& table, std::string_view prefix, std::string_view key,
                std::string& out, Problems& problems);

// Reads an optional boolean key.
bool get_bool(const toml::table& table, std::string_view prefix, std::string_view key, bool& out,
              Problems& problems);

// Reads an optional array of strings.
bool get_strings(const toml::table& table, std::string_view prefix, std::string_view key,
                 std::vector<std::string>& out, Problems& problems);

// Returns: the table `key` of `root`; nullptr when absent, or when not a table (then reported).
const toml::table* get_table(const toml::table& root, std::string_view key, Problems& problems);

// Reads an optional non-negative integer key no larger than `max`.
bool get_count(const toml::table& table, std::string_view prefix, std::string_view key,
               std::uint64_t max, std::uint64_t& out, Problems& problems);

}  // namespace numadir::server::detail
