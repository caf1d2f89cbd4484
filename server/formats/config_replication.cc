// server/formats/config_replication.cc: the [replication] section of numadir.toml: its
// [[replication.consumer]] tables (replication_consumer_config.h), each a provider to replicate
// from, checked key by key; its [replication.provider] table (config.h), this server as a
// provider; and slapd's interval and retry syntaxes. The DN checks that need the
// schema (searchbase under the suffix) and the files (credentials, certificates, CAs) are
// compile_server_config's (server/commands/server_config.cc).
//
// Thread contract: as detail/config_toml.h; the thread parsing a config.
#include <algorithm>
#include <charconv>
#include <string>
#include <string_view>

#include "schema/dn.h"
#include "schema/filter.h"
#include "server/formats/detail/config.h"
#include "server/formats/detail/config_toml.h"
#include "server/formats/replication_consumer_config.h"

namespace numadir::server {
namespace {

// Parses all of `text` as a decimal number no larger than `max`.
bool parse_number(std::string_view text, std::uint64_t max, std::uint64_t& out) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && error == std::errc() && end == text.data() + text.size() && out <= max;
}

// An attribute selector as a search request names it: a description ("cn", "cn;lang-en",
// "2.5.4.3"), "*", "+", "1.1" or "@objectClass".
bool is_attribute_selector(std::string_view text) {
  if (text == "*" || text == "+") {
    return true;
  }
  if (text.starts_with('@')) {
    text.remove_prefix(1);
  }
  if (text.empty()) {
    return false;
  }
  for (const char c : text) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.' || c == ';';
    if (!ok) {
      return false;
    }
  }
  return true;
}

// The greatest replication.consumer.*_ms (timeout_ms, network_timeout_ms; persist_batch_ms).
constexpr std::int64_t kMaxTimeoutMs = 3'600'000;
constexpr std::int64_t kMaxPersistBatchMs = 1000;

}  // namespace

Result<std::uint64_t> parse_sync_interval(std::string_view text) {
  const std::string quoted = "\"" + std::string(text) + "\"";
  std::uint64_t seconds = 0;
  if (text.find(':') == std::string_view::npos) {
    if (!parse_number(text, UINT32_MAX, seconds)) {
      return invalid_argument(quoted + " is not \"dd:hh:mm:ss\" or a number of seconds");
    }
  } else {
    std::string_view fields[4];
    std::string_view rest = text;
    for (std::size_t i = 0; i < 4; ++i) {
      const std::size_t colon = rest.find(':');
      if ((i < 3) == (colon == std::string_view::npos)) {
        return invalid_argument(quoted + " is not \"dd:hh:mm:ss\" (e.g. \"01:00:00:00\": a day)");
      }
      fields[i] = rest.substr(0, colon);
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    }
    constexpr std::string_view kNames[] = {"days", "hours", "minutes", "seconds"};
    constexpr std::uint64_t kMax[] = {49'710, 23, 59, 59};  // 49710 days: under 2^32 seconds.
    constexpr std::uint64_t kUnit[] = {86400, 3600, 60, 1};
    for (std::size_t i = 0; i < 4; ++i) {
      std::uint64_t value = 0;
      if (!parse_number(fields[i], kMax[i], value)) {
        return invalid_argument(quoted + ": " + std::string(kNames[i]) +
                                " must be a number from 0 to " + std::to_string(kMax[i]));
      }
      seconds += value * kUnit[i];
    }
  }
  if (seconds == 0) {
    return invalid_argument(quoted + " must be more than 0 seconds");
  }
  return seconds;
}

Result<std::vector<RetryStep>> parse_retry_schedule(std::string_view text) {
  const std::string quoted = "\"" + std::string(text) + "\"";
  std::vector<std::string_view> fields;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t start = text.find_first_not_of(' ', at);
    if (start == std::string_view::npos) {
      break;
    }
    const std::size_t end = std::min(text.find(' ', start), text.size());
    fields.push_back(text.substr(start, end - start));
    at = end;
  }
  if (fields.empty() || fields.size() % 2 != 0) {
    return invalid_argument(quoted +
                            " must be pairs of \"<interval seconds> <count or +>\", "
                            "e.g. \"5 10 60 +\"");
  }
  std::vector<RetryStep> steps;
  for (std::size_t i = 0; i < fields.size(); i += 2) {
    RetryStep step;
    std::uint64_t number = 0;
    if (!parse_number(fields[i], UINT32_MAX, number) || number == 0) {
      return invalid_argument(quoted + ": interval \"" + std::string(fields[i]) +
                              "\" must be a number of seconds from 1 to 4294967295");
    }
    step.interval_s = static_cast<std::uint32_t>(number);
    if (fields[i + 1] == "+") {
      if (i + 2 != fields.size()) {
        return invalid_argument(quoted + ": \"+\" (forever) must be the last count");
      }
      step.forever = true;
    } else if (!parse_number(fields[i + 1], UINT32_MAX, number) || number == 0) {
      return invalid_argument(quoted + ": count \"" + std::string(fields[i + 1]) +
                              "\" must be a number from 1 to 4294967295, or \"+\" (forever)");
    } else {
      step.count = static_cast<std::uint32_t>(number);
    }
    steps.push_back(step);
  }
  return steps;
}

namespace detail {
namespace {

// One [[replication.consumer]] table as it is read: where its keys are and what was wrong.
struct ConsumerTable {
  const toml::table& table;
  const std::string& prefix;  // "replication.consumer[N]".
  const std::filesystem::path& base_dir;
  Problems& problems;

  std::string key(std::string_view name) const { return prefix + "." + std::string(name); }
  // Reads the path `name` into `out`, relative to base_dir unless absolute; empty: a mistake.
  void path(std::string_view name, std::filesystem::path& out) const {
    if (std::string text; get_string(table, prefix, name, text, problems)) {
      if (text.empty()) {
        problems.add(key(name), "must not be empty");
        return;
      }
      const std::filesystem::path value(text);
      out = value.is_absolute() ? value : base_dir / value;
    }
  }
};

// rid (unique among the consumers before it), provider and starttls.
void parse_consumer_provider(const ConsumerTable& in, const Config& config,
                             ReplicationConsumerConfig& consumer) {
  std::string text;
  if (const toml::node* rid = in.table.get("rid"); rid == nullptr) {
    in.problems.add(in.key("rid"), "missing (a number from 1 to 999 naming this consumer)");
  } else if (const auto* number = rid->as_integer();
             number == nullptr || number->get() < 1 || number->get() > 999) {
    in.problems.add(in.key("rid"), "must be an integer from 1 to 999");
  } else {
    consumer.rid = static_cast<int>(number->get());
    for (const ReplicationConsumerConfig& earlier : config.replication_consumers) {
      if (earlier.rid == consumer.rid) {
        in.problems.add(in.key("rid"),
                        std::to_string(consumer.rid) + " is " + earlier.origin + "'s rid already");
      }
    }
  }

  if (get_string(in.table, in.prefix, "provider", consumer.provider_text, in.problems)) {
    Result<LdapUrl> url = parse_ldap_url(consumer.provider_text);
    if (!url.ok()) {
      in.problems.add(in.key("provider"), url.status().message());
    } else if (url->host.empty() && !url->is_local()) {
      in.problems.add(in.key("provider"), "\"" + consumer.provider_text + "\" needs a host");
    } else {
      consumer.provider = *url;
    }
  } else if (!in.table.contains("provider")) {
    in.problems.add(in.key("provider"),
                    "missing (ldap://HOST[:PORT], ldaps://HOST[:PORT] or ldapi://PATH)");
  }

  if (get_string(in.table, in.prefix, "starttls", text, in.problems)) {
    if (text == "no") {
      consumer.starttls = StartTlsMode::kNo;
    } else if (text == "yes") {
      consumer.starttls = StartTlsMode::kYes;
    } else if (text == "critical") {
      consumer.starttls = StartTlsMode::kCritical;
    } else {
      in.problems.add(in.key("starttls"), "must be \"no\", \"yes\" or \"critical\"");
    }
    if (consumer.starttls != StartTlsMode::kNo && consumer.provider.tls()) {
      in.problems.add(in.key("starttls"),
                      "not with an ldaps:// provider (it has TLS from the first byte)");
    }
    // A Unix socket needs no TLS, and it has no host name to check a certificate against.
    if (consumer.starttls != StartTlsMode::kNo && consumer.provider.is_local()) {
      in.problems.add(in.key("starttls"), "not with an ldapi:// provider (a local socket)");
    }
  }
}

// What is replicated and how: searchbase, scope, filter, attrs, type and interval.
void parse_consumer_search(const ConsumerTable& in, ReplicationConsumerConfig& consumer) {
  std::string text;
  if (get_string(in.table, in.prefix, "searchbase", consumer.searchbase, in.problems)) {
    if (Result<schema::Dn> dn = schema::Dn::parse(consumer.searchbase); !dn.ok()) {
      in.problems.add(in.key("searchbase"), dn.status().message());
    } else if (dn->is_root()) {
      in.problems.add(in.key("searchbase"), "must not be empty (the database suffix or under it)");
    }
  } else if (!in.table.contains("searchbase")) {
    in.problems.add(in.key("searchbase"), "missing (the database suffix or a DN under it)");
  }

  if (get_string(in.table, in.prefix, "scope", text, in.problems)) {
    if (text == "sub") {
      consumer.scope = listener::wire::SearchScope::kWholeSubtree;
    } else if (text == "one") {
      consumer.scope = listener::wire::SearchScope::kSingleLevel;
    } else if (text == "base") {
      consumer.scope = listener::wire::SearchScope::kBaseObject;
    } else {
      in.problems.add(in.key("scope"), "must be \"sub\", \"one\" or \"base\"");
    }
  }

  if (get_string(in.table, in.prefix, "filter", consumer.filter, in.problems)) {
    if (Result<schema::Filter> filter = schema::Filter::parse(consumer.filter); !filter.ok()) {
      in.problems.add(in.key("filter"), filter.status().message());
    }
  }

  if (std::vector<std::string> attrs;
      get_strings(in.table, in.prefix, "attrs", attrs, in.problems)) {
    if (attrs.empty()) {
      in.problems.add(in.key("attrs"), "must name at least one attribute (default [\"*\", \"+\"])");
    }
    for (const std::string& attr : attrs) {
      if (!is_attribute_selector(attr)) {
        in.problems.add(in.key("attrs"), "\"" + attr +
                                             "\" is not an attribute description, \"*\", \"+\" or "
                                             "\"@objectClass\"");
        break;
      }
    }
    consumer.attrs = std::move(attrs);
  }

  if (get_string(in.table, in.prefix, "type", text, in.problems)) {
    if (text == "refreshAndPersist") {
      consumer.type = ReplicationType::kRefreshAndPersist;
    } else if (text == "refreshOnly") {
      consumer.type = ReplicationType::kRefreshOnly;
    } else {
      in.problems.add(in.key("type"), "must be \"refreshAndPersist\" or \"refreshOnly\"");
    }
  }
  if (const toml::node* interval = in.table.get("interval")) {
    Result<std::uint64_t> seconds = invalid_argument("must be \"dd:hh:mm:ss\" or seconds");
    if (const auto* string = interval->as_string()) {
      seconds = parse_sync_interval(string->get());
    } else if (const auto* number = interval->as_integer()) {
      seconds = number->get() > 0 && number->get() <= INT64_C(4294967295)
                    ? Result<std::uint64_t>(static_cast<std::uint64_t>(number->get()))
                    : invalid_argument("must be from 1 to 4294967295 seconds");
    }
    if (!seconds.ok()) {
      in.problems.add(in.key("interval"), seconds.status().message());
    } else if (consumer.type != ReplicationType::kRefreshOnly) {
      in.problems.add(in.key("interval"),
                      "only with type = \"refreshOnly\" (refreshAndPersist hears of each change as "
                      "it happens)");
    } else {
      consumer.interval_s = *seconds;
    }
  }
}

// How the consumer binds: method, binddn and credentials_file, or a client certificate (and
// the TLS that needs); ca_file and tls_verify. Requires: parse_consumer_provider done.
void parse_consumer_bind(const ConsumerTable& in, ReplicationConsumerConfig& consumer) {
  std::string text;
  if (get_string(in.table, in.prefix, "method", text, in.problems)) {
    if (text == "simple") {
      consumer.method = ReplicationBind::kSimple;
    } else if (text == "external") {
      consumer.method = ReplicationBind::kExternal;
    } else {
      in.problems.add(in.key("method"), "must be \"simple\" or \"external\"");
    }
  }
  const bool simple = consumer.method == ReplicationBind::kSimple;
  if (get_string(in.table, in.prefix, "binddn", consumer.binddn, in.problems)) {
    if (!simple) {
      in.problems.add(in.key("binddn"),
                      "not with method = \"external\" (the certificate is the "
                      "identity)");
    } else if (consumer.binddn.empty()) {
      in.problems.add(in.key("binddn"),
                      "must not be empty (an anonymous consumer reads too little)");
    } else if (Result<schema::Dn> dn = schema::Dn::parse(consumer.binddn); !dn.ok()) {
      in.problems.add(in.key("binddn"), dn.status().message());
    }
  } else if (simple && !in.table.contains("binddn")) {
    in.problems.add(in.key("binddn"), "missing (method = \"simple\" binds as this DN)");
  }
  if (in.table.contains("credentials_file") && !simple) {
    in.problems.add(in.key("credentials_file"),
                    "not with method = \"external\" (the certificate is the identity)");
  }
  in.path("credentials_file", consumer.credentials_file);
  if (simple && consumer.credentials_file.empty() && !in.table.contains("credentials_file")) {
    in.problems.add(in.key("credentials_file"),
                    "missing (a file holding binddn's password, mode 0600)");
  }

  in.path("certificate", consumer.certificate);
  in.path("key", consumer.key);
  if (consumer.certificate.empty() != consumer.key.empty()) {
    in.problems.add(in.key(consumer.certificate.empty() ? "certificate" : "key"),
                    "missing (certificate and key go together)");
  }
  if (!simple && consumer.provider.is_local()) {
    // The consumer's EXTERNAL is a TLS client certificate's; peer credentials are not offered.
    in.problems.add(in.key("method"),
                    "\"external\" is not supported with an ldapi:// provider (it binds with a "
                    "TLS client certificate): use method = \"simple\"");
  } else if (!simple) {
    if (consumer.certificate.empty() && !in.table.contains("certificate")) {
      in.problems.add(in.key("certificate"),
                      "missing (method = \"external\" binds with a client certificate)");
    }
    if (!consumer.provider.tls() && consumer.starttls != StartTlsMode::kCritical) {
      in.problems.add(in.key("method"),
                      "\"external\" needs TLS: an ldaps:// provider or starttls = \"critical\"");
    }
  }
  in.path("ca_file", consumer.ca_file);
  const bool verify_given =
      get_bool(in.table, in.prefix, "tls_verify", consumer.tls_verify, in.problems);
  if (consumer.uses_tls()) {
    // A tls_verify of the wrong type is its own mistake: no guess at what it meant.
    if (consumer.tls_verify && consumer.ca_file.empty() && !in.table.contains("ca_file") &&
        (verify_given || !in.table.contains("tls_verify"))) {
      in.problems.add(in.key("ca_file"),
                      "missing (the CAs to verify the provider's certificate with; or tls_verify = "
                      "false, which checks nothing)");
    }
  } else if (!consumer.provider_text.empty()) {
    for (const auto& [name, given] :
         {std::pair<std::string_view, bool>{"ca_file", !consumer.ca_file.empty()},
          {"tls_verify", verify_given},
          {"certificate", !consumer.certificate.empty()}}) {
      if (given) {
        in.problems.add(in.key(name),
                        "set, but the provider is reached without TLS (an ldap:// provider with "
                        "starttls = \"no\")");
      }
    }
  }
}

// The connection's conduct: retry, keepalive, timeouts, persist_batch_ms, schemachecking,
// max_pdu_size and updateref (the provider's URL unless given).
void parse_consumer_connection(const ConsumerTable& in, ReplicationConsumerConfig& consumer) {
  std::string text;
  if (get_string(in.table, in.prefix, "retry", text, in.problems)) {
    Result<std::vector<RetryStep>> retry = parse_retry_schedule(text);
    if (retry.ok()) {
      consumer.retry = std::move(*retry);
    } else {
      in.problems.add(in.key("retry"), retry.status().message());
    }
  }
  if (get_string(in.table, in.prefix, "keepalive", text, in.problems)) {
    Result<TcpKeepalive> keepalive = parse_keepalive(text);
    if (keepalive.ok()) {
      consumer.keepalive = *keepalive;
    } else {
      in.problems.add(in.key("keepalive"), keepalive.status().message());
    }
  }
  const auto milliseconds = [&](std::string_view name, std::uint32_t& out) {
    if (const toml::node* node = in.table.get(name)) {
      const auto* value = node->as_integer();
      if (value == nullptr || value->get() < 1 || value->get() > kMaxTimeoutMs) {
        in.problems.add(in.key(name),
                        "must be an integer from 1 to " + std::to_string(kMaxTimeoutMs) + " (ms)");
      } else {
        out = static_cast<std::uint32_t>(value->get());
      }
    }
  };
  milliseconds("timeout_ms", consumer.timeout_ms);
  milliseconds("network_timeout_ms", consumer.network_timeout_ms);
  if (const toml::node* node = in.table.get("persist_batch_ms")) {
    const auto* value = node->as_integer();
    if (value == nullptr || value->get() < 0 || value->get() > kMaxPersistBatchMs) {
      in.problems.add(in.key("persist_batch_ms"), "must be an integer from 0 to " +
                                                      std::to_string(kMaxPersistBatchMs) + " (ms)");
    } else {
      consumer.persist_batch_ms = static_cast<std::uint32_t>(value->get());
    }
  }
  get_bool(in.table, in.prefix, "schemachecking", consumer.schemachecking, in.problems);
  if (get_string(in.table, in.prefix, "max_pdu_size", text, in.problems)) {
    Result<std::uint64_t> bytes = parse_size_bytes(text);
    if (!bytes.ok()) {
      in.problems.add(in.key("max_pdu_size"), bytes.status().message());
    } else if (*bytes < 1024 || *bytes > (std::uint64_t{1} << 31)) {
      in.problems.add(in.key("max_pdu_size"), "must be from 1KiB to 2GiB");
    } else {
      consumer.max_pdu_bytes = *bytes;
    }
  }
  consumer.updateref = consumer.provider;
  if (get_string(in.table, in.prefix, "updateref", text, in.problems)) {
    Result<LdapUrl> url = parse_ldap_url(text);
    if (!url.ok()) {
      in.problems.add(in.key("updateref"), url.status().message());
    } else if (url->host.empty() && !url->is_local()) {
      in.problems.add(in.key("updateref"), "\"" + text + "\" needs a host");
    } else {
      consumer.updateref = *url;
    }
  }
}

void parse_consumer(const toml::table& table, std::size_t index,
                    const std::filesystem::path& base_dir, Config& config, Problems& problems) {
  ReplicationConsumerConfig consumer;
  consumer.origin = "replication.consumer[" + std::to_string(index) + "]";
  const std::string& prefix = consumer.origin;
  check_keys(table, prefix,
             {"rid",
              "provider",
              "starttls",
              "searchbase",
              "scope",
              "filter",
              "attrs",
              "type",
              "interval",
              "method",
              "binddn",
              "credentials_file",
              "certificate",
              "key",
              "ca_file",
              "tls_verify",
              "retry",
              "keepalive",
              "timeout_ms",
              "network_timeout_ms",
              "max_pdu_size",
              "updateref",
              "persist_batch_ms",
              "schemachecking"},
             problems);
  const ConsumerTable in{table, prefix, base_dir, problems};
  parse_consumer_provider(in, config, consumer);
  parse_consumer_search(in, consumer);
  parse_consumer_bind(in, consumer);
  parse_consumer_connection(in, consumer);
  config.replication_consumers.push_back(std::move(consumer));
}

// The ranges of [replication.provider]'s numbers: a session log of ten million changes is some
// GiB of LMDB; a million queued changes per consumer is its memory bound (each change waits as
// its encoded entry); ten thousand sync searches is far more than any site's replicas.
constexpr std::uint64_t kMaxSessionLog = 10'000'000;
constexpr std::uint64_t kMaxQueueChanges = 1'000'000;
constexpr std::uint64_t kMaxProviderConsumers = 10'000;

// Reads the optional integer `name` of [replication.provider], from `min` to `max`.
bool get_ranged(const toml::table& table, std::string_view name, std::uint64_t min,
                std::uint64_t max, std::uint64_t& out, Problems& problems) {
  const toml::node* node = table.get(name);
  if (node == nullptr) {
    return false;
  }
  const auto* value = node->as_integer();
  if (value == nullptr || value->get() < 0 || static_cast<std::uint64_t>(value->get()) < min ||
      static_cast<std::uint64_t>(value->get()) > max) {
    problems.add("replication.provider." + std::string(name),
                 "must be an integer from " + std::to_string(min) + " to " + std::to_string(max));
    return false;
  }
  out = static_cast<std::uint64_t>(value->get());
  return true;
}

void parse_provider(const toml::table& table, Config& config, Problems& problems) {
  constexpr std::string_view kPrefix = "replication.provider";
  check_keys(table, kPrefix, {"enabled", "sessionlog", "queue_changes", "max_consumers"}, problems);
  ReplicationProviderSettings& provider = config.replication_provider;
  // An `enabled` of the wrong type is its own mistake: no guess at what it meant.
  const bool enabled_bad =
      table.contains("enabled") && !get_bool(table, kPrefix, "enabled", provider.enabled, problems);
  const bool sessionlog_given =
      get_ranged(table, "sessionlog", 0, kMaxSessionLog, provider.sessionlog, problems);
  get_ranged(table, "queue_changes", 1, kMaxQueueChanges, provider.queue_changes, problems);
  if (std::uint64_t number = 0;
      get_ranged(table, "max_consumers", 1, kMaxProviderConsumers, number, problems)) {
    provider.max_consumers = static_cast<std::uint32_t>(number);
  }
  config.database.session_log_entries = provider.enabled ? provider.sessionlog : 0;

  if (enabled_bad) {
    return;
  }
  if (!provider.enabled) {
    for (const char* name : {"sessionlog", "queue_changes", "max_consumers"}) {
      if (table.contains(name)) {
        problems.warn(std::string(kPrefix) + "." + name,
                      "ignored: replication.provider.enabled is false (the default), so no sync "
                      "search is served");
      }
    }
    return;
  }
  if (sessionlog_given && provider.sessionlog == 0) {
    problems.warn("replication.provider.sessionlog",
                  "0: no session log, so every consumer that reconnects with a cookie gets a "
                  "present phase (every entry of its search named again) instead of only what "
                  "changed");
  }
  if (!config.replication_consumers.empty() && config.database.server_id == 0) {
    problems.warn("database.server_id",
                  "0 on a server that is both a replication consumer and a provider (a "
                  "cascade): give it a server id of its own (1..4095), as slapd consumers tell "
                  "the CSNs of different servers apart by it");
  }
}

}  // namespace

void parse_replication(const toml::table& table, const std::filesystem::path& base_dir,
                       Config& config, Problems& problems) {
  check_keys(table, "replication", {"consumer", "provider"}, problems);
  if (const toml::node* consumers = table.get("consumer")) {
    const toml::array* array = consumers->as_array();
    if (array == nullptr || !array->is_array_of_tables()) {
      problems.add("replication.consumer", "must be an array of tables ([[replication.consumer]])");
    } else {
      for (std::size_t i = 0; i < array->size(); ++i) {
        parse_consumer(*array->get(i)->as_table(), i, base_dir, config, problems);
      }
    }
  }
  // After the consumers: a provider that is also a consumer is a cascade.
  if (const toml::node* provider = table.get("provider")) {
    if (const toml::table* settings = provider->as_table()) {
      parse_provider(*settings, config, problems);
    } else {
      problems.add("replication.provider", "must be a table ([replication.provider])");
    }
  }
}

}  // namespace detail
}  // namespace numadir::server
