// server/commands/server_config.h: numadir.toml compiled into what `numadir serve` runs with, by
// compile_server_config, the one function `numadir check-config` and `numadir serve` both call:
// the file parsed (server/formats/config.h), the schema files loaded, and every part that can
// be checked without opening the database, the log or a socket compiled as the server uses
// it: the indexes against the schema, the rootdn and the [[access]] rules with the DN checks
// every operation applies, the [tls] certificate, key and CAs, each [[replication.consumer]]'s
// searchbase (under the suffix), credentials_file (read into its `credentials`) and TLS files,
// the percpu thread plan on this machine's topology, server.user and server.group,
// server.ldapi_owner and ldapi_group, and the [[sasl.external_map]] regexes. So check-config
// accepts exactly what serve starts with, and both report a mistake in the same words; serve then
// uses the compiled parts themselves (the rules are compiled once).
//
// Every mistake is reported, each with the file, line and key (config.h's ConfigDiagnostic),
// and the parts after one are still checked wherever they can be. Warnings do not fail: a config
// file that holds server.rootpw, or a replication credentials_file, that group or others may
// read (mode & 077); a cleartext rootpw while passwords.allow_cleartext is off; settings that
// cannot take effect (config.h's parse: ignored keys; here: an [[access]] rule that an earlier
// one hides).
//
// Thread contract: compiled and reported on the main thread at startup; a ServerConfig is
// immutable afterwards (its TlsContext has its own contract) and outlives the server it feeds.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/attribute_catalog.h"
#include "listener/tls.h"
#include "schema/schema.h"
#include "server/formats/config.h"
#include "server/operations/access_control.h"
#include "server/operations/external_map.h"
#include "threadpool/placement.h"

namespace numadir::server {

struct ServerConfig {
  Config config;
  std::unique_ptr<schema::Schema> schema;  // The shipped schema and config.schema_files.
  // Over `schema`; the access rules' filters use it (it outlives them: declared first).
  std::unique_ptr<backend::AttributeCatalog> catalog;
  // The [[access]] rules compiled against `schema` (the default policy without any). Never null.
  std::unique_ptr<const AccessControl> access;
  std::unique_ptr<listener::TlsContext> tls;  // The [tls] files loaded; nullptr without [tls].
  // The percpu dispatcher's placement on this machine (placement_options); nullopt for
  // threads.dispatcher = "single".
  std::optional<threadpool::PlacementPlan> plan;
  // Whom to run as after binding the ports: server.user's uid (and its primary group) and
  // server.group's gid, resolved; nullopt: keep the starting one.
  std::optional<uid_t> uid;
  std::optional<gid_t> gid;
  // [[sasl.external_map]] compiled (its regexes); nullptr without rules.
  std::unique_ptr<const ExternalMapRules> external_rules;
  // server.ldapi_owner / ldapi_group resolved (a name or a number); nullopt: unchanged.
  std::optional<uid_t> ldapi_uid;
  std::optional<gid_t> ldapi_gid;
};

// What compile_server_config found.
struct ServerConfigOutcome {
  std::unique_ptr<ServerConfig> compiled;  // nullptr when there are errors.
  // Every mistake found, in file order within each part (a file that cannot be read, a TOML
  // syntax error or a schema that does not load stops there; the parts after it are checked
  // independently of one another).
  std::vector<ConfigDiagnostic> errors;
  std::vector<ConfigDiagnostic> warnings;  // Reported either way.

  bool ok() const { return errors.empty(); }
};

// Reads `path` and compiles it (see above). Never throws; every failure is in `errors`.
ServerConfigOutcome compile_server_config(const std::filesystem::path& path);

// Writes `outcome`'s warnings ("<file>:<line>: warning: <key>: <problem>") and errors
// ("<file>:<line>: <key>: <problem>") to `err`, one line each, as compilers do: check-config and
// serve print the same lines for the same file.
void report_server_config(const ServerConfigOutcome& outcome, std::ostream& err);

}  // namespace numadir::server
