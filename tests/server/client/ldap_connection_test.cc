// tests/server/client/ldap_connection_test.cc: what LdapConnection
// (server/client/ldap_connection.h) sets on its socket (TCP_NODELAY; the keepalive when asked, off
// otherwise), its message IDs, and that a closed connection refuses further use; against the fake
// provider of the replication tests (tests/server/replication/fake_provider.h).
#include "server/client/ldap_connection.h"

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "tests/server/replication/fake_provider.h"

namespace numadir::server {
namespace {

using replication::testing::FakeProvider;
using replication::testing::FakeSession;

int socket_option(int fd, int level, int name) {
  int value = -1;
  socklen_t size = sizeof value;
  REQUIRE(getsockopt(fd, level, name, &value, &size) == 0);
  return value;
}

TEST_CASE("LdapConnection: TCP keepalive as asked and TCP_NODELAY") {
  FakeProvider provider([](FakeSession& session) {
    listener::wire::LdapMessage request;
    while (session.read(request)) {
    }
  });
  Result<LdapUrl> url = parse_ldap_url(provider.url());
  REQUIRE(url.ok());
  LdapConnectOptions options;
  SUBCASE("off by default") {
    auto connection = LdapConnection::connect(*url, options);
    REQUIRE_MESSAGE(connection.ok(), connection.status().to_string());
    const int fd = (*connection)->socket_for_test();
    CHECK(socket_option(fd, SOL_SOCKET, SO_KEEPALIVE) == 0);
    CHECK(socket_option(fd, IPPROTO_TCP, TCP_NODELAY) == 1);
  }
  SUBCASE("idle:probes:interval") {
    options.keepalive = TcpKeepalive{240, 10, 30};
    auto connection = LdapConnection::connect(*url, options);
    REQUIRE_MESSAGE(connection.ok(), connection.status().to_string());
    const int fd = (*connection)->socket_for_test();
    CHECK(socket_option(fd, SOL_SOCKET, SO_KEEPALIVE) == 1);
    CHECK(socket_option(fd, IPPROTO_TCP, TCP_KEEPIDLE) == 240);
    CHECK(socket_option(fd, IPPROTO_TCP, TCP_KEEPCNT) == 10);
    CHECK(socket_option(fd, IPPROTO_TCP, TCP_KEEPINTVL) == 30);
  }
}

TEST_CASE("LdapConnection: message IDs count from 1 and a closed connection refuses use") {
  FakeProvider provider([](FakeSession& session) {
    listener::wire::LdapMessage request;
    while (session.read(request)) {
    }
  });
  auto connection = LdapConnection::connect(*parse_ldap_url(provider.url()), {});
  REQUIRE(connection.ok());
  LdapConnection& link = **connection;
  CHECK(link.next_message_id() == 1);
  CHECK(link.next_message_id() == 2);
  CHECK(link.usable());
  CHECK_FALSE(link.tls_active());
  CHECK(link.tls_version().empty());
  link.close();
  link.close();  // Idempotent.
  CHECK_FALSE(link.usable());
  CHECK(link.socket_for_test() == -1);
  listener::wire::LdapMessage message;
  message.reset(3, listener::wire::ProtocolOp::kUnbindRequest);
  CHECK(link.send(message).message() == "the connection is closed");
  CHECK(link.receive(message, 10).message() == "the connection is closed");
}

}  // namespace
}  // namespace numadir::server
