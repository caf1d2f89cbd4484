// server/commands/server_config.cc: see server_config.h.
#include "server/commands/server_config.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <span>
#include <utility>

#include "backend/attribute_index.h"
#include "backend/dn_normalizer.h"
#include "schema/ascii.h"
#include "server/client/tls_client_context.h"
#include "server/commands/opened_directory.h"
#include "server/operations/operation_context.h"
#include "threadpool/topology.h"

namespace numadir::server {
namespace {

// Returns: "mode 0644" for `info`.
std::string mode_text(const struct stat& info) {
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(info.st_mode & 07777));
  return std::string("mode ") + mode;
}

// Makes the diagnostics of one config file, each with its key's line.
class Diagnose {
 public:
  Diagnose(const std::string& file, const ConfigKeyLines& lines) : file_(file), lines_(lines) {}

  ConfigDiagnostic operator()(std::string key, std::string message) const {
    const std::uint32_t line = config_key_line(lines_, key);
    return ConfigDiagnostic{file_, line, 0, std::move(key), std::move(message)};
  }
  // For a message that starts with its key ("access[1].attrs: ...", "tls.certificate /x: ...").
  ConfigDiagnostic located(std::string message) const {
    const std::uint32_t line = config_key_line(lines_, message);
    return ConfigDiagnostic{file_, line, 0, std::string(), std::move(message)};
  }

 private:
  const std::string& file_;
  const ConfigKeyLines& lines_;
};

// Returns: the warning for a config file holding server.rootpw that group or others may open;
//   nullopt when its mode is private (or it cannot be examined: load_config read it already).
std::optional<ConfigDiagnostic> rootpw_file_warning(const Config& config,
                                                    const std::filesystem::path& path) {
  struct stat info {};
  if (config.server.root_password.empty() || ::stat(path.c_str(), &info) != 0 ||
      (info.st_mode & 077) == 0) {
    return std::nullopt;
  }
  return ConfigDiagnostic{
      path.string(), 0, 0, "",
      "holds server.rootpw and is open to group or others (" + mode_text(info) + "): chmod 600 it"};
}

// The most bytes a credentials_file may hold: a password, not a document.
constexpr std::size_t kMaxCredentialsBytes = 4096;

// Reads `consumer`'s credentials_file into consumer.credentials, less its trailing newline.
// Returns: the error (the problem, for the key <origin>.credentials_file), or "" (then a mode
// open to group or others is set in `warning`).
std::string read_credentials(ReplicationConsumerConfig& consumer, std::string& warning) {
  const std::string name = consumer.credentials_file.string();
  const int fd = ::open(consumer.credentials_file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return name + ": cannot be read (" + std::strerror(errno) + ")";
  }
  struct stat info {};
  std::string text;
  std::string error;
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    error = name + ": not a regular file";
  } else {
    char chunk[1024];
    for (;;) {
      const ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n < 0) {
        error = name + ": cannot be read (" + std::strerror(errno) + ")";
        break;
      }
      if (n == 0) {
        break;
      }
      text.append(chunk, static_cast<std::size_t>(n));
      if (text.size() > kMaxCredentialsBytes) {
        error = name + ": longer than " + std::to_string(kMaxCredentialsBytes) +
                " bytes: not a password file";
        break;
      }
    }
  }
  ::close(fd);
  if (!error.empty()) {
    return error;
  }
  // The editor's final newline is not the password's.
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
    text.pop_back();
  }
  if (text.empty()) {
    return name + " is empty (a simple bind without a password is anonymous)";
  }
  if ((info.st_mode & 077) != 0) {
    warning = name + " holds the password of " + consumer.origin + " (rid " +
              std::to_string(consumer.rid) + ") and is open to group or others (" +
              mode_text(info) + "): chmod 600 it";
  }
  consumer.credentials = std::move(text);
  return std::string();
}

// [[replication.consumer]]: what parse_config could not check: each searchbase against the
// schema and the suffix (the replica replicates into its own database), the credentials files
// read, the TLS files loaded as a connection to the provider loads them.
void compile_consumers(ServerConfig& compiled, const Diagnose& diagnose,
                       ServerConfigOutcome& outcome) {
  Config& config = compiled.config;
  if (config.replication_consumers.empty()) {
    return;
  }
  const backend::SchemaDnNormalizer normalizer(*compiled.schema);
  Result<schema::Dn> suffix = schema::Dn::parse(config.database.suffix);
  const std::string suffix_ndn = suffix.ok() ? suffix->normalized(&normalizer) : std::string();
  for (ReplicationConsumerConfig& consumer : config.replication_consumers) {
    const std::string searchbase = consumer.origin + ".searchbase";
    if (Result<schema::Dn> base = parse_checked_dn(*compiled.schema, consumer.searchbase);
        !base.ok()) {
      outcome.errors.push_back(diagnose(searchbase, base.status().message()));
    } else if (!ndn_at_or_below(base->normalized(&normalizer), suffix_ndn)) {
      outcome.errors.push_back(
          diagnose(searchbase, "\"" + consumer.searchbase + "\" is not database.suffix (" +
                                   config.database.suffix +
                                   ") or under it: a replica replicates into its own database"));
    }
    if (consumer.method == ReplicationBind::kSimple) {
      const std::string key = consumer.origin + ".credentials_file";
      std::string warning;
      if (std::string error = read_credentials(consumer, warning); !error.empty()) {
        outcome.errors.push_back(diagnose(key, std::move(error)));
      }
      if (!warning.empty()) {
        outcome.warnings.push_back(diagnose(key, std::move(warning)));
      }
    }
    if (consumer.uses_tls()) {
      Result<std::unique_ptr<TlsClientContext>> tls = TlsClientContext::create(TlsClientSettings{
          consumer.ca_file, consumer.tls_verify, consumer.certificate, consumer.key});
      if (!tls.ok()) {
        // The message starts with the key's last part ("ca_file /x: ...").
        outcome.errors.push_back(diagnose.located(consumer.origin + "." + tls.status().message()));
      }
    }
  }
}

// Plans the threads on this machine or on threads.topology (mapped onto this machine).
void plan_threads(const Config& config, const Diagnose& diagnose, ServerConfig& compiled,
                  ServerConfigOutcome& outcome) {
  Result<threadpool::Topology> machine = threadpool::Topology::detect();
  if (!machine.ok()) {
    outcome.errors.push_back(ConfigDiagnostic{"", 0, 0, "", machine.status().message()});
    return;
  }
  const bool emulated = !config.threads.topology.empty();
  Result<threadpool::Topology> topology =
      emulated ? threadpool::Topology::emulated(config.threads.topology) : std::move(machine);
  if (!topology.ok()) {
    outcome.errors.push_back(diagnose("threads.topology", topology.status().message()));
    return;
  }
  Result<threadpool::PlacementPlan> plan =
      threadpool::plan_placement(*topology, placement_options(config, *topology));
  if (!plan.ok()) {
    outcome.errors.push_back(diagnose("threads", plan.status().message()));
    return;
  }
  if (emulated) {
    outcome.warnings.push_back(diagnose(
        "threads.topology", "serving on the emulated topology \"" + config.threads.topology +
                                "\" (" + std::to_string(topology->node_count()) +
                                " nodes), its PUs mapped onto this machine's: for "
                                "tests and planning, not for production"));
    compiled.plan = threadpool::map_onto_machine(std::move(*plan), *topology, *machine);
  } else {
    compiled.plan = std::move(*plan);
  }
}

// Returns: whether `earlier`'s target takes in every entry and attribute `later` targets, so
// that `later` is never reached (the first rule whose target matches decides). Only what is
// plain to see: `earlier` without a filter, its attrs all or a superset of later's (by name),
// its DN all or covering later's DN and scope. `ndn`: each rule's normalized DN ("" for none).
bool covers(const AccessRuleSpec& earlier, const std::string& earlier_ndn,
            const AccessRuleSpec& later, const std::string& later_ndn) {
  if (!earlier.filter.empty()) {
    return false;
  }
  if (!earlier.attrs.empty()) {
    if (later.attrs.empty()) {
      return false;
    }
    for (const std::string& attr : later.attrs) {
      if (std::none_of(earlier.attrs.begin(), earlier.attrs.end(),
                       [&](const std::string& e) { return schema::ascii_iequals(e, attr); })) {
        return false;
      }
    }
  }
  if (earlier.dn.empty()) {
    return true;
  }
  if (later.dn.empty()) {
    return false;
  }
  const bool same = earlier_ndn == later_ndn;
  const bool below = !same && ndn_at_or_below(later_ndn, earlier_ndn);
  switch (earlier.scope) {
    case DnScope::kSubtree:
      return same || below;
    case DnScope::kChildren:
      return below || (same && (later.scope == DnScope::kOne || later.scope == DnScope::kChildren));
    case DnScope::kBase:
    case DnScope::kOne:
      return same && later.scope == earlier.scope;
  }
  return false;
}

// [[access]] rules that an earlier rule hides: warnings.
void warn_hidden_rules(const ServerConfig& compiled, const Diagnose& diagnose,
                       ServerConfigOutcome& outcome) {
  const std::vector<AccessRuleSpec>& rules = compiled.config.access;
  const backend::SchemaDnNormalizer normalizer(*compiled.schema);
  std::vector<std::string> ndns;
  for (const AccessRuleSpec& rule : rules) {
    Result<schema::Dn> dn = schema::Dn::parse(rule.dn);
    ndns.push_back(rule.dn.empty() || !dn.ok() ? std::string() : dn->normalized(&normalizer));
  }
  for (std::size_t later = 1; later < rules.size(); ++later) {
    for (std::size_t earlier = 0; earlier < later; ++earlier) {
      if (covers(rules[earlier], ndns[earlier], rules[later], ndns[later])) {
        outcome.warnings.push_back(diagnose(
            rules[later].origin, "never reached: " + rules[earlier].origin +
                                     " comes first and targets every entry and attribute this "
                                     "rule does (the first rule whose target matches decides)"));
        break;
      }
    }
  }
}

}  // namespace

ServerConfigOutcome compile_server_config(const std::filesystem::path& path) {
  ServerConfigOutcome outcome;
  ConfigReport parsed = load_config_report(path);
  outcome.warnings = std::move(parsed.warnings);
  if (!parsed.ok()) {
    outcome.errors = std::move(parsed.errors);
    return outcome;
  }
  auto compiled = std::make_unique<ServerConfig>();
  compiled->config = std::move(*parsed.config);
  const Config& config = compiled->config;
  const std::string file = path.string();
  const Diagnose diagnose(file, config.key_lines);
  if (std::optional<ConfigDiagnostic> warning = rootpw_file_warning(config, path)) {
    outcome.warnings.push_back(std::move(*warning));
  }

  Result<std::unique_ptr<schema::Schema>> schema = load_schema(config);
  if (!schema.ok()) {
    // Names the schema file and line; which file the config names is schema.files.
    outcome.errors.push_back(ConfigDiagnostic{"", 0, 0, "", schema.status().message()});
    return outcome;
  }
  compiled->schema = std::move(*schema);
  compiled->catalog = std::make_unique<backend::AttributeCatalog>(*compiled->schema);

  // Each index on its own, as Directory::open resolves them, so that every bad one is named.
  for (std::size_t i = 0; i < config.database.indexes.size(); ++i) {
    const backend::IndexSpec& index = config.database.indexes[i];
    Result<backend::IndexSet> resolved =
        backend::IndexSet::configure(*compiled->catalog, std::span(&index, 1));
    if (!resolved.ok()) {
      outcome.errors.push_back(
          diagnose("database.indexes[" + std::to_string(i) + "]", resolved.status().message()));
    }
  }
  // As the operations check a bind's DN: a rootdn that fails it could never be bound as.
  if (!config.server.root_dn.empty()) {
    if (Result<schema::Dn> root = parse_checked_dn(*compiled->schema, config.server.root_dn);
        !root.ok()) {
      outcome.errors.push_back(diagnose("server.rootdn", root.status().message()));
    }
  }
  if (!config.default_policy_dn.empty()) {
    if (Result<schema::Dn> policy = parse_checked_dn(*compiled->schema, config.default_policy_dn);
        !policy.ok()) {
      outcome.errors.push_back(diagnose("passwords.default_policy", policy.status().message()));
    }
  }
  compile_consumers(*compiled, diagnose, outcome);
  Result<std::unique_ptr<AccessControl>> access =
      OperationContext::compile_access_rules(*compiled->catalog, config.access);
  if (access.ok()) {
    compiled->access = std::move(*access);
    warn_hidden_rules(*compiled, diagnose, outcome);
  } else {
    // It names the first bad rule; each rule on its own names every one.
    const std::size_t before = outcome.errors.size();
    for (const AccessRuleSpec& rule : config.access) {
      Result<std::unique_ptr<AccessControl>> one =
          OperationContext::compile_access_rules(*compiled->catalog, {rule});
      if (!one.ok()) {
        outcome.errors.push_back(diagnose.located(one.status().message()));
      }
    }
    if (outcome.errors.size() == before) {
      outcome.errors.push_back(diagnose.located(access.status().message()));
    }
  }
  if (config.tls.has_value()) {
    Result<std::unique_ptr<listener::TlsContext>> tls = listener::TlsContext::create(*config.tls);
    if (tls.ok()) {
      compiled->tls = std::move(*tls);
    } else {
      outcome.errors.push_back(diagnose.located(tls.status().message()));
    }
  }
  if (config.threads.dispatcher != "single") {
    plan_threads(config, diagnose, *compiled, outcome);
  }
  if (!config.server.user.empty()) {
    if (const passwd* user = getpwnam(config.server.user.c_str()); user == nullptr) {
      outcome.errors.push_back(diagnose("server.user", "no user \"" + config.server.user + "\""));
    } else {
      compiled->uid = user->pw_uid;
      compiled->gid = user->pw_gid;
    }
  }
  if (!config.server.group.empty()) {
    if (const group* found = getgrnam(config.server.group.c_str()); found == nullptr) {
      outcome.errors.push_back(
          diagnose("server.group", "no group \"" + config.server.group + "\""));
    } else {
      compiled->gid = found->gr_gid;
    }
  }
  if (!config.sasl_external_map.empty()) {
    Result<std::unique_ptr<ExternalMapRules>> rules =
        ExternalMapRules::compile(config.sasl_external_map);
    if (rules.ok()) {
      compiled->external_rules = std::move(*rules);
    } else {
      outcome.errors.push_back(diagnose.located(rules.status().message()));
    }
  }
  // A name, or a number as chown(1) takes one.
  const auto numeric = [](const std::string& text) -> std::optional<unsigned> {
    unsigned value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) {
      return std::nullopt;
    }
    return value;
  };
  if (const std::string& owner = config.server.ldapi_owner; !owner.empty()) {
    if (const passwd* user = getpwnam(owner.c_str()); user != nullptr) {
      compiled->ldapi_uid = user->pw_uid;
    } else if (std::optional<unsigned> id = numeric(owner)) {
      compiled->ldapi_uid = static_cast<uid_t>(*id);
    } else {
      outcome.errors.push_back(diagnose("server.ldapi_owner", "no user \"" + owner + "\""));
    }
  }
  if (const std::string& group_name = config.server.ldapi_group; !group_name.empty()) {
    if (const group* found = getgrnam(group_name.c_str()); found != nullptr) {
      compiled->ldapi_gid = found->gr_gid;
    } else if (std::optional<unsigned> id = numeric(group_name)) {
      compiled->ldapi_gid = static_cast<gid_t>(*id);
    } else {
      outcome.errors.push_back(diagnose("server.ldapi_group", "no group \"" + group_name + "\""));
    }
  }
  if (outcome.errors.empty()) {
    outcome.compiled = std::move(compiled);
  }
  return outcome;
}

void report_server_config(const ServerConfigOutcome& outcome, std::ostream& err) {
  for (const ConfigDiagnostic& warning : outcome.warnings) {
    err << warning.to_string(warning.file.empty() ? "numadir: warning" : "warning") << "\n";
  }
  for (const ConfigDiagnostic& error : outcome.errors) {
    err << (error.file.empty() ? "numadir: " : "") << error.to_string() << "\n";
  }
  err.flush();
}

}  // namespace numadir::server
