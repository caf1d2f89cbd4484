// The server list of a run with several -H URLs: how the option values split into URLs, which
// server each connection starts on, where it goes after a failure, and when it waits.
#include "perf/auth_servers.h"

#include <doctest/doctest.h>
#include <netinet/in.h>

#include <string>
#include <vector>

namespace numadir::perf {
namespace {

// `usable` and `reachable` by server: a server is usable when its name resolved.
ServerList make_list(const std::vector<bool>& usable, const std::vector<bool>& reachable) {
  std::vector<ServerTarget> servers(usable.size());
  for (std::size_t i = 0; i < servers.size(); ++i) {
    servers[i].url = "ldap://server" + std::to_string(i);
    servers[i].address_len = usable[i] ? sizeof(sockaddr_in) : 0;
    servers[i].reachable_at_start = reachable[i];
  }
  return ServerList(std::move(servers));
}

TEST_CASE("split_url_list: repeated options and lists separated by spaces or commas") {
  SUBCASE("one URL") {
    auto urls = split_url_list({"ldap://a:389"});
    REQUIRE(urls.ok());
    CHECK(*urls == std::vector<std::string>{"ldap://a:389"});
  }
  SUBCASE("repeated -H") {
    auto urls = split_url_list({"ldap://a", "ldaps://b:636"});
    REQUIRE(urls.ok());
    CHECK(*urls == std::vector<std::string>{"ldap://a", "ldaps://b:636"});
  }
  SUBCASE("a list in one value") {
    auto urls = split_url_list({"ldap://a ldap://b,ldap://c", " ,ldap://d  , "});
    REQUIRE(urls.ok());
    CHECK(*urls == std::vector<std::string>{"ldap://a", "ldap://b", "ldap://c", "ldap://d"});
  }
  SUBCASE("duplicates are kept") {
    auto urls = split_url_list({"ldap://a,ldap://a"});
    REQUIRE(urls.ok());
    CHECK(urls->size() == 2);
  }
}

TEST_CASE("split_url_list: no URL or too many is an error") {
  CHECK(split_url_list({}).status().code() == StatusCode::kInvalidArgument);
  CHECK(split_url_list({" , "}).status().code() == StatusCode::kInvalidArgument);
  std::string many;
  for (std::size_t i = 0; i <= kMaxServers; ++i) {
    many += "ldap://h" + std::to_string(i) + " ";
  }
  CHECK(split_url_list({many}).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("ServerList: connections start round-robin and skip servers the preflight missed") {
  SUBCASE("all reachable") {
    const ServerList list = make_list({true, true, true}, {true, true, true});
    for (std::size_t i = 0; i < 7; ++i) {
      CHECK(list.initial(i) == i % 3);
    }
  }
  SUBCASE("one unreachable at start: its connections take the next reachable one") {
    const ServerList list = make_list({true, true, true}, {true, false, true});
    CHECK(list.initial(0) == 0);
    CHECK(list.initial(1) == 2);
    CHECK(list.initial(2) == 2);
    CHECK(list.initial(4) == 2);
  }
  SUBCASE("the last unreachable wraps to the first") {
    const ServerList list = make_list({true, true}, {true, false});
    CHECK(list.initial(1) == 0);
    CHECK(list.initial(3) == 0);
  }
  SUBCASE("a name that did not resolve is never used") {
    const ServerList list = make_list({false, true}, {false, true});
    CHECK(list.initial(0) == 1);
    CHECK(list.usable_count() == 1);
  }
}

TEST_CASE("ServerList: a failed server's connection goes to the next usable one") {
  SUBCASE("in order and wrapping") {
    const ServerList list = make_list({true, true, true}, {true, true, true});
    CHECK(list.next(0) == 1);
    CHECK(list.next(1) == 2);
    CHECK(list.next(2) == 0);
  }
  SUBCASE("whether or not the preflight reached it") {
    const ServerList list = make_list({true, true, true}, {true, false, true});
    CHECK(list.next(0) == 1);
  }
  SUBCASE("skipping a name that did not resolve") {
    const ServerList list = make_list({true, false, true}, {true, false, true});
    CHECK(list.next(0) == 2);
    CHECK(list.next(2) == 0);
  }
  SUBCASE("one server: itself") {
    const ServerList list = make_list({true}, {true});
    CHECK(list.next(0) == 0);
  }
}

TEST_CASE("ServerList: only a full round of failures waits") {
  constexpr std::int64_t kDelay = 100'000'000;
  SUBCASE("one server: every failure waits as it always did") {
    const ServerList list = make_list({true}, {true});
    CHECK(list.retry_delay_ns(1, kDelay) == kDelay);
    CHECK(list.retry_delay_ns(2, kDelay) == kDelay);
    CHECK(list.retry_delay_ns(1, 0) == 0);
  }
  SUBCASE("three servers: the next one is tried at once, the round's end waits") {
    const ServerList list = make_list({true, true, true}, {true, true, true});
    CHECK(list.retry_delay_ns(1, kDelay) == 0);
    CHECK(list.retry_delay_ns(2, kDelay) == 0);
    CHECK(list.retry_delay_ns(3, kDelay) == kDelay);
    CHECK(list.retry_delay_ns(4, kDelay) == 0);
    CHECK(list.retry_delay_ns(6, kDelay) == kDelay);
  }
  SUBCASE("a round counts the usable servers only") {
    const ServerList list = make_list({true, false, true}, {true, false, true});
    CHECK(list.retry_delay_ns(1, kDelay) == 0);
    CHECK(list.retry_delay_ns(2, kDelay) == kDelay);
  }
}

}  // namespace
}  // namespace numadir::perf
