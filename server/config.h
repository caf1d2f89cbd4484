// server/config.h: numadir.toml, the server's configuration, parsed and checked in full before
// anything starts: every mistake (unknown key, wrong type, bad value) is reported with its key.
//
//   [database]
//   path = "/var/lib/numadir"            # directory holding the LMDB environment
//   suffix = "dc=example,dc=com"         # the naming context
//   map_size = "8GiB"                    # LMDB map size (bytes, or with KiB/MiB/GiB/TiB)
//   durability = "sync"                  # "sync" (default) or "nosync" (see README)
//   indexes = ["objectClass eq", "uid eq,pres", "cn eq,sub"]
//
//   [schema]
//   files = ["/etc/numadir/local.schema"]  # loaded after the shipped schema, in order
//
//   [passwords]
//   default_scheme = "SSHA512"           # scheme for passwords numadir hashes
//   allow_cleartext = false              # accept stored cleartext userPassword values
//
// Thread contract: parsed once at startup; immutable afterwards.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "backend/directory.h"
#include "backend/password_scheme.h"
#include "base/status.h"

namespace numadir::server {

struct Config {
  std::filesystem::path source;  // The file it came from (empty for text).
  backend::DirectoryOptions database;
  std::vector<std::filesystem::path> schema_files;
  backend::PasswordScheme default_password_scheme = backend::PasswordScheme::kSsha512;
  bool allow_cleartext_passwords = false;
};

// Parses numadir.toml text. Relative paths are taken relative to `base_dir`.
// Errors: kInvalidArgument with "<origin>: <key>: <problem>" (or "<origin>:<line>:<col>: ..."
//   for TOML syntax) for the first mistake; every key is checked, unknown keys included.
Result<Config> parse_config(std::string_view text, std::string_view origin,
                            const std::filesystem::path& base_dir);

// Reads and parses `path`. Errors: as parse_config; kNotFound / kIo when it cannot be read.
Result<Config> load_config(const std::filesystem::path& path);

// Parses one index spec: "<attribute> <kind>[,<kind>...]" with kinds eq, pres, sub, approx (an
// alias of eq, as in slapd) and ordering (alias "ord"). Errors: kInvalidArgument.
Result<backend::IndexSpec> parse_index_spec(std::string_view text);

// Parses a size: a plain integer (bytes) or a number followed by KiB, MiB, GiB or TiB.
Result<std::uint64_t> parse_size_bytes(std::string_view text);

}  // namespace numadir::server
