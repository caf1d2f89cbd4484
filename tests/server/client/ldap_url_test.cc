// Tests for the client-side URL and keepalive syntaxes (server/client/ldap_url.h,
// server/client/tcp_keepalive.h): what a provider URL may be (ldapi:// included), and slapd's
// keepalive form.
#include "server/client/ldap_url.h"

#include <doctest/doctest.h>

#include <string>

#include "server/client/tcp_keepalive.h"

namespace numadir::server {
namespace {

TEST_CASE("LdapUrl: names addresses and default ports") {
  struct Case {
    const char* text;
    const char* scheme;
    const char* host;
    std::uint16_t port;
    const char* printed;
  };
  const Case cases[] = {
      {"ldap://ldap1.example.com", "ldap", "ldap1.example.com", 389,
       "ldap://ldap1.example.com:389"},
      {"ldaps://ldap1.example.com", "ldaps", "ldap1.example.com", 636,
       "ldaps://ldap1.example.com:636"},
      {"LDAPS://Host_1:1636/", "ldaps", "Host_1", 1636, "ldaps://Host_1:1636"},
      {"ldap://10.0.0.1:3890", "ldap", "10.0.0.1", 3890, "ldap://10.0.0.1:3890"},
      {"ldap://[::1]", "ldap", "::1", 389, "ldap://[::1]:389"},
      {"ldaps://[2001:db8::7]:6360", "ldaps", "2001:db8::7", 6360, "ldaps://[2001:db8::7]:6360"},
      {"ldap://", "ldap", "", 389, "ldap://:389"},
      {"ldap://:1389", "ldap", "", 1389, "ldap://:1389"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    Result<LdapUrl> url = parse_ldap_url(c.text);
    REQUIRE_MESSAGE(url.ok(), url.status().to_string());
    CHECK(url->scheme == c.scheme);
    CHECK(url->host == c.host);
    CHECK(url->port == c.port);
    CHECK(url->tls() == (std::string(c.scheme) == "ldaps"));
    CHECK(url->to_string() == c.printed);
  }
}

TEST_CASE("LdapUrl: other forms are refused with the reason") {
  struct Case {
    const char* text;
    const char* reason;
  };
  const Case cases[] = {
      {"ldap1.example.com", "must be ldap://HOST[:PORT], ldaps://HOST[:PORT] or ldapi://PATH"},
      {"ldapx://%2Frun%2Fslapd", "unsupported scheme \"ldapx\""},
      {"http://h", "unsupported scheme \"http\""},
      {"ldap://h/dc=example,dc=com", "only a host and a port may follow the scheme"},
      {"ldap://h:389/??sub", "only a host and a port may follow the scheme"},
      {"ldap://user@h", "only a host and a port may follow the scheme"},
      {"ldap://[::1", "no ']' after the IPv6 address"},
      {"ldap://[not-v6]:389", "\"not-v6\" is not an IPv6 address"},
      {"ldap://[::1]389", "':' and a port must follow ']'"},
      {"ldap://[::1]:", "no port after ':'"},
      {"ldap://h:", "no port after ':'"},
      {"ldap://::1", "an IPv6 address goes in brackets"},
      {"ldap://h:0", "bad port \"0\" (1 to 65535)"},
      {"ldap://h:65536", "bad port \"65536\""},
      {"ldap://h:12x", "bad port \"12x\""},
      {"ldap://h:-1", "bad port \"-1\""},
      {"ldap://bad host", "\"bad host\" is not a host name or address"},
      {"ldap://a..b", "\"a..b\" is not a host name or address"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    Result<LdapUrl> url = parse_ldap_url(c.text);
    REQUIRE_FALSE(url.ok());
    CHECK(url.status().code() == StatusCode::kInvalidArgument);
    CHECK(url.status().message().starts_with("\"" + std::string(c.text) + "\": "));
    CHECK_MESSAGE(url.status().message().find(c.reason) != std::string::npos,
                  url.status().message());
  }
}

TEST_CASE("LdapUrl: ldapi takes the listener's three forms") {
  struct Case {
    const char* text;
    const char* path;
  };
  const Case cases[] = {
      {"ldapi:///run/numadir/ldapi", "/run/numadir/ldapi"},
      {"ldapi://%2Frun%2Fnumadir%2Fldapi", "/run/numadir/ldapi"},
      {"ldapi://%2frun%2fslapd%2fldapi", "/run/slapd/ldapi"},
      {"LDAPI:///tmp/x%20y", "/tmp/x y"},
      {"ldapi://", "/run/numadir/ldapi"},
      {"ldapi:///", "/run/numadir/ldapi"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    Result<LdapUrl> url = parse_ldap_url(c.text);
    REQUIRE_MESSAGE(url.ok(), url.status().to_string());
    CHECK(url->scheme == "ldapi");
    CHECK(url->is_local());
    CHECK_FALSE(url->tls());
    CHECK(url->host.empty());
    CHECK(url->port == 0);
    CHECK(url->path == c.path);
    // Printed as slapd's clients take it, and read back the same.
    Result<LdapUrl> again = parse_ldap_url(url->to_string());
    REQUIRE(again.ok());
    CHECK(again->path == c.path);
  }
  CHECK(parse_ldap_url("ldapi:///run/numadir/ldapi")->to_string() ==
        "ldapi://%2Frun%2Fnumadir%2Fldapi");
  CHECK_FALSE(parse_ldap_url("ldap://h")->is_local());
}

TEST_CASE("LdapUrl: bad ldapi URLs are refused with the listener's reason") {
  struct Case {
    const char* text;
    const char* reason;
  };
  const std::string long_path = "ldapi:///" + std::string(120, 'a');
  const Case cases[] = {
      {"ldapi://run/numadir/ldapi", "the socket path must be absolute"},
      {"ldapi:///run/ldapi?x", "takes no query or fragment"},
      {"ldapi://%2Frun%2", "bad percent escape"},
      {"ldapi://%2Frun%zz", "bad percent escape"},
      {"ldapi:///run/%00", "may not hold a NUL byte"},
      {"ldapi:///run/numadir/", "the socket path names a directory"},
      {long_path.c_str(), "longer than a Unix socket address holds (107)"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    Result<LdapUrl> url = parse_ldap_url(c.text);
    REQUIRE_FALSE(url.ok());
    CHECK(url.status().code() == StatusCode::kInvalidArgument);
    // The client's prefix, not the listener's "listen URL".
    CHECK(url.status().message().starts_with("\"" + std::string(c.text) + "\": "));
    CHECK(url.status().message().find("listen URL") == std::string::npos);
    CHECK_MESSAGE(url.status().message().find(c.reason) != std::string::npos,
                  url.status().message());
  }
}

TEST_CASE("TcpKeepalive: slapd's idle:probes:interval") {
  Result<TcpKeepalive> off = parse_keepalive("");
  REQUIRE(off.ok());
  CHECK_FALSE(off->enabled());
  Result<TcpKeepalive> on = parse_keepalive("240:10:30");
  REQUIRE(on.ok());
  CHECK(*on == TcpKeepalive{240, 10, 30});
  CHECK(on->enabled());
  CHECK(parse_keepalive("32767:127:32767").ok());
  struct Case {
    const char* text;
    const char* reason;
  };
  const Case cases[] = {
      {"240", "must be \"idle:probes:interval\""},
      {"240:10", "must be \"idle:probes:interval\""},
      {"240:10:30:5", "must be \"idle:probes:interval\""},
      {"0:10:30", "idle must be a number from 1 to 32767"},
      {"240:0:30", "probes must be a number from 1 to 127"},
      {"240:128:30", "probes must be a number from 1 to 127"},
      {"240:10:32768", "interval must be a number from 1 to 32767"},
      {"x:10:30", "idle must be"},
      {":10:30", "idle must be"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    Result<TcpKeepalive> parsed = parse_keepalive(c.text);
    REQUIRE_FALSE(parsed.ok());
    CHECK(parsed.status().code() == StatusCode::kInvalidArgument);
    CHECK_MESSAGE(parsed.status().message().find(c.reason) != std::string::npos,
                  parsed.status().message());
  }
}

}  // namespace
}  // namespace numadir::server
