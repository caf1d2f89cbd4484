// listener/listen_url.cc: see listen_url.h.
#include "listener/listen_url.h"

#include <arpa/inet.h>

#include <charconv>

#include "schema/ascii.h"

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

// ldapi: what follows "ldapi://", decoded: "" or "/" for the default path, "/abs/path", or
// slapd's "%2Fabs%2Fpath" (both forms percent-decoded).
Result<ListenUrl> parse_ldapi(std::string_view text, std::string_view rest) {
  ListenUrl url;
  url.scheme = "ldapi";
  url.port = 0;
  if (rest.find_first_of("?#") != std::string_view::npos) {
    return bad_url(text, "an ldapi:// URL takes no query or fragment");
  }
  if (rest.empty() || rest == "/") {
    url.path = std::string(kDefaultLdapiPath);
    return url;
  }
  std::string path;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] != '%') {
      path += rest[i];
      continue;
    }
    const int high = i + 2 < rest.size() ? schema::ascii_hex_value(rest[i + 1]) : -1;
    const int low = i + 2 < rest.size() ? schema::ascii_hex_value(rest[i + 2]) : -1;
    if (high < 0 || low < 0) {
      return bad_url(text, "bad percent escape (expected %XX with two hex digits)");
    }
    const char c = static_cast<char>(high * 16 + low);
    if (c == '\0') {
      return bad_url(text, "the socket path may not hold a NUL byte (%00)");
    }
    path += c;
    i += 2;
  }
  if (path.front() != '/') {
    return bad_url(text,
                   "the socket path must be absolute (ldapi:///run/numadir/ldapi or "
                   "ldapi://%2Frun%2Fnumadir%2Fldapi)");
  }
  if (path.size() > kMaxLdapiPathBytes) {
    return bad_url(text, "the socket path is " + std::to_string(path.size()) +
                             " bytes, longer than a Unix socket address holds (" +
                             std::to_string(kMaxLdapiPathBytes) + ")");
  }
  if (path.back() == '/') {
    return bad_url(text, "the socket path names a directory");
  }
  url.path = std::move(path);
  return url;
}

}  // namespace

std::string ListenUrl::to_string() const {
  if (is_local()) {
    // Percent-encodes what a URL's host part may not hold, '/' first of all (RFC 3986 §2.1).
    std::string out = "ldapi://";
    static constexpr char kHex[] = "0123456789ABCDEF";
    for (const char c : path) {
      const auto u = static_cast<unsigned char>(c);
      const bool plain = (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') ||
                         (u >= '0' && u <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
      if (plain) {
        out += c;
      } else {
        out += '%';
        out += kHex[u >> 4];
        out += kHex[u & 0xf];
      }
    }
    return out;
  }
  const bool v6 = host.find(':') != std::string::npos;
  return scheme + "://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<ListenUrl> parse_listen_url(std::string_view text) {
  ListenUrl url;
  if (text.find('\0') != std::string_view::npos) {
    return bad_url(text, "a NUL byte in the URL");  // C calls would cut the text there.
  }
  const std::size_t colon_slashes = text.find("://");
  if (colon_slashes == std::string_view::npos) {
    return bad_url(text, "expected ldap://address:port, ldaps://address:port or ldapi://path");
  }
  url.scheme = std::string(text.substr(0, colon_slashes));
  if (url.scheme == "ldapi") {
    return parse_ldapi(text, text.substr(colon_slashes + 3));
  }
  if (url.scheme != "ldap" && url.scheme != "ldaps") {
    return bad_url(text, "unsupported scheme \"" + url.scheme + "\" (ldap, ldaps or ldapi)");
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
