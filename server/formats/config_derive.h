// server/formats/config_derive.h: a numadir.toml derived from another one for a private server
// (numadir tune): the same settings with the database path, the listen URLs, the access log and
// optionally the [threads] table replaced, every relative path made absolute (so the derived
// file may live in another directory), comments dropped. What is not replaced is kept as the
// file has it, [[access]], [tls], [passwords] and [limits] included.
//
// Thread contract: plain functions; any thread.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace numadir::server {

struct ConfigDerivation {
  std::filesystem::path database_path;  // The new database.path (made absolute).
  std::vector<std::string> listen;      // The new server.listen URLs; empty: the file's.
  bool log_off = true;                  // log.level = "off" and no log.file.
  // No server.user and server.group: for a process that could not switch to them anyway (one
  // not started as root runs as itself).
  bool drop_identity = false;
  // TOML text whose [threads] table (with its [[threads.node]]) replaces the file's; none: the
  // file's [threads] is kept.
  std::optional<std::string> threads_toml;
};

// Reads the config file `path` and returns the derived file's text. Relative paths of the file
// (schema.files, tls.certificate, tls.key, tls.ca_file, tls.ca_dir, log.file) are taken, as
// load_config takes them, relative to the file's directory. The result is not checked as a
// config: parse it (parse_config, or numadir serve) for that.
// Errors: kNotFound / kIo when `path` cannot be read; kInvalidArgument "<path>:<line>..." when
//   it is not TOML, "<path>: <key>: must be ..." when a table or path key replaced or rewritten
//   has the wrong type, "threads fragment: ..." when threads_toml is not TOML or has no
//   [threads] table.
Result<std::string> derive_config_text(const std::filesystem::path& path,
                                       const ConfigDerivation& derivation);

}  // namespace numadir::server
