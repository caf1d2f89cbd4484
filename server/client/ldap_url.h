// server/client/ldap_url.h: the URL of a server numadir connects to as a client (a replication
// provider, `numadir stats`' target): "ldap://HOST[:PORT]" or "ldaps://HOST[:PORT]", HOST a
// DNS name, an IPv4 address or an IPv6 address in brackets ("ldap://[::1]:389"). Unlike a listen
// URL (listener/listen_url.h) the host may be a name, and port 0 is refused.
//
// Thread contract: values; parse on any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace numadir::server {

struct LdapUrl {
  std::string scheme;        // "ldap", or "ldaps": TLS from the first byte.
  std::string host;          // A name or an address (IPv6 without its brackets); may be empty.
  std::uint16_t port = 389;  // 389 for ldap://, 636 for ldaps:// unless given.

  bool tls() const { return scheme == "ldaps"; }
  // Returns: "scheme://host:port", an IPv6 host in brackets.
  std::string to_string() const;
};

// Parses `text` (the scheme in either case; one trailing '/' allowed).
// Errors: kInvalidArgument "\"<text>\": <problem>": another scheme, a path, query or user part
//   after the host, a host that is neither a name nor an address (an IPv6 address outside
//   brackets included), a port that is not 1..65535.
Result<LdapUrl> parse_ldap_url(std::string_view text);

}  // namespace numadir::server
