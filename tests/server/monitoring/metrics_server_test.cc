// Tests for the metrics endpoint (server/monitoring/metrics_server.h) over real sockets on
// 127.0.0.1, port 0: both formats by Accept, keep-alive and pipelining, HEAD, every refusal with
// its status, the bearer token, a slowloris client and a client that never reads closed after
// the timeout while another is served meanwhile, max_connections, TLS with and without a client
// certificate, stop() with clients connected, and an address in use. The render callback is
// checked to run on the thread named "metrics".
#include "server/monitoring/metrics_server.h"

#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "tests/listener/tls_test_util.h"
#include "tests/wait_until.h"

namespace numadir::server {
namespace {

using listener::testing::Pki;
using numadir::testing::wait_until;

// A render callback that says which format it was asked for and notes the thread it ran on.
struct Renderer {
  std::atomic<int> calls{0};
  std::atomic<bool> off_thread{false};  // Set when a call ran on a thread not named "metrics".
  std::atomic<std::size_t> padding{0};  // Extra body bytes (for a client that does not read).

  MetricsRender callback() {
    return [this](ExpositionFormat format, std::string& out) {
      char name[16] = {};
      pthread_getname_np(pthread_self(), name, sizeof(name));
      if (std::string(name) != "metrics") {
        off_thread = true;
      }
      ++calls;
      out = format == ExpositionFormat::kOpenMetrics ? "openmetrics_up 1\n# EOF\n"
                                                     : "prometheus_up 1\n";
      out.append(padding.load(), '#');
    };
  }
};

int connect_to(std::uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  return fd;
}

void send_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t put = ::send(fd, text.data(), text.size(), MSG_NOSIGNAL);
    REQUIRE(put > 0);
    text.remove_prefix(static_cast<std::size_t>(put));
  }
}

struct Response {
  int status = 0;  // 0: the connection closed (or failed) before a response.
  std::string headers;
  std::string body;
  std::string header(std::string_view name) const {
    const std::string key = "\r\n" + std::string(name) + ": ";
    const std::size_t at = headers.find(key);
    if (at == std::string::npos) {
      return "";
    }
    const std::size_t start = at + key.size();
    return headers.substr(start, headers.find("\r\n", start) - start);
  }
};

// Reads one response from `read` (a function reading into a buffer: recv or SSL_read), its body
// by Content-Length unless `head`. `pending` keeps bytes read past it.
template <typename Read>
Response read_response(Read&& read, std::string& pending, bool head = false) {
  Response response;
  char buffer[65536];
  std::size_t end = std::string::npos;
  while ((end = pending.find("\r\n\r\n")) == std::string::npos) {
    const long got = read(buffer, sizeof(buffer));
    if (got <= 0) {
      return response;
    }
    pending.append(buffer, static_cast<std::size_t>(got));
  }
  response.headers = pending.substr(0, end + 2);
  pending.erase(0, end + 4);
  response.status = std::stoi(response.headers.substr(9, 3));
  const std::size_t length = head ? 0 : std::stoul(response.header("Content-Length"));
  while (pending.size() < length) {
    const long got = read(buffer, sizeof(buffer));
    if (got <= 0) {
      response.status = 0;
      return response;
    }
    pending.append(buffer, static_cast<std::size_t>(got));
  }
  response.body = pending.substr(0, length);
  pending.erase(0, length);
  return response;
}

Response read_response(int fd, std::string& pending, bool head = false) {
  return read_response(
      [fd](char* buffer, std::size_t size) {
        return static_cast<long>(::recv(fd, buffer, size, 0));
      },
      pending, head);
}

Response exchange(std::uint16_t port, std::string_view request) {
  const int fd = connect_to(port);
  send_all(fd, request);
  std::string pending;
  Response response = read_response(fd, pending);
  ::close(fd);
  return response;
}

// Whether the server closed `fd`: recv sees EOF (or a reset) within the socket's timeout.
bool closed_by_server(int fd) {
  char buffer[4096];
  for (;;) {
    const ssize_t got = ::recv(fd, buffer, sizeof(buffer), 0);
    if (got == 0 || (got < 0 && errno == ECONNRESET)) {
      return true;
    }
    if (got < 0) {
      return false;  // The timeout: still open.
    }
  }
}

std::unique_ptr<MetricsServer> start_server(Renderer& renderer, MetricsServerOptions options = {}) {
  auto server = MetricsServer::start(options, renderer.callback());
  REQUIRE_MESSAGE(server.ok(), server.status().message());
  return std::move(*server);
}

constexpr std::string_view kGet = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

TEST_CASE("MetricsServer: GET /metrics in the format the Accept header asks for") {
  Renderer renderer;
  auto server = start_server(renderer);
  CHECK(server->url() == "http://127.0.0.1:" + std::to_string(server->port()) + "/metrics");
  const Response text = exchange(server->port(), kGet);
  CHECK(text.status == 200);
  CHECK(text.header("Content-Type") == content_type(ExpositionFormat::kPrometheusText));
  CHECK(text.header("Content-Length") == std::to_string(text.body.size()));
  CHECK(text.body == "prometheus_up 1\n");
  const Response open_metrics = exchange(
      server->port(),
      "GET /metrics?debug=1 HTTP/1.1\r\nHost: h\r\nAccept: "
      "application/openmetrics-text;version=1.0.0;q=0.75,text/plain;version=0.0.4;q=0.5\r\n\r\n");
  CHECK(open_metrics.status == 200);
  CHECK(open_metrics.header("Content-Type") == content_type(ExpositionFormat::kOpenMetrics));
  CHECK(open_metrics.body == "openmetrics_up 1\n# EOF\n");
  CHECK(renderer.calls == 2);
  CHECK_FALSE(renderer.off_thread);
  CHECK(server->stats().scrapes == 2);
}

TEST_CASE("MetricsServer: keep-alive serves three requests on one connection") {
  Renderer renderer;
  auto server = start_server(renderer);
  const int fd = connect_to(server->port());
  std::string pending;
  send_all(fd, kGet);
  CHECK(read_response(fd, pending).status == 200);
  // The next two pipelined in one write: each answered in turn.
  send_all(fd, std::string(kGet) + std::string(kGet));
  const Response second = read_response(fd, pending);
  const Response third = read_response(fd, pending);
  CHECK(second.status == 200);
  CHECK(third.status == 200);
  CHECK(third.header("Connection") == "keep-alive");
  CHECK(pending.empty());
  CHECK(server->stats().scrapes == 3);
  CHECK(server->stats().connections_accepted == 1);
  SUBCASE("Connection: close is honoured") {
    send_all(fd, "GET /metrics HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
    const Response last = read_response(fd, pending);
    CHECK(last.status == 200);
    CHECK(last.header("Connection") == "close");
    CHECK(closed_by_server(fd));
  }
  SUBCASE("HTTP/1.0 closes unless asked") {
    send_all(fd, "GET /metrics HTTP/1.0\r\n\r\n");
    CHECK(read_response(fd, pending).status == 200);
    CHECK(closed_by_server(fd));
  }
  ::close(fd);
}

TEST_CASE("MetricsServer: HEAD gives the headers of a GET without its body") {
  Renderer renderer;
  auto server = start_server(renderer);
  const int fd = connect_to(server->port());
  std::string pending;
  send_all(fd, "HEAD /metrics HTTP/1.1\r\nHost: h\r\n\r\n");
  const Response head = read_response(fd, pending, true);
  CHECK(head.status == 200);
  CHECK(head.header("Content-Length") == std::to_string(std::string("prometheus_up 1\n").size()));
  // No body came: the next response starts right after the head's headers.
  send_all(fd, kGet);
  const Response get = read_response(fd, pending);
  CHECK(get.status == 200);
  CHECK(get.body == "prometheus_up 1\n");
  CHECK(server->stats().scrapes == 1);  // HEAD is not a scrape.
  ::close(fd);
}

TEST_CASE("MetricsServer: other paths are 404 and other methods 405") {
  Renderer renderer;
  auto server = start_server(renderer);
  const int fd = connect_to(server->port());
  std::string pending;
  send_all(fd, "GET /metricsx HTTP/1.1\r\nHost: h\r\n\r\n");
  CHECK(read_response(fd, pending).status == 404);
  send_all(fd, "POST /metrics HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n");
  const Response post = read_response(fd, pending);
  CHECK(post.status == 405);
  CHECK(post.header("Allow") == "GET, HEAD");
  // Both kept the connection.
  send_all(fd, kGet);
  CHECK(read_response(fd, pending).status == 200);
  ::close(fd);
  CHECK(renderer.calls == 1);
  CHECK(server->stats().not_found == 1);
  CHECK(server->stats().bad_method == 1);
}

TEST_CASE("MetricsServer: malformed and refused requests are answered and closed") {
  Renderer renderer;
  auto server = start_server(renderer);
  const auto check_refused = [&](const std::string& request, int status) {
    CAPTURE(request.substr(0, 60));
    const int fd = connect_to(server->port());
    send_all(fd, request);
    std::string pending;
    const Response response = read_response(fd, pending);
    CHECK(response.status == status);
    CHECK(response.header("Connection") == "close");
    CHECK(closed_by_server(fd));
    ::close(fd);
  };
  check_refused("GET /metrics\r\n\r\n", 400);
  check_refused("GET /metrics HTTP/1.1\r\n\r\n", 400);  // No Host.
  check_refused("GET /metrics HTTP/1.1\r\nHost: h\r\nX-Big: " + std::string(9000, 'a') + "\r\n\r\n",
                431);
  check_refused("GET /metrics HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n", 501);
  check_refused("GET /metrics HTTP/2.0\r\nHost: h\r\n\r\n", 505);
  // Garbage after a good request: the good one is answered first.
  const int fd = connect_to(server->port());
  send_all(fd, std::string(kGet) + "\x16\x03\x01 not http\r\n\r\n");
  std::string pending;
  CHECK(read_response(fd, pending).status == 200);
  CHECK(read_response(fd, pending).status == 400);
  ::close(fd);
  CHECK(server->stats().bad_requests == 6);
  CHECK(renderer.calls == 1);
}

TEST_CASE("MetricsServer: with a bearer token a request needs it") {
  Renderer renderer;
  MetricsServerOptions options;
  options.bearer_token = "s3cret";
  auto server = start_server(renderer, options);
  const Response none = exchange(server->port(), kGet);
  CHECK(none.status == 401);
  CHECK(none.header("WWW-Authenticate").starts_with("Bearer"));
  for (const char* wrong : {"Bearer s3cre", "Bearer s3cret2", "Basic czNjcmV0", "bearer S3CRET"}) {
    CAPTURE(wrong);
    CHECK(exchange(server->port(), "GET /metrics HTTP/1.1\r\nHost: h\r\nAuthorization: " +
                                       std::string(wrong) + "\r\n\r\n")
              .status == 401);
  }
  CHECK(exchange(server->port(), "GET /nothing HTTP/1.1\r\nHost: h\r\n\r\n").status == 401);
  CHECK(renderer.calls == 0);
  const Response right = exchange(
      server->port(), "GET /metrics HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer s3cret\r\n\r\n");
  CHECK(right.status == 200);
  CHECK(renderer.calls == 1);
  CHECK(server->stats().unauthorized == 6);
  SUBCASE("without a token configured, any Authorization is let in") {
    Renderer open_renderer;
    auto open = start_server(open_renderer);
    CHECK(exchange(open->port(), kGet).status == 200);
    CHECK(exchange(open->port(),
                   "GET /metrics HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer x\r\n\r\n")
              .status == 200);
  }
}

TEST_CASE("MetricsServer: a slowloris client is closed after the timeout while others are served") {
  Renderer renderer;
  MetricsServerOptions options;
  options.request_timeout_ms = 1000;
  auto server = start_server(renderer, options);
  const auto started = std::chrono::steady_clock::now();
  const int slow = connect_to(server->port());
  const std::string request(kGet);
  std::atomic<bool> slow_closed{false};
  std::thread loris([&] {
    // One byte every 100 ms: the head would take 4 s, never complete within the second.
    for (std::size_t i = 0; i + 4 < request.size(); ++i) {
      if (::send(slow, &request[i], 1, MSG_NOSIGNAL) != 1) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // The attack's own pace.
    }
  });
  // Meanwhile another client is answered at once, several times.
  for (int i = 0; i < 5; ++i) {
    const auto asked = std::chrono::steady_clock::now();
    CHECK(exchange(server->port(), kGet).status == 200);
    CHECK(std::chrono::steady_clock::now() - asked < std::chrono::milliseconds(500));
  }
  slow_closed = closed_by_server(slow);
  const auto closed_after = std::chrono::steady_clock::now() - started;
  loris.join();
  ::close(slow);
  CHECK(slow_closed);
  CHECK(closed_after >= std::chrono::milliseconds(1000));
  CHECK(closed_after < std::chrono::milliseconds(3000));
  CHECK(server->stats().timeouts == 1);
  CHECK(renderer.calls == 5);
}

TEST_CASE("MetricsServer: a client that does not read its answer is closed after the timeout") {
  Renderer renderer;
  renderer.padding = 16 * 1024 * 1024;  // Far more than the socket buffers hold.
  MetricsServerOptions options;
  options.request_timeout_ms = 500;
  auto server = start_server(renderer, options);
  const int fd = connect_to(server->port());
  int small = 4096;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  send_all(fd, kGet);
  CHECK(wait_until([&] { return server->stats().timeouts == 1; }, std::chrono::seconds(10)));
  // Served meanwhile and after.
  renderer.padding = 0;
  CHECK(exchange(server->port(), kGet).status == 200);
  ::close(fd);
}

TEST_CASE("MetricsServer: connections beyond max_connections are closed at accept") {
  Renderer renderer;
  MetricsServerOptions options;
  options.max_connections = 2;
  auto server = start_server(renderer, options);
  const int first = connect_to(server->port());
  const int second = connect_to(server->port());
  std::string pending;
  send_all(first, kGet);
  REQUIRE(read_response(first, pending).status == 200);
  send_all(second, kGet);
  REQUIRE(read_response(second, pending).status == 200);
  const int third = connect_to(server->port());
  CHECK(closed_by_server(third));
  CHECK(server->stats().connections_refused == 1);
  CHECK(server->stats().connections_accepted == 2);
  ::close(third);
  // A slot freed is a slot taken again.
  ::close(first);
  CHECK(wait_until([&] {
    const int next = connect_to(server->port());
    const std::string request(kGet);
    ::send(next, request.data(), request.size(), MSG_NOSIGNAL);
    std::string rest;
    const bool served = read_response(next, rest).status == 200;
    ::close(next);
    return served;
  }));
  ::close(second);
}

// A blocking HTTPS client.
class TlsClient {
 public:
  TlsClient(const Pki& pki, std::uint16_t port, bool with_certificate) : fd_(connect_to(port)) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx_), pki.ca().certificate);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    ssl_ = SSL_new(ctx_);
    if (with_certificate) {
      SSL_use_certificate(ssl_, pki.client().certificate);
      SSL_use_PrivateKey(ssl_, pki.client().key);
    }
    SSL_set_fd(ssl_, fd_);
    SSL_set_tlsext_host_name(ssl_, "localhost");
    connected_ = SSL_connect(ssl_) == 1;
  }
  ~TlsClient() {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
    ::close(fd_);
  }
  // Returns: the response to a GET /metrics (status 0 when the server refused or closed).
  Response get() {
    if (!connected_) {
      return {};
    }
    const std::string request(kGet);
    if (SSL_write(ssl_, request.data(), static_cast<int>(request.size())) <= 0) {
      return {};
    }
    return read_response(
        [this](char* buffer, std::size_t size) {
          return static_cast<long>(SSL_read(ssl_, buffer, static_cast<int>(size)));
        },
        pending_);
  }

 private:
  int fd_;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  bool connected_ = false;
  std::string pending_;
};

TEST_CASE("MetricsServer: HTTPS with the server's certificate") {
  Pki pki;
  Renderer renderer;
  MetricsServerOptions options;
  options.tls = pki.settings();
  auto server = start_server(renderer, options);
  CHECK(server->url().starts_with("https://127.0.0.1:"));
  TlsClient client(pki, server->port(), false);
  const Response first = client.get();
  CHECK(first.status == 200);
  CHECK(first.body == "prometheus_up 1\n");
  CHECK(client.get().status == 200);  // Keep-alive over TLS.
  // Plain HTTP on the HTTPS port: no answer, closed.
  CHECK(exchange(server->port(), kGet).status == 0);
  CHECK(wait_until([&] { return server->stats().tls_failures == 1; }));
  CHECK(server->reload_tls().ok());
  TlsClient after_reload(pki, server->port(), false);
  CHECK(after_reload.get().status == 200);
}

TEST_CASE("MetricsServer: a TLS client that never finishes its handshake is closed in time") {
  Pki pki;
  Renderer renderer;
  MetricsServerOptions options;
  options.tls = pki.settings();
  options.request_timeout_ms = 300;
  auto server = start_server(renderer, options);
  const int fd = connect_to(server->port());
  send_all(fd, std::string("\x16\x03\x01\x00", 4));  // The start of a ClientHello, no more.
  CHECK(closed_by_server(fd));
  CHECK(server->stats().timeouts == 1);
  ::close(fd);
}

TEST_CASE("MetricsServer: a required client certificate is verified") {
  Pki pki;
  Renderer renderer;
  MetricsServerOptions options;
  options.tls = pki.settings(listener::ClientCertificates::kDemand);
  auto server = start_server(renderer, options);
  TlsClient without(pki, server->port(), false);
  CHECK(without.get().status == 0);
  TlsClient with(pki, server->port(), true);
  CHECK(with.get().status == 200);
  CHECK(renderer.calls == 1);
}

// Returns: the CPU time (clock ticks, user + system) of this process's thread named `name`; -1
//   when there is none.
long thread_cpu_ticks(const std::string& name) {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::string comm;
    std::getline(std::ifstream(task.path() / "comm"), comm);
    if (comm != name) {
      continue;
    }
    std::string stat;
    std::getline(std::ifstream(task.path() / "stat"), stat);
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));
    std::string field;
    long utime = 0;
    long stime = 0;
    for (int i = 3; i <= 15 && fields >> field; ++i) {  // Fields 14 and 15: utime, stime.
      if (i == 14) {
        utime = std::stol(field);
      } else if (i == 15) {
        stime = std::stol(field);
      }
    }
    return utime + stime;
  }
  return -1;
}

TEST_CASE("MetricsServer: idle with connections open its thread is parked") {
  Renderer renderer;
  auto server = start_server(renderer);
  const int idle = connect_to(server->port());
  const int halfway = connect_to(server->port());
  send_all(halfway, "GET /metrics HTTP/1.1\r\n");
  REQUIRE(wait_until([&] { return server->stats().connections_accepted == 2; }));
  const long before = thread_cpu_ticks("metrics");
  REQUIRE(before >= 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // The span measured.
  // A busy loop would take the whole half second (50 ticks of 10 ms); parked, next to none.
  CHECK(thread_cpu_ticks("metrics") - before <= 2);
  ::close(idle);
  ::close(halfway);
}

TEST_CASE("MetricsServer: stop() with clients connected closes them") {
  Renderer renderer;
  auto server = start_server(renderer);
  const int idle = connect_to(server->port());
  const int halfway = connect_to(server->port());
  send_all(halfway, "GET /metrics HTTP/1.1\r\n");
  const int served = connect_to(server->port());
  send_all(served, kGet);
  std::string pending;
  REQUIRE(read_response(served, pending).status == 200);
  REQUIRE(wait_until([&] { return server->stats().connections_accepted == 3; }));
  server->stop();
  CHECK(closed_by_server(idle));
  CHECK(closed_by_server(halfway));
  CHECK(closed_by_server(served));
  server->stop();  // Idempotent.
  ::close(idle);
  ::close(halfway);
  ::close(served);
}

TEST_CASE("MetricsServer: an IPv6 address") {
  Renderer renderer;
  MetricsServerOptions options;
  options.host = "::1";
  auto server = MetricsServer::start(options, renderer.callback());
  if (!server.ok()) {
    MESSAGE("no IPv6 loopback here: " << server.status().message());
    return;
  }
  CHECK((*server)->url() == "http://[::1]:" + std::to_string((*server)->port()) + "/metrics");
  const int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in6 address{};
  address.sin6_family = AF_INET6;
  address.sin6_port = htons((*server)->port());
  address.sin6_addr = in6addr_loopback;
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  send_all(fd, "GET /metrics HTTP/1.1\r\nHost: [::1]\r\n\r\n");
  std::string pending;
  CHECK(read_response(fd, pending).status == 200);
  ::close(fd);
}

TEST_CASE("MetricsServer: an address in use is refused naming it") {
  Renderer renderer;
  auto server = start_server(renderer);
  MetricsServerOptions options;
  options.port = server->port();
  auto second = MetricsServer::start(options, renderer.callback());
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().message() ==
        "metrics.listen 127.0.0.1:" + std::to_string(server->port()) + ": Address already in use");
  options.host = "example.com";
  CHECK_FALSE(MetricsServer::start(options, renderer.callback()).ok());
}

TEST_CASE("MetricsServer: serve's options come from [metrics] and [tls]") {
  MetricsSettings metrics;
  metrics.listen = "[::1]:9330";
  metrics.max_connections = 3;
  metrics.request_timeout_s = 7;
  Result<MetricsServerOptions> plain = metrics_server_options(metrics, std::nullopt);
  REQUIRE(plain.ok());
  CHECK(plain->host == "::1");
  CHECK(plain->port == 9330);
  CHECK_FALSE(plain->tls.has_value());
  CHECK(plain->bearer_token.empty());
  CHECK(plain->max_connections == 3);
  CHECK(plain->request_timeout_ms == 7000);

  metrics.tls = true;
  CHECK_FALSE(metrics_server_options(metrics, std::nullopt).ok());
  Pki pki;
  metrics.client_certificate = true;
  Result<MetricsServerOptions> demanded = metrics_server_options(metrics, pki.settings());
  REQUIRE(demanded.ok());
  REQUIRE(demanded->tls.has_value());
  CHECK(demanded->tls->client_certificates == listener::ClientCertificates::kDemand);
  metrics.client_certificate = false;
  // [tls] verify_client = "demand" is the LDAP ports' choice, not the metrics port's.
  Result<MetricsServerOptions> not_asked =
      metrics_server_options(metrics, pki.settings(listener::ClientCertificates::kDemand));
  REQUIRE(not_asked.ok());
  CHECK(not_asked->tls->client_certificates == listener::ClientCertificates::kNever);

  std::ofstream(pki.path("token")) << "tok-en\n";
  metrics.bearer_token_file = pki.path("token");
  Result<MetricsServerOptions> token = metrics_server_options(metrics, pki.settings());
  REQUIRE(token.ok());
  CHECK(token->bearer_token == "tok-en");
  metrics.bearer_token_file = pki.path("missing");
  Result<MetricsServerOptions> missing = metrics_server_options(metrics, pki.settings());
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().starts_with("metrics.bearer_token_file: "));
}

}  // namespace
}  // namespace numadir::server
