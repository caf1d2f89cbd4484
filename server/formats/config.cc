#include "server/formats/config.h"

#include <charconv>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "schema/ascii.h"
#include "schema/dn.h"
#include "schema/filter.h"

// Only this file uses toml++; without exceptions it reports errors as values (STYLE.md: no
// exceptions on our side of a library call). Debian's shared libtomlplusplus is built with
// exceptions, so the no-exception flavour is compiled here from the headers.
#define TOML_EXCEPTIONS 0
#define TOML_HEADER_ONLY 1
#include <toml++/toml.h>

namespace numadir::server {
namespace {

// Collects the first error, prefixed with the origin and the key.
class Problems {
 public:
  explicit Problems(std::string_view origin) : origin_(origin) {}

  void add(std::string_view key, std::string_view problem) {
    if (first_.empty()) {
      first_ = origin_ + ": " + std::string(key) + ": " + std::string(problem);
    }
  }
  bool any() const { return !first_.empty(); }
  Status status() const { return invalid_argument(first_); }

 private:
  std::string origin_;
  std::string first_;
};

// Rejects keys of `table` not in `known`.
void check_keys(const toml::table& table, std::string_view prefix,
                std::initializer_list<std::string_view> known, Problems& problems) {
  for (const auto& [key, value] : table) {
    bool found = false;
    for (std::string_view k : known) {
      found = found || key.str() == k;
    }
    if (!found) {
      const std::string full =
          prefix.empty() ? std::string(key.str()) : std::string(prefix) + "." + std::string(key);
      problems.add(full, "unknown key");
    }
  }
}

// Reads an optional string key.
bool get_string(const toml::table& table, std::string_view prefix, std::string_view key,
                std::string& out, Problems& problems) {
  const toml::node* node = table.get(key);
  if (node == nullptr) {
    return false;
  }
  if (const auto* value = node->as_string()) {
    out = value->get();
    return true;
  }
  problems.add(std::string(prefix) + "." + std::string(key), "must be a string");
  return false;
}

bool get_bool(const toml::table& table, std::string_view prefix, std::string_view key, bool& out,
              Problems& problems) {
  const toml::node* node = table.get(key);
  if (node == nullptr) {
    return false;
  }
  if (const auto* value = node->as_boolean()) {
    out = value->get();
    return true;
  }
  problems.add(std::string(prefix) + "." + std::string(key), "must be true or false");
  return false;
}

// Reads an optional array of strings.
bool get_strings(const toml::table& table, std::string_view prefix, std::string_view key,
                 std::vector<std::string>& out, Problems& problems) {
  const toml::node* node = table.get(key);
  if (node == nullptr) {
    return false;
  }
  const std::string full = std::string(prefix) + "." + std::string(key);
  const toml::array* array = node->as_array();
  if (array == nullptr) {
    problems.add(full, "must be an array of strings");
    return false;
  }
  for (const toml::node& element : *array) {
    const auto* value = element.as_string();
    if (value == nullptr) {
      problems.add(full, "must be an array of strings");
      return false;
    }
    out.push_back(value->get());
  }
  return true;
}

const toml::table* get_table(const toml::table& root, std::string_view key, Problems& problems) {
  const toml::node* node = root.get(key);
  if (node == nullptr) {
    return nullptr;
  }
  if (const auto* table = node->as_table()) {
    return table;
  }
  problems.add(key, "must be a table");
  return nullptr;
}

// Reads an optional non-negative integer key no larger than `max`.
bool get_count(const toml::table& table, std::string_view prefix, std::string_view key,
               std::uint64_t max, std::uint64_t& out, Problems& problems) {
  const toml::node* node = table.get(key);
  if (node == nullptr) {
    return false;
  }
  const auto* value = node->as_integer();
  if (value == nullptr || value->get() < 0 || static_cast<std::uint64_t>(value->get()) > max) {
    problems.add(std::string(prefix) + "." + std::string(key),
                 "must be an integer from 0 to " + std::to_string(max));
    return false;
  }
  out = static_cast<std::uint64_t>(value->get());
  return true;
}

void parse_database(const toml::table& table, const std::filesystem::path& base_dir, Config& config,
                    Problems& problems) {
  check_keys(table, "database",
             {"path", "suffix", "map_size", "durability", "indexes", "server_id"}, problems);
  backend::DirectoryOptions& db = config.database;
  std::string text;
  if (get_string(table, "database", "path", text, problems)) {
    db.path =
        std::filesystem::path(text).is_absolute() ? std::filesystem::path(text) : base_dir / text;
  } else if (!problems.any()) {
    problems.add("database.path", "missing");
  }
  if (get_string(table, "database", "suffix", db.suffix, problems)) {
    auto dn = schema::Dn::parse(db.suffix);
    if (!dn.ok()) {
      problems.add("database.suffix", dn.status().message());
    } else if (dn->is_root()) {
      problems.add("database.suffix", "must not be empty");
    }
  } else if (!problems.any()) {
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
    for (const std::string& spec : indexes) {
      auto parsed = parse_index_spec(spec);
      if (!parsed.ok()) {
        problems.add("database.indexes", parsed.status().message());
        break;
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

void parse_server(const toml::table& table, Config& config, Problems& problems) {
  check_keys(table, "server",
             {"listen", "rootdn", "rootpw", "listeners", "workers", "max_connections",
              "max_pdu_size", "max_outstanding_per_connection", "queue_capacity",
              "allow_unauthenticated_bind", "user", "group", "idle_timeout"},
             problems);
  ServerSettings& server = config.server;
  std::vector<std::string> urls;
  if (get_strings(table, "server", "listen", urls, problems)) {
    if (urls.empty()) {
      problems.add("server.listen", "needs at least one URL");
    }
    for (const std::string& text : urls) {
      auto url = listener::parse_listen_url(text);
      if (!url.ok()) {
        problems.add("server.listen", url.status().message());
        break;
      }
      server.listen.push_back(*url);
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
    } else if (!backend::stored_password_scheme(server.root_password).ok() &&
               !config.allow_cleartext_passwords) {
      problems.add("server.rootpw",
                   "must be hashed ({SSHA512}..., made by numadir passwd) unless "
                   "passwords.allow_cleartext is true");
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
  get_bool(table, "server", "allow_unauthenticated_bind", server.allow_unauthenticated_bind,
           problems);
}

void parse_limits(const toml::table& table, Config& config, Problems& problems) {
  check_keys(table, "limits", {"size_limit", "time_limit"}, problems);
  std::uint64_t number = 0;
  if (get_count(table, "limits", "size_limit", UINT32_MAX, number, problems)) {
    config.server.size_limit = number;
  }
  if (get_count(table, "limits", "time_limit", UINT32_MAX, number, problems)) {
    config.server.time_limit_s = static_cast<std::uint32_t>(number);
  }
}

// Most NUMA nodes a [[threads.node]] id may name (Linux's MAX_NUMNODES is at most 1024).
constexpr std::uint64_t kMaxNodeId = 1023;

void parse_threads(const toml::table& table, Config& config, Problems& problems) {
  check_keys(table, "threads", {"dispatcher", "pin", "listener_helps", "node"}, problems);
  ThreadSettings& threads = config.threads;
  if (get_string(table, "threads", "dispatcher", threads.dispatcher, problems) &&
      threads.dispatcher != "percpu" && threads.dispatcher != "single") {
    problems.add("threads.dispatcher", "must be \"percpu\" or \"single\"");
  }
  get_bool(table, "threads", "pin", threads.pin, problems);
  get_bool(table, "threads", "listener_helps", threads.listener_helps, problems);
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
    } else if (!problems.any()) {
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

// [tls]: certificate and key (required), CAs for client certificates, protocol and cipher
// policy, the client certificate mode, SASL EXTERNAL's mapping and RFC 4513 options.
void parse_tls(const toml::table& table, const std::filesystem::path& base_dir, Config& config,
               Problems& problems) {
  check_keys(table, "tls",
             {"certificate", "key", "ca_file", "ca_dir", "min_version", "ciphers", "ciphersuites",
              "verify_client", "external_map", "handshake_timeout", "simple_bind_requires_tls"},
             problems);
  listener::TlsSettings& tls = config.tls.emplace();
  std::string text;
  const auto path = [&](std::string_view key, std::filesystem::path& out, bool required) {
    if (get_string(table, "tls", key, text, problems)) {
      const std::filesystem::path value(text);
      out = value.is_absolute() ? value : base_dir / value;
    } else if (required && !problems.any()) {
      problems.add("tls." + std::string(key), "missing");
    }
  };
  path("certificate", tls.certificate, true);
  path("key", tls.key, true);
  path("ca_file", tls.ca_file, false);
  path("ca_dir", tls.ca_dir, false);
  if (get_string(table, "tls", "min_version", text, problems)) {
    if (text == "1.3") {
      tls.tls13_only = true;
    } else if (text != "1.2") {
      problems.add("tls.min_version", "must be \"1.2\" or \"1.3\"");
    }
  }
  get_string(table, "tls", "ciphers", tls.ciphers, problems);
  get_string(table, "tls", "ciphersuites", tls.ciphersuites, problems);
  if (get_string(table, "tls", "verify_client", text, problems)) {
    if (text == "never") {
      tls.client_certificates = listener::ClientCertificates::kNever;
    } else if (text == "allow") {
      tls.client_certificates = listener::ClientCertificates::kAllow;
    } else if (text == "demand") {
      tls.client_certificates = listener::ClientCertificates::kDemand;
    } else {
      problems.add("tls.verify_client", "must be \"never\", \"allow\" or \"demand\"");
    }
    if (tls.client_certificates == listener::ClientCertificates::kDemand && tls.ca_file.empty() &&
        tls.ca_dir.empty()) {
      problems.add("tls.verify_client", "\"demand\" needs tls.ca_file or tls.ca_dir");
    }
  }
  if (get_string(table, "tls", "external_map", config.external_map, problems)) {
    if (config.external_map.empty()) {
      problems.add("tls.external_map", "must not be empty (default \"{subject}\")");
    }
  }
  std::uint64_t number = 0;
  if (get_count(table, "tls", "handshake_timeout", 3600, number, problems)) {
    if (number == 0) {
      problems.add("tls.handshake_timeout", "must be at least 1");
    }
    tls.handshake_timeout_s = static_cast<std::uint32_t>(number);
  }
  get_bool(table, "tls", "simple_bind_requires_tls", config.simple_bind_requires_tls, problems);
}

// [[access]]: the ordered access rules (server/operations/access_control.h). Their attribute names
// and DNs are checked against the schema when the server builds them (OperationHandler).
void parse_access_rules(const toml::node& node, Config& config, Problems& problems) {
  const toml::array* array = node.as_array();
  if (array == nullptr || !array->is_array_of_tables()) {
    problems.add("access", "must be an array of tables ([[access]])");
    return;
  }
  for (std::size_t i = 0; i < array->size(); ++i) {
    const toml::table& table = *array->get(i)->as_table();
    AccessRuleSpec rule;
    rule.origin = "access[" + std::to_string(i) + "]";
    const std::string& prefix = rule.origin;
    check_keys(table, prefix, {"dn", "scope", "filter", "attrs", "by"}, problems);
    if (get_string(table, prefix, "dn", rule.dn, problems)) {
      if (Result<schema::Dn> dn = schema::Dn::parse(rule.dn); !dn.ok()) {
        problems.add(prefix + ".dn", dn.status().message());
      }
    }
    std::string text;
    if (get_string(table, prefix, "scope", text, problems)) {
      Result<DnScope> scope = parse_dn_scope(text);
      if (!scope.ok()) {
        problems.add(prefix + ".scope", scope.status().message());
      } else if (rule.dn.empty()) {
        problems.add(prefix + ".scope", "set without dn");
      } else {
        rule.scope = *scope;
      }
    }
    if (get_string(table, prefix, "filter", rule.filter, problems)) {
      if (Result<schema::Filter> filter = schema::Filter::parse(rule.filter); !filter.ok()) {
        problems.add(prefix + ".filter", filter.status().message());
      }
    }
    get_strings(table, prefix, "attrs", rule.attrs, problems);
    const toml::node* by = table.get("by");
    const toml::array* clauses = by != nullptr ? by->as_array() : nullptr;
    if (clauses == nullptr || clauses->empty() || !clauses->is_array_of_tables()) {
      problems.add(prefix + ".by",
                   by == nullptr ? "missing (who gets which access)"
                                 : "must be an array of tables, e.g. [{ who = \"*\", access = "
                                   "\"read\" }]");
      continue;
    }
    for (std::size_t j = 0; j < clauses->size(); ++j) {
      const toml::table& clause = *clauses->get(j)->as_table();
      const std::string at = prefix + ".by[" + std::to_string(j) + "]";
      check_keys(clause, at, {"who", "dn", "scope", "group", "access"}, problems);
      AccessSubjectSpec subject;
      const int kinds = int{get_string(clause, at, "who", subject.who, problems)} +
                        int{get_string(clause, at, "dn", subject.dn, problems)} +
                        int{get_string(clause, at, "group", subject.group, problems)};
      if (kinds != 1) {
        problems.add(at, "needs exactly one of who, dn or group");
      }
      if (!subject.who.empty() && subject.who != "*") {
        const std::string who = schema::ascii_lowered(subject.who);
        if (who != "anonymous" && who != "users" && who != "self" && who != "rootdn") {
          problems.add(at + ".who", "\"" + subject.who +
                                        "\" is not a subject: use *, anonymous, users, self or "
                                        "rootdn (or dn = \"...\", group = \"...\")");
        }
      }
      for (const std::string* dn : {&subject.dn, &subject.group}) {
        if (!dn->empty()) {
          if (Result<schema::Dn> parsed = schema::Dn::parse(*dn); !parsed.ok()) {
            problems.add(at + (dn == &subject.dn ? ".dn" : ".group"), parsed.status().message());
          }
        }
      }
      if (get_string(clause, at, "scope", text, problems)) {
        Result<DnScope> scope = parse_dn_scope(text);
        if (!scope.ok()) {
          problems.add(at + ".scope", scope.status().message());
        } else if (subject.dn.empty()) {
          problems.add(at + ".scope", "set without dn");
        } else {
          subject.dn_scope = *scope;
        }
      }
      if (get_string(clause, at, "access", text, problems)) {
        Result<AccessMask> access = parse_access(text);
        if (!access.ok()) {
          problems.add(at + ".access", access.status().message());
        } else {
          subject.access = *access;
        }
      } else if (!problems.any()) {
        problems.add(at + ".access", "missing");
      }
      rule.by.push_back(std::move(subject));
    }
    config.access.push_back(std::move(rule));
  }
}

}  // namespace

Result<Config> parse_config(std::string_view text, std::string_view origin,
                            const std::filesystem::path& base_dir) {
  std::string ascii;
  if (const std::size_t line = mask_comment_non_ascii(text, ascii); line != 0) {
    return invalid_argument(std::string(origin) + ":" + std::to_string(line) +
                            ": non-ASCII character (only comments may have them; write DNs "
                            "with \\XX escapes)");
  }
  toml::parse_result parsed = toml::parse(ascii, origin);
  if (!parsed) {
    const toml::parse_error& error = parsed.error();
    std::ostringstream message;
    message << origin << ":" << error.source().begin.line << ":" << error.source().begin.column
            << ": " << error.description();
    return invalid_argument(message.str());
  }
  const toml::table& root = parsed.table();
  Problems problems(origin);
  check_keys(
      root, "",
      {"database", "schema", "passwords", "server", "limits", "log", "threads", "access", "tls"},
      problems);

  Config config;
  if (const toml::table* database = get_table(root, "database", problems)) {
    parse_database(*database, base_dir, config, problems);
  } else if (!problems.any()) {
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
    check_keys(*passwords, "passwords", {"default_scheme", "allow_cleartext"}, problems);
    std::string scheme;
    if (get_string(*passwords, "passwords", "default_scheme", scheme, problems)) {
      auto parsed_scheme = backend::parse_password_scheme(scheme);
      if (!parsed_scheme.ok()) {
        problems.add("passwords.default_scheme", parsed_scheme.status().message());
      } else if (!backend::password_scheme_writable(*parsed_scheme)) {
        problems.add("passwords.default_scheme",
                     "\"" + scheme + "\" can be read but not written; use e.g. SSHA512");
      } else {
        config.default_password_scheme = *parsed_scheme;
      }
    }
    get_bool(*passwords, "passwords", "allow_cleartext", config.allow_cleartext_passwords,
             problems);
  }
  // After [passwords]: whether a cleartext rootpw is allowed depends on it.
  if (const toml::table* server = get_table(root, "server", problems)) {
    parse_server(*server, config, problems);
  }
  if (const toml::node* access = root.get("access")) {
    parse_access_rules(*access, config, problems);
  }
  if (const toml::table* limits = get_table(root, "limits", problems)) {
    parse_limits(*limits, config, problems);
  }
  if (const toml::table* log = get_table(root, "log", problems)) {
    check_keys(*log, "log", {"level", "file"}, problems);
    std::string text;
    if (get_string(*log, "log", "level", text, problems)) {
      auto level = parse_log_level(text);
      if (level.ok()) {
        config.log_level = *level;
      } else {
        problems.add("log.level", level.status().message());
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
    parse_tls(*tls, base_dir, config, problems);
  }
  if (config.server.listen.empty()) {
    config.server.listen.push_back(listener::ListenUrl{"ldap", "", 389});
  }
  for (const listener::ListenUrl& url : config.server.listen) {
    if (url.scheme == "ldaps" && !config.tls.has_value()) {
      problems.add("server.listen", url.to_string() + " needs a [tls] section");
    }
  }
  if (problems.any()) {
    return problems.status();
  }
  return config;
}

Result<Config> load_config(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      return not_found(path.string() + ": no such file");
    }
    return Status(StatusCode::kIo, path.string() + ": cannot be read");
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto config = parse_config(text, path.string(), path.parent_path());
  if (config.ok()) {
    config->source = path;
  }
  return config;
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
