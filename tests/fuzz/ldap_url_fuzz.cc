// libFuzzer target for parse_ldap_url (server/client/ldap_url.h), the client-side URL of
// `numadir stats -H` and a replication provider. Any input may be rejected; an accepted one must
// keep its properties, or the target traps:
//   - parse(to_string()) succeeds and gives the same scheme, host, port and path;
//   - ldapi: the path is absolute, fits a sockaddr_un and holds no NUL byte, and the URL names
//     no host and no port; ldap and ldaps: a port from 1 to 65535 and no path.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "listener/listen_url.h"
#include "server/client/ldap_url.h"

namespace {

void check(bool condition) {
  if (!condition) {
    __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto url = numadir::server::parse_ldap_url(text);
  if (!url.ok()) {
    return 0;
  }
  if (url->is_local()) {
    check(!url->path.empty() && url->path.front() == '/');
    check(url->path.size() <= numadir::listener::kMaxLdapiPathBytes);
    check(url->path.find('\0') == std::string_view::npos);
    check(url->host.empty() && url->port == 0 && !url->tls());
  } else {
    check(url->scheme == "ldap" || url->scheme == "ldaps");
    check(url->port != 0 && url->path.empty());
  }
  auto again = numadir::server::parse_ldap_url(url->to_string());
  check(again.ok());
  check(again->scheme == url->scheme);
  check(again->host == url->host);
  check(again->port == url->port);
  check(again->path == url->path);
  return 0;
}
