// tests/server/client/ldap_connection_test.cc: what LdapConnection
// (server/client/ldap_connection.h) sets on its socket (TCP_NODELAY; the keepalive when asked, off
// otherwise), its message IDs, and that a closed connection refuses further use; against the fake
// provider of the replication tests (tests/server/replication/fake_provider.h). Over ldapi://:
// a Unix-domain socket without TCP's options, and the errors of a missing socket, of a file that
// is not one and of a socket nobody listens on.
#include "server/client/ldap_connection.h"

#include <doctest/doctest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "tests/backend/backend_test_util.h"

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

// A listening (or, with listen_too false, only bound) Unix-domain socket at `path`.
class LocalSocket {
 public:
  LocalSocket(const std::string& path, bool listen_too) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    REQUIRE(path.size() < sizeof address.sun_path);
    path.copy(address.sun_path, path.size());
    REQUIRE(::bind(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
    if (listen_too) {
      REQUIRE(::listen(fd_, 4) == 0);
    }
  }
  ~LocalSocket() { ::close(fd_); }
  LocalSocket(const LocalSocket&) = delete;
  LocalSocket& operator=(const LocalSocket&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

Result<LdapUrl> ldapi_url_of(const std::string& path) { return parse_ldap_url("ldapi://" + path); }

TEST_CASE("LdapConnection: ldapi connects over a Unix socket without TCP options") {
  backend::testing::TempDir dir;
  const std::string path = (dir.path() / "ldapi").string();
  LocalSocket server(path, true);
  Result<LdapUrl> url = ldapi_url_of(path);
  REQUIRE(url.ok());
  LdapConnectOptions options;
  options.keepalive = TcpKeepalive{240, 10, 30};  // Asked for, and skipped: not TCP.
  auto connection = LdapConnection::connect(*url, options);
  REQUIRE_MESSAGE(connection.ok(), connection.status().to_string());
  const int fd = (*connection)->socket_for_test();
  CHECK(socket_option(fd, SOL_SOCKET, SO_DOMAIN) == AF_UNIX);
  CHECK(socket_option(fd, SOL_SOCKET, SO_KEEPALIVE) == 0);
  const int accepted = ::accept4(server.fd(), nullptr, nullptr, SOCK_CLOEXEC);
  REQUIRE(accepted >= 0);
  listener::wire::LdapMessage message;
  message.reset(1, listener::wire::ProtocolOp::kUnbindRequest);
  REQUIRE((*connection)->send(message).ok());
  char bytes[16];
  // An UnbindRequest of message 1: SEQUENCE { INTEGER 1, [APPLICATION 2] NULL }.
  CHECK(::recv(accepted, bytes, sizeof bytes, 0) == 7);
  CHECK(std::string(bytes, 7) == std::string("\x30\x05\x02\x01\x01\x42\x00", 7));
  ::close(accepted);
}

TEST_CASE("LdapConnection: ldapi errors say what is at the path") {
  backend::testing::TempDir dir;
  SUBCASE("nothing: no such socket") {
    auto connection = LdapConnection::connect(*ldapi_url_of((dir.path() / "typo").string()), {});
    REQUIRE_FALSE(connection.ok());
    CHECK(connection.status().code() == StatusCode::kNotFound);
    CHECK(connection.status().message() == "no such socket (No such file or directory)");
  }
  SUBCASE("a plain file: not a socket") {
    const std::string path = (dir.path() / "file").string();
    std::ofstream(path) << "x";
    auto connection = LdapConnection::connect(*ldapi_url_of(path), {});
    REQUIRE_FALSE(connection.ok());
    CHECK(connection.status().code() == StatusCode::kIo);
    CHECK(connection.status().message() == "not a socket (Connection refused)");
  }
  SUBCASE("a socket nobody listens on: the system's reason") {
    const std::string path = (dir.path() / "stale").string();
    LocalSocket stale(path, false);
    auto connection = LdapConnection::connect(*ldapi_url_of(path), {});
    REQUIRE_FALSE(connection.ok());
    CHECK(connection.status().code() == StatusCode::kIo);
    CHECK(connection.status().message() == "Connection refused");
  }
  SUBCASE("under a file: the system's reason") {
    const std::string file = (dir.path() / "file").string();
    std::ofstream(file) << "x";
    auto connection = LdapConnection::connect(*ldapi_url_of(file + "/ldapi"), {});
    REQUIRE_FALSE(connection.ok());
    CHECK(connection.status().message() == "Not a directory");
  }
}

}  // namespace
}  // namespace numadir::server
