#include "perf/auth_workload.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "base/check.h"

namespace numadir::perf {

void expand_template(std::string_view text, std::uint64_t number, std::string& out) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t percent = text.find('%', pos);
    if (percent == std::string_view::npos || percent + 1 == text.size()) {
      out.append(text.substr(pos));
      return;
    }
    out.append(text.substr(pos, percent - pos));
    const char next = text[percent + 1];
    if (next == 'd') {
      char digits[24];
      const auto end = std::to_chars(digits, digits + sizeof digits, number).ptr;
      out.append(digits, end);
      pos = percent + 2;
    } else if (next == '%') {
      out.push_back('%');
      pos = percent + 2;
    } else {
      out.push_back('%');
      pos = percent + 1;
    }
  }
}

namespace {

bool parse_percent(std::string_view text, double& value) {
  if (text.empty()) {
    return false;
  }
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size() && value > 0 && value <= 100;
}

bool parse_port(std::string_view text, std::uint16_t& port) {
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value == 0 ||
      value > 65535) {
    return false;
  }
  port = static_cast<std::uint16_t>(value);
  return true;
}

}  // namespace

Result<HotSet> parse_hot_set(std::string_view text) {
  const std::size_t colon = text.find(':');
  HotSet hot;
  if (colon == std::string_view::npos || !parse_percent(text.substr(0, colon), hot.auth_percent) ||
      !parse_percent(text.substr(colon + 1), hot.user_percent)) {
    return invalid_argument(
        "--hot wants X:Y, X% of auths on the first Y% of users, each in "
        "(0, 100]; got '" +
        std::string(text) + "'");
  }
  return hot;
}

Result<LdapUrl> parse_ldap_url(std::string_view url) {
  const std::size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) {
    return invalid_argument("URL '" + std::string(url) + "' has no scheme: use ldap://host:port");
  }
  LdapUrl parsed;
  const std::string_view scheme = url.substr(0, scheme_end);
  if (scheme == "ldaps") {
    parsed.ldaps = true;
    parsed.port = 636;
  } else if (scheme != "ldap") {
    return unsupported("URL '" + std::string(url) + "': only ldap:// and ldaps:// are supported");
  }
  std::string_view rest = url.substr(scheme_end + 3);
  if (!rest.empty() && rest.back() == '/') {
    rest.remove_suffix(1);
  }
  std::string_view port;
  if (!rest.empty() && rest.front() == '[') {
    const std::size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      return invalid_argument("URL '" + std::string(url) + "': unterminated [IPv6] host");
    }
    parsed.host = std::string(rest.substr(1, close - 1));
    rest.remove_prefix(close + 1);
    if (!rest.empty() && rest.front() != ':') {
      return invalid_argument("URL '" + std::string(url) + "': unexpected text after the host");
    }
    port = rest.empty() ? std::string_view{} : rest.substr(1);
  } else {
    const std::size_t colon = rest.find(':');
    parsed.host = std::string(rest.substr(0, colon));
    port = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    if (colon != std::string_view::npos && port.empty()) {
      return invalid_argument("URL '" + std::string(url) + "': empty port");
    }
  }
  if (parsed.host.empty() || parsed.host.find('/') != std::string::npos) {
    return invalid_argument("URL '" + std::string(url) + "': want ldap://host:port");
  }
  if (!port.empty() && !parse_port(port, parsed.port)) {
    return invalid_argument("URL '" + std::string(url) + "': bad port '" + std::string(port) + "'");
  }
  return parsed;
}

Result<AuthWorkload> AuthWorkload::create(WorkloadOptions options) {
  if (options.first_user > options.last_user) {
    return invalid_argument("--first must not be above --last");
  }
  Result<schema::Filter> filter = schema::Filter::parse(options.filter_template);
  if (!filter.ok()) {
    return invalid_argument("--filter '" + options.filter_template +
                            "': " + filter.status().message());
  }
  if (!options.passwords.empty() && options.passwords.size() <= options.last_user) {
    return invalid_argument("--password-file has " + std::to_string(options.passwords.size()) +
                            " lines; user " + std::to_string(options.last_user) + " needs line " +
                            std::to_string(options.last_user + 1));
  }
  // Written so that NaN fails too.
  if (!(options.wrong_percent >= 0 && options.wrong_percent <= 100)) {
    return invalid_argument("--wrong-percent must be in [0, 100]");
  }
  if (options.bind_dn_template.empty()) {
    options.bind_dn_template = "uid=user%d," + options.base;
  }
  return AuthWorkload(std::move(options), std::move(*filter));
}

std::uint64_t AuthWorkload::pick_user(Rng& rng) const {
  const std::uint64_t users = user_count();
  const HotSet& hot = options_.hot;
  if (hot.auth_percent > 0) {
    // The hot set is at least one user, and the cold set the rest (if any).
    const auto hot_users = std::clamp<std::uint64_t>(
        static_cast<std::uint64_t>(std::ceil(static_cast<double>(users) * hot.user_percent / 100)),
        1, users);
    std::uniform_real_distribution<double> coin(0, 100);
    if (hot_users == users || coin(rng) < hot.auth_percent) {
      return options_.first_user +
             std::uniform_int_distribution<std::uint64_t>(0, hot_users - 1)(rng);
    }
    return options_.first_user +
           std::uniform_int_distribution<std::uint64_t>(hot_users, users - 1)(rng);
  }
  return options_.first_user + std::uniform_int_distribution<std::uint64_t>(0, users - 1)(rng);
}

bool AuthWorkload::pick_wrong_password(Rng& rng) const {
  const double percent = options_.wrong_percent;
  if (percent <= 0 || percent >= 100) {
    return percent >= 100;
  }
  return std::uniform_real_distribution<double>(0, 100)(rng) < percent;
}

void AuthWorkload::build_filter(std::uint64_t user, schema::Filter& filter,
                                std::vector<std::string>& scratch) const {
  // Two strings per node (attribute, value); resize only grows, so the strings keep capacity.
  if (scratch.size() < 2 * filter_.size()) {
    scratch.resize(2 * filter_.size());
  }
  filter.clear();
  // Preorder: node i is opened in turn, and closed once the nodes of its subtree are added.
  // Filter::parse nests at most 64 and/or/not levels, plus a leaf and its substring pieces.
  std::uint32_t open_nodes[128];
  std::uint32_t depth = 0;
  for (std::uint32_t i = 0; i < filter_.size(); ++i) {
    const schema::FilterNode& node = filter_.node(i);
    std::string& attribute = scratch[2 * i];
    std::string& value = scratch[2 * i + 1];
    attribute.clear();
    value.clear();
    expand_template(node.attribute, user, attribute);
    expand_template(node.value, user, value);
    const std::uint32_t index = filter.open(node.kind, attribute, value);
    if (node.kind == schema::FilterKind::kExtensible) {
      filter.set_extensible(index, node.matching_rule, node.dn_attributes);
    }
    NUMADIR_CHECK(depth < 128, "filter template nested deeper than Filter::parse allows");
    open_nodes[depth++] = i;
    while (depth > 0 && filter_.node(open_nodes[depth - 1]).end == filter.size()) {
      filter.close(open_nodes[--depth]);
    }
  }
}

void AuthWorkload::password(std::uint64_t user, std::string& out) const {
  out.clear();
  if (!options_.passwords.empty()) {
    out.append(options_.passwords[user]);
    return;
  }
  expand_template(options_.password_template, user, out);
}

void AuthWorkload::wrong_password(std::uint64_t user, std::string& out) const {
  password(user, out);
  out.append(kWrongPasswordSuffix);
}

void AuthWorkload::bind_dn(std::uint64_t user, std::string& out) const {
  out.clear();
  expand_template(options_.bind_dn_template, user, out);
}

void AuthWorkload::build_modify(std::int32_t message_id, std::uint64_t user, std::uint64_t serial,
                                listener::wire::LdapMessage& request, std::string& dn,
                                std::string& value) const {
  bind_dn(user, dn);
  value.assign("authrate modify ");
  expand_template("%d ", user, value);
  expand_template("%d", serial, value);
  request.reset(message_id, listener::wire::ProtocolOp::kModifyRequest);
  listener::wire::ModifyRequest& modify = request.modify_request;
  modify.object = dn;
  modify.operations.push_back(listener::wire::ModifyOperation::kReplace);
  modify.modifications.add(kModifyAttribute);
  modify.modifications.add_value(value);
}

}  // namespace numadir::perf
