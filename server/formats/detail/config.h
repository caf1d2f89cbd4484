// server/formats/detail/config.h: the config's own private header: the parsers of its sections
// that parse_config_report (config.cc) calls, each defined in the config_<topic>.cc that reads
// it, on the TOML helpers of detail/config_toml.h.
#pragma once

#include <filesystem>

#include "server/formats/config.h"
#include "server/formats/detail/config_toml.h"

namespace numadir::server::detail {

// [passwords]: the scheme numadir hashes with, cleartext, and the cost ceilings (each within
// its scheme's own range, and none below what numadir writes with default_scheme).
void parse_passwords(const toml::table& table, Config& config, Problems& problems);

// [tls]: certificate and key (required), CAs for client certificates, protocol and cipher
// policy, the client certificate mode, SASL EXTERNAL's mapping and RFC 4513 options. Relative
// paths are taken from `base_dir`.
void parse_tls(const toml::table& table, const std::filesystem::path& base_dir, Config& config,
               Problems& problems);

// [[access]]: the ordered access rules (server/operations/access_control.h), appended to
// config.access.
void parse_access_rules(const toml::node& node, Config& config, Problems& problems);
// [sasl]: [[sasl.external_map]] rules (their regexes compiled by compile_server_config).
void parse_sasl(const toml::table& table, Config& config, Problems& problems);

// [replication]: its [[replication.consumer]] tables (config_replication.cc), appended to
// config.replication_consumers, and its [replication.provider] table, into
// config.replication_provider (and database.session_log_entries). Relative paths are taken from
// `base_dir`. Requires: [database] parsed (its server_id is checked against a cascade).
void parse_replication(const toml::table& table, const std::filesystem::path& base_dir,
                       Config& config, Problems& problems);

// [metrics]: the endpoint's settings, into config.metrics (config_metrics.cc). Relative paths are
// taken from `base_dir`. Requires: [tls] parsed (metrics.tls needs it).
void parse_metrics(const toml::table& table, const std::filesystem::path& base_dir, Config& config,
                   Problems& problems);

}  // namespace numadir::server::detail
