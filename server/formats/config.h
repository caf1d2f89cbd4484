// server/formats/config.h: numadir.toml, the server's configuration, parsed and checked in full
// before anything starts: every mistake (unknown key, wrong type, bad value) is reported with its
// key.
//
//   [database]
//   path = "/var/lib/numadir"            # directory holding the LMDB environment
//   suffix = "dc=example,dc=com"         # the naming context
//   map_size = "8GiB"                    # LMDB map size (bytes, or with KiB/MiB/GiB/TiB)
//   durability = "sync"                  # "sync" (default) or "nosync" (docs/configuration.md)
//   indexes = ["objectClass eq", "uid eq,pres", "cn eq,sub"]
//   server_id = 0                        # 0..4095: the server id in every CSN (entryCSN)
//
//   [schema]
//   files = ["/etc/numadir/local.schema"]  # loaded after the shipped schema, in order
//
//   [server]
//   listen = ["ldap://127.0.0.1:389"]     # listen URLs (default ldap://:389, every address)
//   rootdn = "cn=admin,dc=example,dc=com" # the all-powerful identity (optional)
//   rootpw = "{SSHA512}..."              # its password, hashed (numadir passwd)
//   listeners = 1                        # listener threads (0 = auto)
//   workers = 2                          # worker threads (0 = auto: one per CPU)
//   max_connections = 4096
//   max_pdu_size = "4MiB"
//   max_outstanding_per_connection = 64
//   queue_capacity = 4096                # requests waiting for a worker
//   idle_timeout = 0                     # seconds; close connections idle this long (0: never)
//   allow_unauthenticated_bind = false   # RFC 4513 5.1.2: a DN with an empty password
//   user = "numadir"                     # drop to this user (and group) after binding ports
//   group = "numadir"                    # (both optional; only when started as root)
//   ldapi_mode = "0666"                  # ldapi:// socket files' permissions (octal)
//   ldapi_owner = "numadir"              # their owner and group (names or numbers; default:
//   ldapi_group = "numadir"              # the starting user's), set before listening
//
//   [limits]
//   size_limit = 500                     # entries per search for anonymous and users (0 = none)
//   size_limit_paged = 0                 # a paged search over all its pages (default: size_limit)
//   time_limit = 3600                    # seconds per search (0 = none); rootdn: unlimited
//   max_output_bytes = "1MiB"            # responses queued per connection before it pauses
//   write_timeout = 60                   # seconds a client may read nothing (0 = no limit)
//
//   [passwords]
//   default_scheme = "SSHA512"           # scheme for passwords numadir hashes
//   allow_cleartext = false              # accept stored cleartext userPassword values
//   max_pbkdf2_iterations = 30000        # ceilings on what a stored value may cost to check:
//   max_argon2_memory_kib = 65536        # a value over one is refused on write (19) and at
//   max_argon2_iterations = 4            # bind (49, without hashing it); see docs/passwords.md
//   max_argon2_parallelism = 4
//   max_sha_crypt_rounds = 10000
//   max_bcrypt_cost = 6
//   policy = false                       # enforce the password policy (pwdPolicy entries)
//   default_policy = "cn=default,ou=policies,dc=example,dc=com"  # implies policy = true
//   use_lockout = false                  # tell a locked account's binds accountLocked
//   failure_flush_ms = 100               # failed binds are written at most this late
//   clear_flush_ms = 10000               # a success clearing failures is written this late
//
//   [log]
//   level = "off"                        # access log: "off", "stats" or "debug"
//   file = "/var/log/numadir/access.log" # "-" (default): standard error; reopened on SIGHUP
//
//   [[access]]                           # ordered access rules
//   (server/operations/access_control.h); dn = "ou=people,dc=example,dc=com"   # target: entries
//   at/below this DN (default: all) scope = "subtree"                    # base, one, subtree
//   (default) or children filter = "(objectClass=person)"      # target: entries matching this
//   filter attrs = ["userPassword"]             # target: these types, "entry", "children"
//   (default: all) by = [{ who = "self", access = "=wx" },           # who: *, anonymous, users,
//   self, rootdn
//         { dn = "cn=admin,dc=example,dc=com", access = "write" },  # (+ scope, default base)
//         { group = "cn=admins,dc=example,dc=com", access = "write" },
//         { who = "*", access = "auth" }]  # none disclose auth compare search read write, =wrscxd
//   (none: the default policy; with rules, anything no rule grants is denied)
//
//   [tls]                                # ldaps:// URLs and StartTLS
//   certificate = "server.crt"           # PEM: the server certificate, then its chain
//   key = "server.key"                   # PEM private key
//   ca_file = "ca.crt"                   # CAs for client certificates (or ca_dir: hashed dir)
//   min_version = "1.2"                  # "1.2" or "1.3"
//   ciphers = ""                         # TLS 1.2 cipher list (empty: OpenSSL's default)
//   ciphersuites = ""                    # TLS 1.3 suites (empty: OpenSSL's default)
//   verify_client = "never"              # never | allow | demand (client certificates)
//   external_map = "{subject}"           # SASL EXTERNAL identity: the subject DN, or a
//                                        # template like "uid={cn},ou=people,dc=example,dc=com"
//   handshake_timeout = 10               # seconds to finish the TLS handshake
//   simple_bind_requires_tls = false     # true: simple binds without TLS get 13
//
//   [[sasl.external_map]]                # SASL EXTERNAL (certificate or ldapi:// peer
//   match = "^gidNumber=0\\+uidNumber=0,cn=peercred,cn=external,cn=auth$"  # credentials): a
//   dn = "cn=admin,dc=example,dc=com"    # POSIX ERE (case-insensitive) and its replacement
//                                        # ($1..$9); first match wins; none: the DN itself
//
//   [threads]
//   dispatcher = "percpu"                # per-NUMA-node listeners and pinned worker pools, or
//                                        # "single": one listener, one mutex+condvar queue,
//                                        # one unpinned pool (the classic design)
//   pin = true                           # pin each thread to its PU (percpu only)
//   listener_helps = true                # a listener with nothing to read runs a queued
//                                        # search / compare / bind itself (percpu only)
//   [[threads.node]]                     # per NUMA node (logical index); none: every node,
//   id = 0                               # auto counts (threadpool/placement.h has the rules)
//   listeners = 1                        # 0 = auto
//   workers = 2                          # 0 = auto
//
//   [[replication.consumer]]             # a provider to replicate from (RFC 4533): the keys
//   rid = 1                              # of slapd's syncrepl; replication_consumer_config.h
//   provider = "ldap://ldap1.example.com"
//   searchbase = "dc=example,dc=com"
//   binddn = "cn=replicator,dc=example,dc=com"
//   credentials_file = "replicator.pw"
//
//   [replication.provider]               # serve RFC 4533 sync searches (syncprov) to replicas
//   enabled = false                      # false (default): a Sync Request control is refused
//                                        # (unavailableCriticalExtension when critical)
//   sessionlog = 10000                   # changes kept in the session log (0..10000000; 0: none,
//                                        # every reconnecting consumer gets a present phase)
//   queue_changes = 4096                 # per persistent consumer (1..1000000): changes waiting
//                                        # to be sent; past it the consumer is ended (busy) and
//                                        # resumes by its cookie
//   max_consumers = 64                   # sync searches served at once (1..10000); more: busy
//
//   [metrics]                            # the Prometheus / OpenMetrics endpoint (GET /metrics)
//   listen = "127.0.0.1:9330"            # host:port or "[::1]:9330"; absent or "": off (default)
//   tls = false                          # true: HTTPS with [tls] certificate and key
//   client_certificate = false           # true (with tls): a client certificate verified
//                                        # against tls.ca_file / tls.ca_dir is required
//   bearer_token_file = ""               # a file holding a token: every request then needs
//                                        # "Authorization: Bearer <token>" (else 401)
//   max_connections = 16                 # scrapers at once (1..4096); more are closed at accept
//   request_timeout = 5                  # seconds (1..3600) for a request's headers to arrive
//                                        # and for its answer to be taken
//   (an address beyond loopback needs tls = true and client_certificate or bearer_token_file:
//   a metrics port is never an open door)
//
// Every mistake is reported, not only the first: parse_config_report / load_config_report give
// each error and warning with its file, line and key ("numadir.toml:12: server.listen[1]: ...");
// a TOML syntax error stops the parse (toml++ gives only the first, with its line).
//
// Thread contract: parsed once at startup; immutable afterwards.
#pragma once

#include "listener/listen_url.h"
#include "listener/tls.h"
#include "server/formats/replication_consumer_config.h"
#include "server/monitoring/access_log.h"
#include "server/operations/access_control.h"
#include "server/operations/external_map.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/directory.h"
#include "backend/password_scheme.h"
#include "base/status.h"
#include "server/formats/config_diagnostic.h"
#include "threadpool/placement.h"
#include "threadpool/topology.h"

namespace numadir::server {

struct ServerSettings {
  std::vector<listener::ListenUrl> listen;  // Default: ldap://:389.
  std::string root_dn;
  std::string root_password;
  std::size_t listeners = 0;  // 0 = auto.
  std::size_t workers = 0;    // 0 = auto.
  std::size_t max_connections = 4096;
  std::size_t max_pdu_bytes = 4 * 1024 * 1024;
  std::uint32_t max_outstanding_per_connection = 64;
  std::size_t queue_capacity = 4096;
  std::uint32_t idle_timeout_s = 0;  // 0: never.
  bool allow_unauthenticated_bind = false;
  std::string user;   // Empty: keep the starting user.
  std::string group;  // Empty: the user's primary group (or keep the starting group).
  // ldapi:// socket files: permission bits, and owner / group (a name or a number; empty:
  // the starting process's), applied before the socket listens.
  std::uint32_t ldapi_mode = 0666;
  std::string ldapi_owner;
  std::string ldapi_group;
  std::uint64_t size_limit = 500;
  // A paged search's entries over all its pages (slapd's size.prtotal); absent: size_limit;
  // 0: no limit (each page is still the page size the client asked for).
  std::optional<std::uint64_t> size_limit_paged;
  std::uint32_t time_limit_s = 3600;
  std::size_t max_output_bytes = 1024 * 1024;
  std::uint32_t write_timeout_s = 60;  // 0: no limit.
};

struct ThreadSettings {
  std::string dispatcher = "percpu";  // "percpu" or "single".
  bool pin = true;
  // percpu: listeners run queued reads before they sleep (listener::ListenerShared::help_pool).
  bool listener_helps = true;
  // An emulated topology to plan and serve on (an hwloc synthetic description such as
  // "numa:2 core:1 pu:1", or an hwloc XML file ending in ".xml"), its PUs mapped onto this
  // machine's; for tests and planning. Empty: this machine's.
  std::string topology;
  // [[threads.node]], in file order, ids distinct. Whether each id exists is known only from
  // the machine's topology: threadpool::plan_placement checks it.
  std::vector<threadpool::NodeThreads> nodes;
};

// [replication.provider]: numadir as an RFC 4533 provider (server/replication/sync_provider.h).
struct ReplicationProviderSettings {
  bool enabled = false;
  // Changes kept in the session log; with enabled it is DirectoryOptions::session_log_entries.
  std::uint64_t sessionlog = 10000;
  // Per persistent consumer: changes queued, waiting to be sent, before it is ended with busy.
  std::uint64_t queue_changes = 4096;
  std::uint32_t max_consumers = 64;  // Sync searches served at once; more are refused with busy.
};

// [metrics]: the Prometheus / OpenMetrics endpoint (server/monitoring/metrics_server.h).
struct MetricsSettings {
  // "host:port" ("[::1]:9330" for IPv6); empty: no endpoint, and nothing on the request path
  // measures for it.
  std::string listen;
  bool tls = false;                         // HTTPS with [tls] certificate and key.
  bool client_certificate = false;          // With tls: a verified client certificate is required.
  std::filesystem::path bearer_token_file;  // Non-empty: "Authorization: Bearer <token>" needed.
  std::uint32_t max_connections = 16;       // Scrapers at once; more are closed at accept.
  std::uint32_t request_timeout_s = 5;      // For a request's headers, and for its answer.

  bool enabled() const { return !listen.empty(); }
};

// [metrics] listen, parsed.
struct MetricsListen {
  std::string host;  // An IP literal (IPv6 without its brackets) or "localhost".
  std::uint16_t port = 0;
  bool ipv6 = false;      // Given in brackets.
  bool loopback = false;  // 127.0.0.0/8, ::1 or "localhost".
};

// Parses "host:port" or "[IPv6]:port"; host an IP literal or "localhost", port 1..65535.
// Errors: kInvalidArgument naming the text and what is wrong.
Result<MetricsListen> parse_metrics_listen(std::string_view text);

// Reads a bearer token file (metrics.bearer_token_file): its text without trailing whitespace.
// Sets `*shared` (when given) to whether its group or others may read it.
// Errors: kIo "<path>: cannot be read (<reason>)" or not a regular file; kInvalidArgument when
//   empty, over 4096 bytes, or holding characters outside RFC 6750's b64token.
Result<std::string> read_bearer_token(const std::filesystem::path& path, bool* shared = nullptr);

struct Config {
  std::filesystem::path source;  // The file it came from (empty for text).
  ConfigKeyLines key_lines;      // Where each key is in the text, for later messages.
  backend::DirectoryOptions database;
  std::vector<std::filesystem::path> schema_files;
  backend::PasswordScheme default_password_scheme = backend::PasswordScheme::kSsha512;
  bool allow_cleartext_passwords = false;
  // [passwords] max_*: what a stored userPassword value may cost to check.
  backend::PasswordCostLimits password_limits;
  // [passwords] policy, default_policy, use_lockout, failure_flush_ms (HandlerOptions).
  bool password_policy = false;
  std::string default_policy_dn;
  bool policy_use_lockout = false;
  std::uint32_t failure_flush_ms = 100;
  std::uint32_t clear_flush_ms = 10'000;
  ServerSettings server;
  LogLevel log_level = LogLevel::kOff;
  std::filesystem::path log_file = "-";
  LogFormat log_format = LogFormat::kText;
  ThreadSettings threads;
  std::vector<AccessRuleSpec> access;        // [[access]], in order; empty: the default policy.
  std::optional<listener::TlsSettings> tls;  // [tls]; none: no ldaps://, no StartTLS.
  std::string external_map = "{subject}";    // SASL EXTERNAL: client certificate subject -> DN.
  bool simple_bind_requires_tls = false;     // RFC 4513 §5.1.3 / slapd `security simple_bind`.
  // [[sasl.external_map]], in file order: both SASL EXTERNAL identities' mapping rules (the
  // regexes are compiled by compile_server_config).
  std::vector<ExternalMapRuleSpec> sasl_external_map;
  // [[replication.consumer]], in file order, rids distinct; `numadir check-config --online`
  // reaches each provider.
  std::vector<ReplicationConsumerConfig> replication_consumers;
  // [replication.provider]. When enabled, database.session_log_entries is its sessionlog (else 0).
  ReplicationProviderSettings replication_provider;
  MetricsSettings metrics;  // [metrics]; off unless listen is set.
};

// What parsing a config found: the config when there is no error, and every error and warning.
struct ConfigReport {
  std::optional<Config> config;  // nullopt when `errors` is not empty.
  std::vector<ConfigDiagnostic> errors;
  std::vector<ConfigDiagnostic> warnings;  // Settings that cannot take effect; they do not fail.

  bool ok() const { return errors.empty(); }
};

// Parses numadir.toml text, going on after each mistake wherever the rest can still be
// checked. Relative paths are taken relative to `base_dir`. Never throws.
ConfigReport parse_config_report(std::string_view text, std::string_view origin,
                                 const std::filesystem::path& base_dir);

// Reads and parses `path`. A file that cannot be read (missing, a directory, no permission: with
// the system's reason) is one error, with no line.
ConfigReport load_config_report(const std::filesystem::path& path);

// Parses numadir.toml text (as parse_config_report; warnings are dropped).
// Errors: kInvalidArgument with the first mistake: "<origin>: <key>: <problem>" (without its
//   line), or "<origin>:<line>:<col>: ..." for TOML syntax.
Result<Config> parse_config(std::string_view text, std::string_view origin,
                            const std::filesystem::path& base_dir);

// Reads and parses `path` (as load_config_report; warnings are dropped), for the commands that
// only need a config that works.
// Errors: kInvalidArgument with the first mistake, "<file>:<line>: <key>: <problem>", followed
//   by "(and N more: numadir check-config lists them all)" when there are more; kNotFound when
//   the file is not there, kIo when it cannot be read ("<file>: <the system's reason>").
Result<Config> load_config(const std::filesystem::path& path);

// Parses one index spec: "<attribute> <kind>[,<kind>...]" with kinds eq, pres, sub, approx (an
// alias of eq, as in slapd) and ordering (alias "ord"). Errors: kInvalidArgument.
Result<backend::IndexSpec> parse_index_spec(std::string_view text);

// Parses a size: a plain integer (bytes) or a number followed by KiB, MiB, GiB or TiB.
Result<std::uint64_t> parse_size_bytes(std::string_view text);

// Returns: what the percpu dispatcher plans its threads from on `topology`: threads.pin, and
// [[threads.node]] when given, else server.listeners / server.workers for every node with an
// allowed PU (none of either: every node, auto). `numadir serve` and `numadir topology` both
// plan from it, so the table the second prints is the placement the first uses.
threadpool::PlacementOptions placement_options(const Config& config,
                                               const threadpool::Topology& topology);

}  // namespace numadir::server
