// Tests of the listening sockets (listener/listen_socket.h): an address another socket listens
// on is refused, naming it and its process; numadir's own group still shares its port; a
// stopped server's port is free at once; ldapi:// socket files (stale, live, mode, removal).
#include "listener/listen_socket.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "listener/frontend.h"
#include "tests/listener/frontend_test_util.h"

namespace numadir::listener {
namespace {

// Another server's listening socket, as one in another process would be (same uid): bound with
// SO_REUSEADDR and SO_REUSEPORT, as numadir before this check bound every socket.
struct OtherListener {
  explicit OtherListener(int family, const char* address, std::uint16_t port = 0) {
    fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd >= 0);
    const int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on));
    sockaddr_storage storage{};
    socklen_t length = 0;
    if (family == AF_INET) {
      auto& in = reinterpret_cast<sockaddr_in&>(storage);
      in.sin_family = AF_INET;
      in.sin_port = htons(port);
      inet_pton(AF_INET, address, &in.sin_addr);
      length = sizeof(in);
    } else {
      auto& in6 = reinterpret_cast<sockaddr_in6&>(storage);
      in6.sin6_family = AF_INET6;
      in6.sin6_port = htons(port);
      inet_pton(AF_INET6, address, &in6.sin6_addr);
      length = sizeof(in6);
    }
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&storage), length) == 0);
    REQUIRE(listen(fd, 16) == 0);
    getsockname(fd, reinterpret_cast<sockaddr*>(&storage), &length);
    this->port = ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in&>(storage).sin_port
                                         : reinterpret_cast<sockaddr_in6&>(storage).sin6_port);
  }
  ~OtherListener() { ::close(fd); }
  int fd = -1;
  std::uint16_t port = 0;
};

ListenUrl tcp(const std::string& host, std::uint16_t port) {
  return ListenUrl{"ldap", host, port, ""};
}

void close_all(const ListenSockets& sockets) {
  for (const int fd : sockets.fds) {
    ::close(fd);
  }
}

std::string this_process() { return "by process " + std::to_string(getpid()); }

TEST_CASE("open_listen_sockets: an address another socket listens on is refused naming it") {
  OtherListener other(AF_INET, "127.0.0.1");
  const ListenUrl url = tcp("127.0.0.1", other.port);
  auto opened = open_listen_sockets(url, 2, {});
  REQUIRE_FALSE(opened.ok());
  CHECK(opened.status().code() == StatusCode::kAlreadyExists);
  const std::string message = opened.status().message();
  CAPTURE(message);
  CHECK(message.starts_with(url.to_string() + ": address already in use " + this_process()));
}

TEST_CASE("open_listen_sockets: a wildcard and a specific address overlap either way") {
  SUBCASE("0.0.0.0 held, 127.0.0.1 asked") {
    OtherListener other(AF_INET, "0.0.0.0");
    auto opened = open_listen_sockets(tcp("127.0.0.1", other.port), 1, {});
    REQUIRE_FALSE(opened.ok());
    CHECK(opened.status().message().find(this_process()) != std::string::npos);
  }
  SUBCASE("127.0.0.1 held, every address (dual stack) asked") {
    OtherListener other(AF_INET, "127.0.0.1");
    auto opened = open_listen_sockets(tcp("", other.port), 1, {});
    REQUIRE_FALSE(opened.ok());
    CHECK(opened.status().message().find("already in use") != std::string::npos);
  }
  SUBCASE("127.0.0.1 held, ::1 asked: no overlap") {
    OtherListener other(AF_INET, "127.0.0.1");
    auto opened = open_listen_sockets(tcp("::1", other.port), 1, {});
    if (!opened.ok()) {
      // A host without IPv6 loopback cannot bind ::1 at all; that is not an overlap.
      CHECK(opened.status().message().find("already in use") == std::string::npos);
    } else {
      close_all(*opened);
    }
  }
}

TEST_CASE("check_exclusive: a socket that joined the port's reuseport group is found") {
  // The kernel lets a second SO_REUSEPORT socket of the same uid bind (the race the probe
  // leaves open); the check after binding sees it.
  OtherListener other(AF_INET, "127.0.0.1");
  OtherListener joined(AF_INET, "127.0.0.1", other.port);
  const ListenUrl url = tcp("127.0.0.1", other.port);
  const Status alone = check_exclusive(url, {joined.fd});
  REQUIRE_FALSE(alone.ok());
  CHECK(alone.code() == StatusCode::kAlreadyExists);
  CHECK(alone.message().find(this_process()) != std::string::npos);
  CHECK(check_exclusive(url, {other.fd, joined.fd}).ok());  // Its own group: nobody else.
}

TEST_CASE("open_listen_sockets: port 0 gives every socket of the group one port") {
  auto opened = open_listen_sockets(tcp("127.0.0.1", 0), 3, {});
  REQUIRE_MESSAGE(opened.ok(), opened.status().to_string());
  REQUIRE(opened->fds.size() == 3);
  CHECK(opened->bound.port != 0);
  for (const int fd : opened->fds) {
    sockaddr_in address{};
    socklen_t length = sizeof(address);
    REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0);
    CHECK(ntohs(address.sin_port) == opened->bound.port);
  }
  // And a second group on that port is refused: numadir's sockets are no exception.
  auto second = open_listen_sockets(opened->bound, 1, {});
  CHECK_FALSE(second.ok());
  close_all(*opened);
}

// Whether /proc/net/tcp holds a TIME_WAIT (06) connection with local port `port`.
bool time_wait_on(std::uint16_t port) {
  std::ifstream in("/proc/net/tcp");
  std::string line;
  char hex[8];
  std::snprintf(hex, sizeof(hex), ":%04X", port);
  while (std::getline(in, line)) {
    if (line.find(std::string(hex) + " ") != std::string::npos &&
        line.find(" 06 ") != std::string::npos) {
      return true;
    }
  }
  return false;
}

TEST_CASE("open_listen_sockets: a stopped server's TIME_WAIT connections do not keep its port") {
  std::uint16_t port = 0;
  {
    auto first = open_listen_sockets(tcp("127.0.0.1", 0), 1, {});
    REQUIRE(first.ok());
    port = first->bound.port;
    testing::Client client(port);
    const int accepted = accept(first->fds[0], nullptr, nullptr);
    REQUIRE(accepted >= 0);
    ::close(accepted);  // The server closes first: its side waits in TIME_WAIT.
    char byte;
    CHECK(::recv(client.fd(), &byte, 1, 0) == 0);
    close_all(*first);
  }
  REQUIRE(time_wait_on(port));
  auto second = open_listen_sockets(tcp("127.0.0.1", port), 2, {});
  REQUIRE_MESSAGE(second.ok(), second.status().to_string());
  close_all(*second);
}

// A fresh directory for socket files, removed at the end.
struct TempDir {
  TempDir() {
    char pattern[] = "/tmp/numadir-ldapi-XXXXXX";
    REQUIRE(mkdtemp(pattern) != nullptr);
    path = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string path;
};

ListenUrl ldapi(const std::string& path) { return ListenUrl{"ldapi", "", 0, path}; }

bool is_socket(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

TEST_CASE("open_listen_sockets: an ldapi socket gets its mode and a clean stop removes it") {
  TempDir dir;
  const std::string path = dir.path + "/ldapi";
  UnixSocketOptions options;
  options.mode = 0640;
  options.group = getgid();
  auto opened = open_listen_sockets(ldapi(path), 4, options);
  REQUIRE_MESSAGE(opened.ok(), opened.status().to_string());
  CHECK(opened->fds.size() == 1);  // One socket, whatever the listener count.
  struct stat st {};
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK(S_ISSOCK(st.st_mode));
  CHECK((st.st_mode & 07777) == 0640);
  CHECK(st.st_gid == getgid());
  testing::Client client(path);  // It listens.
  close_all(*opened);
  std::string error;
  CHECK(remove_unix_socket(*opened, error));
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("open_listen_sockets: a stale ldapi socket is replaced and a live one refused") {
  TempDir dir;
  const std::string path = dir.path + "/ldapi";
  auto first = open_listen_sockets(ldapi(path), 1, {});
  REQUIRE(first.ok());
  SUBCASE("live: refused, naming the process that accepts on it") {
    auto second = open_listen_sockets(ldapi(path), 1, {});
    REQUIRE_FALSE(second.ok());
    CHECK(second.status().code() == StatusCode::kAlreadyExists);
    CAPTURE(second.status().message());
    CHECK(second.status().message().starts_with(ldapi(path).to_string() +
                                                ": address already in use " + this_process()));
    CHECK(is_socket(path));  // Left alone.
    testing::Client client(path);
    close_all(*first);
  }
  SUBCASE("stale (its server gone without removing it): replaced") {
    close_all(*first);  // As a killed server leaves it.
    REQUIRE(is_socket(path));
    auto second = open_listen_sockets(ldapi(path), 1, {});
    REQUIRE_MESSAGE(second.ok(), second.status().to_string());
    testing::Client client(path);
    // The first's removal leaves the second's file alone.
    std::string error;
    CHECK(remove_unix_socket(*first, error));
    CHECK(is_socket(path));
    close_all(*second);
    CHECK(remove_unix_socket(*second, error));
    CHECK_FALSE(std::filesystem::exists(path));
  }
}

TEST_CASE("open_listen_sockets: an ldapi socket in a missing directory says so") {
  TempDir dir;
  const std::string path = dir.path + "/missing/ldapi";
  auto opened = open_listen_sockets(ldapi(path), 1, {});
  REQUIRE_FALSE(opened.ok());
  CHECK(opened.status().message() == ldapi(path).to_string() + ": the directory " + dir.path +
                                         "/missing does not exist (create it, or systemd's "
                                         "RuntimeDirectory= does)");
}

TEST_CASE("open_listen_sockets: a file at the ldapi path that is not a socket is refused") {
  TempDir dir;
  const std::string path = dir.path + "/ldapi";
  std::ofstream(path) << "data";
  auto opened = open_listen_sockets(ldapi(path), 1, {});
  REQUIRE_FALSE(opened.ok());
  CHECK(opened.status().message().find("is not a socket") != std::string::npos);
  CHECK(std::filesystem::file_size(path) == 4);  // Never removed.
}

// Records what each connection's ConnectionInfo said.
class InfoHandler : public testing::FakeHandler {
 public:
  std::unique_ptr<Session> open_session(const ConnectionInfo& info) override {
    {
      std::lock_guard lock(mu);
      infos.push_back(info);
    }
    return FakeHandler::open_session(info);
  }
  std::mutex mu;
  std::vector<ConnectionInfo> infos;
};

TEST_CASE("Frontend: an ldapi listener beside TCP ones serves with the peer's credentials") {
  TempDir dir;
  const std::string path = dir.path + "/ldapi";
  FrontendOptions options;
  options.urls = {tcp("127.0.0.1", 0), ldapi(path)};
  options.listeners = 3;  // The ldapi socket goes to one of them; the others hold none.
  testing::Server<InfoHandler> server(options);
  {
    testing::Client local(path);
    local.search(1, "cn=local");
    local.flush();
    local.expect_search(1, "cn=local");
    testing::Client remote(server.port);
    remote.search(2, "cn=remote");
    remote.flush();
    remote.expect_search(2, "cn=remote");
  }
  {
    std::lock_guard lock(server.handler.mu);
    REQUIRE(server.handler.infos.size() == 2);
    const ConnectionInfo& local =
        server.handler.infos[0].local ? server.handler.infos[0] : server.handler.infos[1];
    const ConnectionInfo& remote =
        server.handler.infos[0].local ? server.handler.infos[1] : server.handler.infos[0];
    CHECK(local.local);
    CHECK(local.peer == "PATH=" + path);
    CHECK(local.local_port == 0);
    REQUIRE(local.peer_credentials.has_value());
    CHECK(local.peer_credentials->uid == getuid());
    CHECK(local.peer_credentials->gid == getgid());
    CHECK(local.peer_credentials->pid == getpid());
    CHECK_FALSE(remote.local);
    CHECK_FALSE(remote.peer_credentials.has_value());
    CHECK(remote.local_port == server.port);
  }
  CHECK(server.frontend->bound_urls()[1].path == path);
  server.frontend->stop();
  CHECK_FALSE(std::filesystem::exists(path));  // Removed at a clean stop.
}

TEST_CASE("Frontend: a port another process holds fails the start and nothing is left open") {
  OtherListener other(AF_INET, "127.0.0.1");
  TempDir dir;
  const std::string path = dir.path + "/ldapi";
  FrontendOptions options;
  options.urls = {ldapi(path), tcp("127.0.0.1", other.port)};
  options.listeners = 2;
  testing::FakeHandler handler;
  auto started = Frontend::start(options, handler);
  REQUIRE_FALSE(started.ok());
  CHECK(started.status().message().find("127.0.0.1:" + std::to_string(other.port) +
                                        ": address already in use") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(path));  // The ldapi socket it had made is gone again.
}

}  // namespace
}  // namespace numadir::listener
