// listener/listen_url.h: listen URLs as written in numadir.toml ("ldap://127.0.0.1:389",
// "ldap://[::1]:1389", "ldap://:389" for every address, "ldaps://:636").
//
// Thread contract: values; parse on any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace numadir::listener {

struct ListenUrl {
  std::string scheme;        // "ldap", or "ldaps": TLS from the first byte (default port 636).
  std::string host;          // Numeric address; empty = every address (IPv6 any, dual stack).
  std::uint16_t port = 389;  // 0 = the kernel picks one (tests).

  std::string to_string() const;
};

// Errors: kInvalidArgument naming the problem (unknown scheme, a host name rather than an
//   address, a bad port, a path or query after the port).
Result<ListenUrl> parse_listen_url(std::string_view text);

}  // namespace numadir::listener
