// server/formats/config.cc: numadir.toml read into a Config (see config.h): the check of the
// raw text, the [database], [schema], [server], [limits], [log] and [threads] sections, and the
// pieces config.h exports (sizes, index specs, the placement). The typed key readers are in
// config_toml.cc; [passwords] in config_passwords.cc; [tls] and [[access]] in
// config_security.cc; [replication] in config_replication.cc.
//
// Thread contract: as config.h; a config is parsed by one thread, once, at startup.
#include "server/formats/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "schema/ascii.h"
#include "schema/dn.h"
#include "server/formats/detail/config.h"
#include "server/formats/detail/config_toml.h"
#include "server/formats/detail/ldif_source.h"
#include "server/operations/password_cost.h"

namespace numadir::server {
namespace {

using detail::check_keys;
using detail::get_bool;
using detail::get_count;
using detail::get_string;
using detail::get_strings;
using detail::get_table;
using detail::Problems;

void parse_database(const toml::table& table, const std::filesystem::path& base_dir, Config& config,
                    Problems& problems) {
  check_keys(table, "database",
             {"path", "suffix", "map_size", "durability", "indexes", "server_id"}, problems);
  backend::DirectoryOptions& db = config.database;
  std::string text;
  if (get_string(table, "database", "path", text, problems)) {
    db.path =
        std::filesystem::path(text).is_absolute() ? std::filesystem::path(text) : base_dir / text;
  } else if (!table.contains("path")) {
    problems.add("database.path", "missing");
  }
  if (get_string(table, "database", "suffix", db.suffix, problems)) {
    auto dn = schema::Dn::parse(db.suffix);
    if (!dn.ok()) {
      problems.add("database.suffix", dn.status().message());
    } else if (dn->is_root()) {
      problems.add("database.suffix", "must not be empty");
    }
  } else if (!table.contains("suffix")) {
    problems.add("database.suffix", "missing");
  }
  if (const toml::node* node = table.get("map_size")) {
    if (const auto* number = node->as_integer()) {
      if (number->get() <= 0) {
        problems.add("database.map_size", "must be positive");
      } else {
        db.map_size_bytes = static_cast<std::uint64_t>(number->get());
      }
    } else if (const auto* size = node->as_string()) {
      auto bytes = parse_size_bytes(size->get());
      if (bytes.ok()) {
        db.map_size_bytes = *bytes;
      } else {
        problems.add("database.map_size", bytes.status().message());
      }
    } else {
      problems.add("database.map_size", "must be a size such as \"8GiB\" or a byte count");
    }
  }
  if (get_string(table, "database", "durability", text, problems)) {
    if (text == "sync") {
      db.durability = backend::Durability::kSync;
    } else if (text == "nosync") {
      db.durability = backend::Durability::kNoSync;
    } else {
      problems.add("database.durability", "must be \"sync\" or \"nosync\"");
    }
  }
  if (std::uint64_t id = 0; get_count(table, "database", "server_id", 4095, id, problems)) {
    db.server_id = static_cast<std::uint32_t>(id);  // 4095: backend::kMaxServerId.
  }
  std::vector<std::string> indexes;
  if (get_strings(table, "database", "indexes", indexes, problems)) {
    for (std::size_t i = 0; i < indexes.size(); ++i) {
      auto parsed = parse_index_spec(indexes[i]);
      if (!parsed.ok()) {
        problems.add("database.indexes[" + std::to_string(i) + "]", parsed.status().message());
        continue;
      }
      db.indexes.push_back(*parsed);
    }
  }
}

// toml++ 3.3 reaches __builtin_unreachable on some non-ASCII code points where it expects
// whitespace (e.g. after a line-ending backslash in a multi-line string), so toml++ never sees
// a byte above 0x7f. numadir.toml is ASCII outside comments (DNs with other characters are
// written with RFC 4514 \XX escapes); comments may hold anything, and the copy handed to toml++
// has those bytes replaced by '?', which keeps every line and column where it was.
// A small TOML lexer finds the comments: '#' outside strings, to the end of the line; strings
// are "...", '...', """...""" and '''...''' (an unterminated one-line string ends at the newline,
// where toml++ reports it).
// Returns: the 1-based line of the first non-ASCII byte outside a comment, or 0; `ascii` gets
// the text with comment bytes above 0x7f replaced.
std::size_t mask_comment_non_ascii(std::string_view text, std::string& ascii) {
  ascii.assign(text);
  enum class In { kCode, kComment, kBasic, kLiteral, kMultiBasic, kMultiLiteral };
  In in = In::kCode;
  std::size_t line = 1;
  const auto starts = [&](std::size_t i, std::string_view what) {
    return text.substr(i, what.size()) == what;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (static_cast<unsigned char>(c) >= 0x80) {
      if (in != In::kComment) {
        return line;
      }
      ascii[i] = '?';
      continue;
    }
    if (c == '\n') {
      ++line;
      if (in == In::kComment || in == In::kBasic || in == In::kLiteral) {
        in = In::kCode;
      }
      continue;
    }
    switch (in) {
      case In::kCode:
        if (c == '#') {
          in = In::kComment;
        } else if (starts(i, "\"\"\"")) {
          in = In::kMultiBasic;
          i += 2;
        } else if (starts(i, "\'\'\'")) {
          in = In::kMultiLiteral;
          i += 2;
        } else if (c == '"') {
          in = In::kBasic;
        } else if (c == '\'') {
          in = In::kLiteral;
        }
        break;
      case In::kComment:
        break;
      case In::kBasic:
      case In::kMultiBasic:
        if (c == '\\') {
          if (i + 1 < text.size() && text[i + 1] != '\n') {
            ++i;  // the escaped character (a non-ASCII one is caught on the next round)
            if (static_cast<unsigned char>(text[i]) >= 0x80) {
              return line;
            }
          }
        } else if (in == In::kBasic && c == '"') {
          in = In::kCode;
        } else if (in == In::kMultiBasic && starts(i, "\"\"\"")) {
          // Up to two more quotes belong to the string's content.
          while (i + 3 < text.size() && text[i + 3] == '"') {
            ++i;
          }
          i += 2;
          in = In::kCode;
        }
        break;
      case In::kLiteral:
        if (c == '\'') {
          in = In::kCode;
        }
        break;
      case In::kMultiLiteral:
        if (starts(i, "\'\'\'")) {
          while (i + 3 < text.size() && text[i + 3] == '\'') {
            ++i;
          }
          i += 2;
          in = In::kCode;
        }
        break;
    }
  }
  return 0;
}

}  // namespace

namespace detail {

std::optional<toml::table> parse_toml_text(std::string_view text, std::string_view origin,
                                           ConfigDiagnostic& error) {
  std::string ascii;
  if (const std::size_t line = mask_comment_non_ascii(text, ascii); line != 0) {
    error = ConfigDiagnostic{std::string(origin), static_cast<std::uint32_t>(line), 0, "",
                             "non-ASCII character (only comments may have them; write DNs "
                             "with \\XX escapes)"};
    return std::nullopt;
  }
  toml::parse_result parsed = toml::parse(ascii, origin);
  if (!parsed) {
    const toml::parse_error& failure = parsed.error();
    error = ConfigDiagnostic{std::string(origin),
                             static_cast<std::uint32_t>(failure.source().begin.line),
                             static_cast<std::uint32_t>(failure.source().begin.column), "",
                             std::string(failure.description())};
    return std::nullopt;
  }
  return std::move(parsed).table();
}

Result<toml::table> parse_toml_document(std::string_view text, std::string_view origin) {
  ConfigDiagnostic error;
  std::optional<toml::table> table = parse_toml_text(text, origin, error);
  if (!table.has_value()) {
    return invalid_argument(error.to_string());
  }
  return std::move(*table);
}

}  // namespace detail

Result<std::uint64_t> parse_size_bytes(std::string_view text) {
  std::uint64_t number = 0;
  const char* end = text.data() + text.size();
  const auto [rest, error] = std::from_chars(text.data(), end, number);
  if (error != std::errc() || rest == text.data()) {
    return invalid_argument("\"" + std::string(text) + "\" is not a size (e.g. \"8GiB\")");
  }
  std::string_view unit(rest, static_cast<std::size_t>(end - rest));
  while (!unit.empty() && unit.front() == ' ') {
    unit.remove_prefix(1);
  }
  const std::string u = schema::ascii_lowered(unit);
  std::uint64_t multiplier = 1;
  if (u.empty() || u == "b") {
    multiplier = 1;
  } else if (u == "kib" || u == "k") {
    multiplier = std::uint64_t{1} << 10;
  } else if (u == "mib" || u == "m") {
    multiplier = std::uint64_t{1} << 20;
  } else if (u == "gib" || u == "g") {
    multiplier = std::uint64_t{1} << 30;
  } else if (u == "tib" || u == "t") {
    multiplier = std::uint64_t{1} << 40;
  } else {
    return invalid_argument("\"" + std::string(text) + "\": unknown unit (use KiB, MiB, GiB, TiB)");
  }
  if (number == 0 || number > UINT64_MAX / multiplier) {
    return invalid_argument("\"" + std::string(text) + "\" is out of range");
  }
  return number * multiplier;
}

Result<backend::IndexSpec> parse_index_spec(std::string_view text) {
  const std::size_t space = text.find(' ');
  if (space == std::string_view::npos || space == 0) {
    return invalid_argument("index \"" + std::string(text) +
                            "\": expected \"<attribute> <kinds>\", e.g. \"uid eq,pres\"");
  }
  backend::IndexSpec spec;
  spec.attribute = std::string(text.substr(0, space));
  std::string_view kinds = text.substr(space + 1);
  while (!kinds.empty()) {
    const std::size_t comma = kinds.find(',');
    std::string_view kind = kinds.substr(0, comma);
    while (!kind.empty() && kind.front() == ' ') {
      kind.remove_prefix(1);
    }
    while (!kind.empty() && kind.back() == ' ') {
      kind.remove_suffix(1);
    }
    if (kind == "eq" || kind == "approx") {
      spec.equality = true;
    } else if (kind == "pres") {
      spec.presence = true;
    } else if (kind == "sub") {
      spec.substrings = true;
    } else if (kind == "ordering" || kind == "ord") {
      spec.ordering = true;
    } else {
      return invalid_argument("index \"" + std::string(text) + "\": unknown kind \"" +
                              std::string(kind) + "\" (eq, pres, sub, approx, ordering)");
    }
    if (comma == std::string_view::npos) {
      break;
    }
    kinds.remove_prefix(comma + 1);
  }
  return spec;
}

namespace {

// `listen_keys` gets the key of each URL kept in config.server.listen.
void parse_server(const toml::table& table, Config& config, std::vector<std::string>& listen_keys,
                  Problems& problems) {
  check_keys(
      table, "server",
      {"listen", "rootdn", "rootpw", "listeners", "workers", "max_connections", "max_pdu_size",
       "max_outstanding_per_connection", "queue_capacity", "allow_unauthenticated_bind", "user",
       "group", "idle_timeout", "ldapi_mode", "ldapi_owner", "ldapi_group"},
      problems);
  ServerSettings& server = config.server;
  std::vector<std::string> urls;
  if (get_strings(table, "server", "listen", urls, problems)) {
    if (urls.empty()) {
      problems.add("server.listen", "needs at least one URL");
    }
    for (std::size_t i = 0; i < urls.size(); ++i) {
      auto url = listener::parse_listen_url(urls[i]);
      if (!url.ok()) {
        problems.add("server.listen[" + std::to_string(i) + "]", url.status().message());
        continue;
      }
      server.listen.push_back(*url);
      listen_keys.push_back("server.listen[" + std::to_string(i) + "]");
    }
  }
  if (get_string(table, "server", "rootdn", server.root_dn, problems)) {
    auto dn = schema::Dn::parse(server.root_dn);
    if (!dn.ok()) {
      problems.add("server.rootdn", dn.status().message());
    }
  }
  if (get_string(table, "server", "rootpw", server.root_password, problems)) {
    if (server.root_dn.empty()) {
      problems.add("server.rootpw", "set without server.rootdn");
    } else if (const Result<backend::PasswordScheme> scheme =
                   backend::stored_password_scheme(server.root_password);
               !scheme.ok()) {
      problems.add("server.rootpw", scheme.status().message());
    } else if (*scheme == backend::PasswordScheme::kCleartext &&
               !config.allow_cleartext_passwords) {
      // Binds check it as they check a userPassword value: cleartext is refused (49).
      problems.warn("server.rootpw",
                    "the rootdn can never bind: rootpw is cleartext and passwords.allow_cleartext "
                    "is off; hash it with `numadir passwd`");
    } else if (const std::optional<backend::CostExcess> excess =
                   backend::password_cost_excess(server.root_password, config.password_limits)) {
      problems.add("server.rootpw", describe_cost_excess(*excess) +
                                        ": binds would refuse it (a cheaper hash, or raise the "
                                        "ceiling)");
    }
  }
  std::uint64_t number = 0;
  if (get_count(table, "server", "listeners", 1024, number, problems)) {
    server.listeners = number;
  }
  if (get_count(table, "server", "workers", 4096, number, problems)) {
    server.workers = number;
  }
  if (get_count(table, "server", "max_connections", 1'000'000, number, problems)) {
    server.max_connections = number;
  }
  if (get_count(table, "server", "max_outstanding_per_connection", 65536, number, problems)) {
    if (number == 0) {
      problems.add("server.max_outstanding_per_connection", "must be at least 1");
    }
    server.max_outstanding_per_connection = static_cast<std::uint32_t>(number);
  }
  if (get_count(table, "server", "queue_capacity", 65000, number, problems)) {
    if (number == 0) {
      problems.add("server.queue_capacity", "must be at least 1");
    }
    server.queue_capacity = number;
  }
  std::string text;
  if (get_string(table, "server", "max_pdu_size", text, problems)) {
    auto bytes = parse_size_bytes(text);
    if (!bytes.ok()) {
      problems.add("server.max_pdu_size", bytes.status().message());
    } else if (*bytes < 1024 || *bytes > (std::uint64_t{1} << 31)) {
      problems.add("server.max_pdu_size", "must be from 1KiB to 2GiB");
    } else {
      server.max_pdu_bytes = *bytes;
    }
  }
  if (get_count(table, "server", "idle_timeout", 86400 * 365, number, problems)) {
    server.idle_timeout_s = static_cast<std::uint32_t>(number);
  }
  get_string(table, "server", "user", server.user, problems);
  get_string(table, "server", "group", server.group, problems);
  if (get_string(table, "server", "ldapi_mode", text, problems)) {
    // Octal, as chmod(1) takes it: "0666", "660".
    unsigned mode = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), mode, 8);
    if (text.empty() || error != std::errc() || end != text.data() + text.size() || mode > 0777) {
      problems.add("server.ldapi_mode", "must be octal permission bits from \"0000\" to \"0777\"");
    } else {
      server.ldapi_mode = mode;
    }
  }
  get_string(table, "server", "ldapi_owner", server.ldapi_owner, problems);
  get_string(table, "server", "ldapi_group", server.ldapi_group, problems);
  get_bool(table, "server", "allow_unauthenticated_bind", server.allow_unauthenticated_bind,
           problems);
}

// The least limits.max_output_bytes: below the listener's 64 KiB write chunks, every response
// would pause.
constexpr std::size_t kMinOutputBytes = 64 * 1024;

void parse_limits(const toml::table& table, Config& config, Problems& problems) {
  check_keys(table, "limits",
             {"size_limit", "size_limit_paged", "time_limit", "max_output_bytes", "write_timeout"},
             problems);
  std::uint64_t number = 0;
  if (get_count(table, "limits", "size_limit", UINT32_MAX, number, problems)) {
    config.server.size_limit = number;
  }
  if (get_count(table, "limits", "size_limit_paged", UINT32_MAX, number, problems)) {
    config.server.size_limit_paged = number;
  }
  if (get_count(table, "limits", "time_limit", UINT32_MAX, number, problems)) {
    config.server.time_limit_s = static_cast<std::uint32_t>(number);
  }
  if (std::string text; get_string(table, "limits", "max_output_bytes", text, problems)) {
    auto bytes = parse_size_bytes(text);
    if (!bytes.ok()) {
      problems.add("limits.max_output_bytes", bytes.status().message());
    } else if (*bytes < kMinOutputBytes) {
      problems.add("limits.max_output_bytes",
                   "must be at least 64KiB (a response is queued whole before the bound applies)");
    } else {
      config.server.max_output_bytes = *bytes;
    }
  }
  if (get_count(table, "limits", "write_timeout", 86400 * 365, number, problems)) {
    config.server.write_timeout_s = static_cast<std::uint32_t>(number);
  }
}

// Most NUMA nodes a [[threads.node]] id may name (Linux's MAX_NUMNODES is at most 1024).
constexpr std::uint64_t kMaxNodeId = 1023;

void parse_threads(const toml::table& table, Config& config, Problems& problems) {
  check_keys(table, "threads", {"dispatcher", "pin", "listener_helps", "node", "topology"},
             problems);
  ThreadSettings& threads = config.threads;
  if (get_string(table, "threads", "dispatcher", threads.dispatcher, problems) &&
      threads.dispatcher != "percpu" && threads.dispatcher != "single") {
    problems.add("threads.dispatcher", "must be \"percpu\" or \"single\"");
  }
  get_bool(table, "threads", "pin", threads.pin, problems);
  get_bool(table, "threads", "listener_helps", threads.listener_helps, problems);
  get_string(table, "threads", "topology", threads.topology, problems);
  const toml::node* nodes = table.get("node");
  if (nodes == nullptr) {
    return;
  }
  const toml::array* array = nodes->as_array();
  if (array == nullptr || !array->is_array_of_tables()) {
    problems.add("threads.node", "must be an array of tables ([[threads.node]])");
    return;
  }
  if (threads.dispatcher == "single" && !array->empty()) {
    problems.add("threads.node", "only with dispatcher = \"percpu\"");
    return;
  }
  for (std::size_t i = 0; i < array->size(); ++i) {
    const toml::table& node = *array->get(i)->as_table();
    const std::string prefix = "threads.node[" + std::to_string(i) + "]";
    check_keys(node, prefix, {"id", "listeners", "workers"}, problems);
    threadpool::NodeThreads settings{0};
    std::uint64_t number = 0;
    if (get_count(node, prefix, "id", kMaxNodeId, number, problems)) {
      settings.node = static_cast<unsigned>(number);
    } else if (!node.contains("id")) {
      problems.add(prefix + ".id", "missing");
    }
    if (get_count(node, prefix, "listeners", 1024, number, problems)) {
      settings.listeners = static_cast<unsigned>(number);
    }
    if (get_count(node, prefix, "workers", threadpool::kMaxThreadsPerNode, number, problems)) {
      settings.workers = static_cast<unsigned>(number);
    }
    for (const threadpool::NodeThreads& earlier : threads.nodes) {
      if (earlier.node == settings.node) {
        problems.add(prefix + ".id", "node " + std::to_string(settings.node) + " is listed twice");
      }
    }
    threads.nodes.push_back(settings);
  }
}

// Settings that parse but cannot take effect given the others: warnings, not errors.
void warn_ineffective(const Config& config, Problems& problems) {
  const ConfigKeyLines& given = config.key_lines;
  if (config.log_level == LogLevel::kOff) {
    for (const char* key : {"log.file", "log.format"}) {
      if (given.contains(key)) {
        problems.warn(key,
                      "ignored: log.level is \"off\" (the default), so no access log is "
                      "written");
      }
    }
  }
  if (config.threads.dispatcher == "single") {
    for (const char* key : {"server.listeners", "threads.pin", "threads.listener_helps"}) {
      if (given.contains(key)) {
        problems.warn(key,
                      "ignored with threads.dispatcher = \"single\" (one listener, one "
                      "unpinned pool)");
      }
    }
  } else if (!config.threads.nodes.empty()) {
    for (const char* key : {"server.listeners", "server.workers"}) {
      if (given.contains(key)) {
        problems.warn(key, "ignored: [[threads.node]] gives each node's listeners and workers");
      }
    }
  }
  if (config.tls.has_value() && given.contains("tls.external_map") &&
      config.tls->client_certificates == listener::ClientCertificates::kNever) {
    problems.warn("tls.external_map",
                  "ignored: tls.verify_client is \"never\" (the default), so no client asks "
                  "with a certificate and SASL EXTERNAL has no subject to map");
  }
}

}  // namespace

ConfigReport parse_config_report(std::string_view text, std::string_view origin,
                                 const std::filesystem::path& base_dir) {
  ConfigReport report;
  ConfigDiagnostic syntax;
  std::optional<toml::table> parsed = detail::parse_toml_text(text, origin, syntax);
  if (!parsed.has_value()) {
    report.errors.push_back(std::move(syntax));
    return report;
  }
  const toml::table& root = *parsed;
  Config config;
  config.key_lines = detail::collect_key_lines(root);
  Problems problems(origin, config.key_lines);
  check_keys(root, "",
             {"database", "schema", "passwords", "server", "limits", "log", "threads", "access",
              "tls", "replication", "sasl", "metrics"},
             problems);

  if (const toml::table* database = get_table(root, "database", problems)) {
    parse_database(*database, base_dir, config, problems);
  } else if (!root.contains("database")) {
    problems.add("database", "missing (path and suffix are required)");
  }
  if (const toml::table* schema = get_table(root, "schema", problems)) {
    check_keys(*schema, "schema", {"files"}, problems);
    std::vector<std::string> files;
    if (get_strings(*schema, "schema", "files", files, problems)) {
      for (const std::string& file : files) {
        const std::filesystem::path path(file);
        config.schema_files.push_back(path.is_absolute() ? path : base_dir / path);
      }
    }
  }
  if (const toml::table* passwords = get_table(root, "passwords", problems)) {
    detail::parse_passwords(*passwords, config, problems);
  }
  // After [passwords]: whether a cleartext rootpw is allowed, and its cost, depend on it.
  std::vector<std::string> listen_keys;
  if (const toml::table* server = get_table(root, "server", problems)) {
    parse_server(*server, config, listen_keys, problems);
  }
  if (const toml::node* access = root.get("access")) {
    detail::parse_access_rules(*access, config, problems);
  }
  if (const toml::table* limits = get_table(root, "limits", problems)) {
    parse_limits(*limits, config, problems);
  }
  if (const toml::table* log = get_table(root, "log", problems)) {
    check_keys(*log, "log", {"level", "file", "format"}, problems);
    std::string text;
    if (get_string(*log, "log", "level", text, problems)) {
      auto level = parse_log_level(text);
      if (level.ok()) {
        config.log_level = *level;
      } else {
        problems.add("log.level", level.status().message());
      }
    }
    if (get_string(*log, "log", "format", text, problems)) {
      auto format = parse_log_format(text);
      if (format.ok()) {
        config.log_format = *format;
      } else {
        problems.add("log.format", format.status().message());
      }
    }
    if (get_string(*log, "log", "file", text, problems)) {
      const std::filesystem::path path(text);
      config.log_file = text == "-" || path.is_absolute() ? path : base_dir / path;
    }
  }
  if (const toml::table* threads = get_table(root, "threads", problems)) {
    parse_threads(*threads, config, problems);
  }
  if (const toml::table* tls = get_table(root, "tls", problems)) {
    detail::parse_tls(*tls, base_dir, config, problems);
  }
  if (const toml::table* metrics = get_table(root, "metrics", problems)) {
    detail::parse_metrics(*metrics, base_dir, config, problems);  // After [tls]: it may use it.
  }
  if (const toml::table* sasl = get_table(root, "sasl", problems)) {
    detail::parse_sasl(*sasl, config, problems);
  }
  if (const toml::table* replication = get_table(root, "replication", problems)) {
    detail::parse_replication(*replication, base_dir, config, problems);
  }
  // A replica finds the provider's entries by entryUUID: its eq index comes with any consumer
  // (here, so that import, index and serve all keep it).
  if (!config.replication_consumers.empty()) {
    auto uuid = std::find_if(config.database.indexes.begin(), config.database.indexes.end(),
                             [](const backend::IndexSpec& index) {
                               return schema::ascii_iequals(index.attribute, "entryUUID");
                             });
    if (uuid == config.database.indexes.end()) {
      config.database.indexes.push_back(backend::IndexSpec{"entryUUID", true, false, false, false});
    } else {
      uuid->equality = true;
    }
  }
  if (config.server.listen.empty() && !config.key_lines.contains("server.listen")) {
    config.server.listen.push_back(listener::ListenUrl{"ldap", "", 389});
    listen_keys.push_back("server.listen");
  }
  for (std::size_t i = 0; i < config.server.listen.size() && i < listen_keys.size(); ++i) {
    const listener::ListenUrl& url = config.server.listen[i];
    if (url.scheme == "ldaps" && !config.tls.has_value()) {
      problems.add(listen_keys[i], url.to_string() + " needs a [tls] section");
    }
  }
  warn_ineffective(config, problems);
  report.errors = std::move(problems.errors());
  report.warnings = std::move(problems.warnings());
  // In the file's order, as a compiler lists them (the sections are read in a fixed order).
  for (std::vector<ConfigDiagnostic>* list : {&report.errors, &report.warnings}) {
    std::stable_sort(
        list->begin(), list->end(),
        [](const ConfigDiagnostic& a, const ConfigDiagnostic& b) { return a.line < b.line; });
  }
  if (report.errors.empty()) {
    report.config = std::move(config);
  }
  return report;
}

Result<Config> parse_config(std::string_view text, std::string_view origin,
                            const std::filesystem::path& base_dir) {
  ConfigReport report = parse_config_report(text, origin, base_dir);
  if (!report.ok()) {
    const ConfigDiagnostic& first = report.errors.front();
    // TOML syntax keeps its line and column; the others are named by key.
    return invalid_argument(first.key.empty() ? first.to_string() : first.without_line());
  }
  return std::move(*report.config);
}

namespace {

// The most bytes a config file may hold: a config, not a disk image.
constexpr std::size_t kMaxConfigBytes = 16 * 1024 * 1024;

// Reads the whole of `path` into `text`. Returns: the error ("<path>: <reason>"), code
// kNotFound or kIo, never by exception (an ifstream on a directory throws from underflow).
Status read_config_file(const std::filesystem::path& path, std::string& text) {
  const std::string name = path.string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int error = errno;
    return Status(error == ENOENT ? StatusCode::kNotFound : StatusCode::kIo,
                  name + ": cannot be read (" + detail::errno_text(error) + ")");
  }
  struct stat info {};
  Status status;
  if (::fstat(fd, &info) != 0) {
    status = Status(StatusCode::kIo, name + ": cannot be read (" + detail::errno_text(errno) + ")");
  } else if (S_ISDIR(info.st_mode)) {
    status = Status(StatusCode::kIo, name + ": is a directory, not a config file");
  } else if (!S_ISREG(info.st_mode)) {
    status = Status(StatusCode::kIo, name + ": not a regular file");
  } else {
    char chunk[8192];
    for (;;) {
      const ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0) {
        status =
            Status(StatusCode::kIo, name + ": cannot be read (" + detail::errno_text(errno) + ")");
        break;
      }
      if (n == 0) {
        break;
      }
      text.append(chunk, static_cast<std::size_t>(n));
      if (text.size() > kMaxConfigBytes) {
        status = Status(StatusCode::kIo, name + ": longer than 16 MiB: not a config file");
        break;
      }
    }
  }
  ::close(fd);
  return status;
}

}  // namespace

ConfigReport load_config_report(const std::filesystem::path& path) {
  std::string text;
  if (const Status read = read_config_file(path, text); !read.ok()) {
    ConfigReport report;
    report.errors.push_back(ConfigDiagnostic{"", 0, 0, "", read.message()});
    return report;
  }
  ConfigReport report = parse_config_report(text, path.string(), path.parent_path());
  if (report.config.has_value()) {
    report.config->source = path;
  }
  return report;
}

Result<Config> load_config(const std::filesystem::path& path) {
  std::string text;
  if (Status read = read_config_file(path, text); !read.ok()) {
    return read;
  }
  ConfigReport report = parse_config_report(text, path.string(), path.parent_path());
  if (!report.ok()) {
    std::string message = report.errors.front().to_string();
    if (report.errors.size() > 1) {
      message += " (and " + std::to_string(report.errors.size() - 1) +
                 " more: numadir check-config lists them all)";
    }
    return invalid_argument(message);
  }
  report.config->source = path;
  return std::move(*report.config);
}

threadpool::PlacementOptions placement_options(const Config& config,
                                               const threadpool::Topology& topology) {
  threadpool::PlacementOptions placement;
  placement.pin = config.threads.pin;
  placement.nodes = config.threads.nodes;
  if (placement.nodes.empty() && (config.server.listeners != 0 || config.server.workers != 0)) {
    for (unsigned node = 0; node < topology.node_count(); ++node) {
      if (!topology.pus_of_node(node).empty()) {
        placement.nodes.push_back({node, static_cast<unsigned>(config.server.listeners),
                                   static_cast<unsigned>(config.server.workers)});
      }
    }
  }
  return placement;
}

}  // namespace numadir::server
