// server/formats/config_security.cc: the numadir.toml sections that decide who may connect and
// what they may do: [tls] (certificates, protocol policy, client certificates, SASL EXTERNAL's
// mapping) and [[access]] (the ordered access rules).
//
// Thread contract: as detail/config_toml.h; the thread parsing a config.
#include "schema/ascii.h"
#include "schema/dn.h"
#include "schema/filter.h"
#include "server/formats/detail/config.h"
#include "server/formats/detail/config_toml.h"

namespace numadir::server::detail {

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
    } else if (required && !table.contains(key)) {
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

void parse_sasl(const toml::table& table, Config& config, Problems& problems) {
  check_keys(table, "sasl", {"external_map"}, problems);
  const toml::node* node = table.get("external_map");
  if (node == nullptr) {
    return;
  }
  const toml::array* array = node->as_array();
  if (array == nullptr || !array->is_array_of_tables()) {
    problems.add("sasl.external_map", "must be an array of tables ([[sasl.external_map]])");
    return;
  }
  for (std::size_t i = 0; i < array->size(); ++i) {
    const toml::table& entry = *array->get(i)->as_table();
    const std::string prefix = "sasl.external_map[" + std::to_string(i) + "]";
    check_keys(entry, prefix, {"match", "dn"}, problems);
    ExternalMapRuleSpec rule;
    if (!get_string(entry, prefix, "match", rule.match, problems) && !problems.any()) {
      problems.add(prefix + ".match", "missing (a regular expression over the identity's DN)");
    }
    if (!get_string(entry, prefix, "dn", rule.dn, problems) && !problems.any()) {
      problems.add(prefix + ".dn", "missing (the DN to bind as)");
    }
    config.sasl_external_map.push_back(std::move(rule));
  }
}

// [[access]]: the ordered access rules (server/operations/access_control.h). Their attribute names
// and DNs are checked against the schema when they are compiled, by the one compile check-config
// and serve share (server/commands/server_config.h).
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
      } else if (!clause.contains("access")) {
        problems.add(at + ".access", "missing");
      }
      rule.by.push_back(std::move(subject));
    }
    config.access.push_back(std::move(rule));
  }
}

}  // namespace numadir::server::detail
