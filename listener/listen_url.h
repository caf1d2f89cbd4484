// listener/listen_url.h: listen URLs as written in numadir.toml ("ldap://127.0.0.1:389",
// "ldap://[::1]:1389", "ldap://:389" for every address, "ldaps://:636"), and Unix-domain socket
// URLs: "ldapi:///run/numadir/ldapi" (the path after "ldapi://"), slapd's percent-encoded form
// "ldapi://%2Frun%2Fnumadir%2Fldapi", and "ldapi://" alone for kDefaultLdapiPath.
//
// Thread contract: values; parse on any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace numadir::listener {

// Where "ldapi://" with no path listens (slapd's is /var/run/slapd/ldapi; /var/run is a link to
// /run on every current distribution).
inline constexpr std::string_view kDefaultLdapiPath = "/run/numadir/ldapi";
// The longest socket path: sockaddr_un's sun_path (108 bytes on Linux) less its NUL.
inline constexpr std::size_t kMaxLdapiPathBytes = 107;

struct ListenUrl {
  // "ldap"; "ldaps": TLS from the first byte (default port 636); "ldapi": a Unix-domain stream
  // socket at `path` (host and port unused).
  std::string scheme;
  std::string host;          // Numeric address; empty = every address (IPv6 any, dual stack).
  std::uint16_t port = 389;  // 0 = the kernel picks one (tests).
  std::string path = {};     // ldapi: the socket's absolute path (decoded).

  bool is_local() const { return scheme == "ldapi"; }
  // Returns: "ldap://host:port", or for ldapi the percent-encoded form libldap's clients take
  //   ("ldapi://%2Frun%2Fnumadir%2Fldapi", as ldapsearch -H wants it).
  std::string to_string() const;
};

// Errors: kInvalidArgument naming the problem (unknown scheme, a host name rather than an
//   address, a bad port, a path or query after the port; for ldapi: a relative path, one longer
//   than kMaxLdapiPathBytes, a bad or NUL percent escape, a query).
Result<ListenUrl> parse_listen_url(std::string_view text);

}  // namespace numadir::listener
