// listener/listen_url.cc: see listen_url.h.
#include "listener/listen_url.h"

#include <arpa/inet.h>

#include <charconv>

namespace numadir::listener {
namespace {

Status bad_url(std::string_view text, std::string_view why) {
  return Status(StatusCode::kInvalidArgument,
                "listen URL \"" + std::string(text) + "\": " + std::string(why));
}

bool is_numeric_address(const std::string& host) {
  unsigned char buffer[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buffer) == 1 ||
         inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

}  // namespace

std::string ListenUrl::to_string() const {
  const bool v6 = host.find(':') != std::string::npos;
  return scheme + "://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<ListenUrl> parse_listen_url(std::string_view text) {
  ListenUrl url;
  const std::size_t colon_slashes = text.find("://");
  if (colon_slashes == std::string_view::npos) {
    return bad_url(text, "expected ldap://address:port or ldaps://address:port");
  }
  url.scheme = std::string(text.substr(0, colon_slashes));
  if (url.scheme != "ldap" && url.scheme != "ldaps") {
    return bad_url(text, "unsupported scheme \"" + url.scheme + "\" (ldap or ldaps)");
  }
  if (url.scheme == "ldaps") {
    url.port = 636;
  }
  std::string_view rest = text.substr(colon_slashes + 3);
  if (!rest.empty() && rest.back() == '/') {
    rest.remove_suffix(1);
  }
  std::string_view port_text;
  if (!rest.empty() && rest.front() == '[') {
    const std::size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      return bad_url(text, "unclosed '[' in the address");
    }
    url.host = std::string(rest.substr(1, close - 1));
    rest.remove_prefix(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        return bad_url(text, "expected ':' and a port after the address");
      }
      port_text = rest.substr(1);
    }
  } else {
    const std::size_t colon = rest.rfind(':');
    url.host = std::string(colon == std::string_view::npos ? rest : rest.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = rest.substr(colon + 1);
    }
  }
  if (!url.host.empty() && !is_numeric_address(url.host)) {
    return bad_url(text, "\"" + url.host + "\" is not a numeric IPv4 or IPv6 address");
  }
  if (!port_text.empty()) {
    unsigned port = 0;
    const auto [end, error] =
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (error != std::errc() || end != port_text.data() + port_text.size() || port > 65535) {
      return bad_url(text, "bad port \"" + std::string(port_text) + "\"");
    }
    url.port = static_cast<std::uint16_t>(port);
  }
  return url;
}

}  // namespace numadir::listener
