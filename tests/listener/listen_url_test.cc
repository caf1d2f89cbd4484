// Tests of listen URL parsing (listener/listen_url.h): TCP forms and ldapi:// socket paths.
#include "listener/listen_url.h"

#include <doctest/doctest.h>

#include <string>

namespace numadir::listener {
namespace {

TEST_CASE("parse_listen_url: ldap and ldaps addresses and ports") {
  auto url = parse_listen_url("ldap://127.0.0.1:3890");
  REQUIRE(url.ok());
  CHECK(url->scheme == "ldap");
  CHECK(url->host == "127.0.0.1");
  CHECK(url->port == 3890);
  CHECK_FALSE(url->is_local());
  CHECK(url->to_string() == "ldap://127.0.0.1:3890");
  url = parse_listen_url("ldaps://[::1]");
  REQUIRE(url.ok());
  CHECK(url->port == 636);
  CHECK(url->to_string() == "ldaps://[::1]:636");
  url = parse_listen_url("ldap://:389/");
  REQUIRE(url.ok());
  CHECK(url->host.empty());
}

TEST_CASE("parse_listen_url: ldapi paths in both forms and the default") {
  SUBCASE("a plain absolute path") {
    auto url = parse_listen_url("ldapi:///run/numadir/ldapi");
    REQUIRE(url.ok());
    CHECK(url->scheme == "ldapi");
    CHECK(url->is_local());
    CHECK(url->path == "/run/numadir/ldapi");
  }
  SUBCASE("slapd's percent-encoded form, either case of hex") {
    auto url = parse_listen_url("ldapi://%2Frun%2fnumadir%2Fldapi");
    REQUIRE(url.ok());
    CHECK(url->path == "/run/numadir/ldapi");
  }
  SUBCASE("a bare ldapi:// is the default path") {
    for (const char* text : {"ldapi://", "ldapi:///"}) {
      auto url = parse_listen_url(text);
      REQUIRE(url.ok());
      CHECK(url->path == std::string(kDefaultLdapiPath));
    }
  }
  SUBCASE("to_string is the percent-encoded form libldap clients take, and parses back") {
    auto url = parse_listen_url("ldapi:///tmp/a dir/sock-1.s");
    REQUIRE(url.ok());
    CHECK(url->to_string() == "ldapi://%2Ftmp%2Fa%20dir%2Fsock-1.s");
    auto again = parse_listen_url(url->to_string());
    REQUIRE(again.ok());
    CHECK(again->path == "/tmp/a dir/sock-1.s");
  }
  SUBCASE("the longest path a sockaddr_un holds") {
    const std::string longest = "/" + std::string(kMaxLdapiPathBytes - 1, 'x');
    auto url = parse_listen_url("ldapi://" + longest);
    REQUIRE(url.ok());
    CHECK(url->path == longest);
  }
}

TEST_CASE("parse_listen_url: bad ldapi URLs are refused saying why") {
  struct Case {
    std::string text;
    std::string why;
  };
  const Case cases[] = {
      {"ldapi://run%2Fnumadir", "must be absolute"},
      {"ldapi://relative/path", "must be absolute"},
      {"ldapi://%2F" + std::string(kMaxLdapiPathBytes, 'x'), "longer than a Unix socket"},
      {"ldapi://%2Frun%2", "bad percent escape"},
      {"ldapi://%2Frun%zz", "bad percent escape"},
      {"ldapi://%2Frun%00x", "NUL"},
      {"ldapi://%2Frun%2Fsock?x", "no query"},
      {"ldapi://%2Frun%2F", "names a directory"},
      {"ldapx://%2Frun", "unsupported scheme"},
      {std::string("ldapi:///run/x\0y", 16), "NUL"},
      {std::string("ldap://127.0.0.1\0x:389", 22), "NUL"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    auto url = parse_listen_url(c.text);
    REQUIRE_FALSE(url.ok());
    CHECK(url.status().code() == StatusCode::kInvalidArgument);
    CHECK(url.status().message().find(c.why) != std::string::npos);
    CHECK(url.status().message().find(c.text) != std::string::npos);
  }
}

}  // namespace
}  // namespace numadir::listener
