// server/client/ldap_url.cc: see ldap_url.h.
#include "server/client/ldap_url.h"

#include <arpa/inet.h>

#include <charconv>

#include "listener/listen_url.h"
#include "schema/ascii.h"

namespace numadir::server {
namespace {

Status bad_url(std::string_view text, std::string_view why) {
  return invalid_argument("\"" + std::string(text) + "\": " + std::string(why));
}

// A DNS name or an IPv4 address: letters, digits, '-', '_' and '.', no empty label.
bool is_host_name(std::string_view host) {
  if (host.empty() || host.front() == '.' || host.find("..") != std::string_view::npos) {
    return false;
  }
  for (const char c : host) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) {
      return false;
    }
  }
  return true;
}

// ldapi: decoded by the listener's parser, so that a client takes exactly the URLs a listener
// does; its "listen URL \"...\": " prefix gives way to this parser's.
Result<LdapUrl> parse_ldapi_client_url(std::string_view text, std::string_view rest) {
  const std::string canonical = "ldapi://" + std::string(rest);
  Result<listener::ListenUrl> parsed = listener::parse_listen_url(canonical);
  if (!parsed.ok()) {
    std::string why = parsed.status().message();
    const std::string prefix = "listen URL \"" + canonical + "\": ";
    if (why.starts_with(prefix)) {
      why.erase(0, prefix.size());
    }
    return bad_url(text, why);
  }
  LdapUrl url;
  url.scheme = "ldapi";
  url.port = 0;
  url.path = std::move(parsed->path);
  return url;
}

}  // namespace

std::string LdapUrl::to_string() const {
  if (is_local()) {
    listener::ListenUrl local;
    local.scheme = scheme;
    local.path = path;
    return local.to_string();
  }
  const bool v6 = host.find(':') != std::string::npos;
  return scheme + "://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<LdapUrl> parse_ldap_url(std::string_view text) {
  constexpr std::string_view kForm =
      "must be ldap://HOST[:PORT], ldaps://HOST[:PORT] or ldapi://PATH";
  const std::size_t colon_slashes = text.find("://");
  if (colon_slashes == std::string_view::npos) {
    return bad_url(text, kForm);
  }
  LdapUrl url;
  url.scheme = schema::ascii_lowered(text.substr(0, colon_slashes));
  if (url.scheme == "ldapi") {
    return parse_ldapi_client_url(text, text.substr(colon_slashes + 3));
  }
  if (url.scheme == "ldaps") {
    url.port = 636;
  } else if (url.scheme != "ldap") {
    return bad_url(text, "unsupported scheme \"" + std::string(text.substr(0, colon_slashes)) +
                             "\" (" + std::string(kForm) + ")");
  }
  std::string_view rest = text.substr(colon_slashes + 3);
  if (!rest.empty() && rest.back() == '/') {
    rest.remove_suffix(1);
  }
  if (rest.find_first_of("/?@#") != std::string_view::npos) {
    return bad_url(text,
                   "only a host and a port may follow the scheme (no DN, attributes, "
                   "filter or user)");
  }
  std::string_view port_text;
  if (!rest.empty() && rest.front() == '[') {
    const std::size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      return bad_url(text, "no ']' after the IPv6 address");
    }
    url.host = std::string(rest.substr(1, close - 1));
    unsigned char address[sizeof(in6_addr)];
    if (inet_pton(AF_INET6, url.host.c_str(), address) != 1) {
      return bad_url(text, "\"" + url.host + "\" is not an IPv6 address");
    }
    rest.remove_prefix(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        return bad_url(text, "':' and a port must follow ']'");
      }
      port_text = rest.substr(1);
      if (port_text.empty()) {
        return bad_url(text, "no port after ':'");
      }
    }
  } else {
    const std::size_t colon = rest.find(':');
    url.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = rest.substr(colon + 1);
      if (port_text.find(':') != std::string_view::npos) {
        return bad_url(text, "an IPv6 address goes in brackets: ldap://[::1]:389");
      }
      if (port_text.empty()) {
        return bad_url(text, "no port after ':'");
      }
    }
    if (!url.host.empty() && !is_host_name(url.host)) {
      return bad_url(text, "\"" + url.host + "\" is not a host name or address");
    }
  }
  if (!port_text.empty()) {
    unsigned port = 0;
    const auto [end, error] =
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (error != std::errc() || end != port_text.data() + port_text.size() || port == 0 ||
        port > 65535) {
      return bad_url(text, "bad port \"" + std::string(port_text) + "\" (1 to 65535)");
    }
    url.port = static_cast<std::uint16_t>(port);
  }
  return url;
}

}  // namespace numadir::server
