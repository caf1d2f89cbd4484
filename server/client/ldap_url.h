// server/client/ldap_url.h: the URL of a server numadir connects to as a client (a replication
// provider, `numadir stats`' target): "ldap://HOST[:PORT]" or "ldaps://HOST[:PORT]", HOST a
// DNS name, an IPv4 address or an IPv6 address in brackets ("ldap://[::1]:389"); or a
// Unix-domain socket in the three forms a listen URL takes (listener/listen_url.h, whose parser
// decodes it): "ldapi:///run/numadir/ldapi", slapd's "ldapi://%2Frun%2Fnumadir%2Fldapi", and
// "ldapi://" alone for listener::kDefaultLdapiPath. Unlike a listen URL the host may be a name,
// and port 0 is refused.
//
// Thread contract: values; parse on any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace numadir::server {

struct LdapUrl {
  // "ldap"; "ldaps": TLS from the first byte; "ldapi": a Unix-domain stream socket at `path`.
  std::string scheme;
  std::string host;          // A name or an address (IPv6 without its brackets); may be empty.
  std::uint16_t port = 389;  // 389 for ldap://, 636 for ldaps:// unless given; 0 for ldapi://.
  std::string path = {};     // ldapi: the socket's absolute path (decoded).

  bool tls() const { return scheme == "ldaps"; }
  bool is_local() const { return scheme == "ldapi"; }
  // Returns: "scheme://host:port", an IPv6 host in brackets; for ldapi the percent-encoded form
  //   ("ldapi://%2Frun%2Fnumadir%2Fldapi", as libldap's clients take it).
  std::string to_string() const;
};

// Parses `text` (the scheme in either case; one trailing '/' allowed after a host).
// Errors: kInvalidArgument "\"<text>\": <problem>": another scheme, a path, query or user part
//   after the host, a host that is neither a name nor an address (an IPv6 address outside
//   brackets included), a port that is not 1..65535; for ldapi: listener::parse_listen_url's
//   reasons (a relative path, one too long for a socket address, a bad or NUL percent escape,
//   a query).
Result<LdapUrl> parse_ldap_url(std::string_view text);

}  // namespace numadir::server
