// server/operations/external_map.cc: see external_map.h.
#include "server/operations/external_map.h"

#include "schema/ascii.h"

namespace numadir::server {

namespace {

// Appends `value` escaped as an RFC 4514 attribute value.
void append_escaped(std::string& out, std::string_view value) {
  for (std::size_t i = 0; i < value.size(); ++i) {
    const char c = value[i];
    const bool special = c == ',' || c == '+' || c == '"' || c == '\\' || c == '<' || c == '>' ||
                         c == ';' || c == '=';
    const bool edge = (i == 0 && (c == ' ' || c == '#')) || (i + 1 == value.size() && c == ' ');
    if (special || edge) {
      out += '\\';
      out += c;
    } else if (c == '\0') {
      out += "\\00";
    } else {
      out += c;
    }
  }
}

}  // namespace

Result<std::string> expand_external_map(std::string_view map, const listener::TlsPeer& peer) {
  std::string out;
  std::size_t at = 0;
  while (at < map.size()) {
    const std::size_t open = map.find('{', at);
    if (open == std::string_view::npos) {
      out.append(map.substr(at));
      break;
    }
    out.append(map.substr(at, open - at));
    const std::size_t close = map.find('}', open);
    if (close == std::string_view::npos) {
      return invalid_argument("tls.external_map: unclosed '{'");
    }
    const std::string_view name = map.substr(open + 1, close - open - 1);
    if (name == "subject") {
      out += peer.subject;
    } else {
      bool found = false;
      for (const auto& [attribute, value] : peer.subject_attributes) {
        if (schema::ascii_iequals(attribute, name)) {
          append_escaped(out, value);
          found = true;
          break;
        }
      }
      if (!found) {
        return invalid_argument("the certificate subject \"" + peer.subject + "\" has no " +
                                std::string(name));
      }
    }
    at = close + 1;
  }
  return out;
}

std::string peercred_dn(uid_t uid, gid_t gid) {
  return "gidNumber=" + std::to_string(gid) + "+uidNumber=" + std::to_string(uid) +
         ",cn=peercred,cn=external,cn=auth";
}

Result<std::unique_ptr<ExternalMapRules>> ExternalMapRules::compile(
    const std::vector<ExternalMapRuleSpec>& specs) {
  std::unique_ptr<ExternalMapRules> out(new ExternalMapRules());
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const std::string key = "sasl.external_map[" + std::to_string(i) + "]";
    auto rule = std::make_unique<Rule>();
    // slapd's authz-regexp: POSIX extended, case-insensitive (DNs compare without case).
    if (const int rc = regcomp(&rule->regex, specs[i].match.c_str(), REG_EXTENDED | REG_ICASE);
        rc != 0) {
      char text[256];
      regerror(rc, &rule->regex, text, sizeof(text));
      return invalid_argument(key + ".match: \"" + specs[i].match + "\": " + text);
    }
    const std::size_t groups = rule->regex.re_nsub;
    rule->dn = specs[i].dn;
    out->rules_.push_back(std::move(rule));  // Owned now: freed even if the dn check fails.
    if (specs[i].dn.empty()) {
      return invalid_argument(key + ".dn: must not be empty");
    }
    const std::string& dn = specs[i].dn;
    for (std::size_t at = 0; at < dn.size(); ++at) {
      if (dn[at] != '$') {
        continue;
      }
      if (at + 1 < dn.size() && dn[at + 1] == '$') {
        ++at;
      } else if (at + 1 < dn.size() && dn[at + 1] >= '0' && dn[at + 1] <= '9') {
        if (static_cast<std::size_t>(dn[at + 1] - '0') > groups) {
          return invalid_argument(key + ".dn: $" + std::string(1, dn[at + 1]) + " but match has " +
                                  std::to_string(groups) + " group(s)");
        }
        ++at;
      } else {
        return invalid_argument(key + ".dn: '$' must be followed by a digit or '$'");
      }
    }
  }
  return out;
}

ExternalMapRules::~ExternalMapRules() {
  for (const std::unique_ptr<Rule>& rule : rules_) {
    regfree(&rule->regex);
  }
}

std::string ExternalMapRules::map(std::string_view authc_dn) const {
  const std::string subject(authc_dn);
  for (const std::unique_ptr<Rule>& rule : rules_) {
    regmatch_t groups[10];
    if (regexec(&rule->regex, subject.c_str(), 10, groups, 0) != 0) {
      continue;
    }
    std::string out;
    const std::string& dn = rule->dn;
    for (std::size_t at = 0; at < dn.size(); ++at) {
      if (dn[at] != '$' || at + 1 >= dn.size()) {
        out += dn[at];
        continue;
      }
      ++at;
      if (dn[at] == '$') {
        out += '$';
        continue;
      }
      const regmatch_t& group = groups[dn[at] - '0'];  // compile() checked the digit.
      if (group.rm_so >= 0) {
        out.append(subject, static_cast<std::size_t>(group.rm_so),
                   static_cast<std::size_t>(group.rm_eo - group.rm_so));
      }
    }
    return out;
  }
  return subject;
}

}  // namespace numadir::server
