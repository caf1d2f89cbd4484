// The listener's TLS over real loopback sockets (run under TSan too): ldaps:// with pipelined
// requests answered by workers while the listener decrypts, StartTLS and its refusals,
// plaintext on the ldaps port, a stalled handshake closed after the timeout, other connections
// carrying on, and the handler told of each finished handshake.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "listener/frontend.h"
#include "listener/wire/ber_writer.h"
#include "listener/wire/framing.h"
#include "listener/wire/message_decoder.h"
#include "listener/wire/message_encoder.h"
#include "schema/filter.h"
#include "tests/listener/tls_test_util.h"
#include "tests/wait_until.h"
#include "threadpool/thread_counters.h"

namespace numadir::listener {
namespace {

using wire::LdapMessage;
using wire::ProtocolOp;

// Answers a search with one entry named after its base and a done; "gate" waits for the test.
class TlsHandler : public RequestHandler {
 public:
  std::unique_ptr<Session> open_session(const ConnectionInfo&) override {
    return std::make_unique<Session>();
  }
  void handle(const LdapMessage& request, Session&, ResponseSink& sink,
              threadpool::WorkerState&) override {
    if (request.op != ProtocolOp::kSearchRequest) {
      return;
    }
    last_handled_ns.store(static_cast<std::int64_t>(threadpool::steady_ns()));
    last_received_ns.store(sink.origin().received_ns);
    const std::string_view base = request.search_request.base_object;
    if (base == "gate") {
      std::unique_lock lock(mu_);
      ++waiting_;
      arrived_.notify_all();
      opened_.wait(lock, [this] { return open_; });
    }
    LdapMessage response;
    response.reset(request.message_id, ProtocolOp::kSearchResultEntry);
    response.search_entry.object_name = base;
    sink.send(response);
    response.reset(request.message_id, ProtocolOp::kSearchResultDone);
    sink.send(response);
  }
  void tls_established(Session&, const TlsPeer& peer) override {
    handshakes.fetch_add(1);
    std::lock_guard lock(mu_);
    last_protocol = peer.protocol;
  }
  void wait_at_gate() {
    std::unique_lock lock(mu_);
    arrived_.wait(lock, [this] { return waiting_ > 0; });
  }
  void open_gate() {
    std::lock_guard lock(mu_);
    open_ = true;
    opened_.notify_all();
  }
  std::atomic<int> handshakes{0};
  std::string last_protocol;
  // The last search's RequestOrigin::received_ns, and a clock read as handle() began.
  std::atomic<std::int64_t> last_received_ns{-1};
  std::atomic<std::int64_t> last_handled_ns{0};

 private:
  std::mutex mu_;
  std::condition_variable arrived_, opened_;
  int waiting_ = 0;
  bool open_ = false;
};

int connect_to(std::uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(port);
  inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0);
  timeval timeout{10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  return fd;
}

// A blocking LDAP client: plaintext until start_tls(), then OpenSSL on the socket.
class TlsClient {
 public:
  TlsClient(const testing::Pki& pki, std::uint16_t port, bool tls_now) : fd_(connect_to(port)) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx_), pki.ca().certificate);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    if (tls_now) {
      handshake();
    }
  }
  ~TlsClient() {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
    ::close(fd_);
  }
  bool handshake() {
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    return SSL_connect(ssl_) == 1;
  }
  void search(std::int32_t id, std::string_view base) {
    LdapMessage message;
    message.reset(id, ProtocolOp::kSearchRequest);
    message.search_request.base_object = base;
    message.search_request.filter = *schema::Filter::parse("(objectClass=*)");
    wire::encode_message(message, writer_);
  }
  void start_tls_request(std::int32_t id) {
    LdapMessage message;
    message.reset(id, ProtocolOp::kExtendedRequest);
    message.extended.name = wire::kStartTlsOid;
    wire::encode_message(message, writer_);
  }
  void flush() {
    const std::string_view bytes = writer_.view();
    if (ssl_ != nullptr) {
      REQUIRE(SSL_write(ssl_, bytes.data(), static_cast<int>(bytes.size())) ==
              static_cast<int>(bytes.size()));
    } else {
      REQUIRE(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
              static_cast<ssize_t>(bytes.size()));
    }
    writer_.clear();
  }
  // Returns: the next response, or false at EOF / error.
  bool receive(LdapMessage& message) {
    for (;;) {
      const wire::Frame frame = wire::frame_pdu(buffer_);
      if (frame.state == wire::FrameState::kComplete) {
        pdu_ = buffer_.substr(0, frame.pdu_bytes);
        buffer_.erase(0, frame.pdu_bytes);
        REQUIRE(wire::decode_message(pdu_, message).ok());
        return true;
      }
      char chunk[4096];
      const int n = ssl_ != nullptr ? SSL_read(ssl_, chunk, sizeof(chunk))
                                    : static_cast<int>(::recv(fd_, chunk, sizeof(chunk), 0));
      if (n <= 0) {
        return false;
      }
      buffer_.append(chunk, static_cast<std::size_t>(n));
    }
  }
  void expect_search(std::int32_t id, std::string_view base) {
    LdapMessage message;
    REQUIRE(receive(message));
    CHECK(message.message_id == id);
    REQUIRE(message.op == ProtocolOp::kSearchResultEntry);
    CHECK(message.search_entry.object_name == base);
    REQUIRE(receive(message));
    CHECK(message.op == ProtocolOp::kSearchResultDone);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  wire::BerWriter writer_;
  std::string buffer_;
  std::string pdu_;
};

// Returns: true if the server closes `fd` within `seconds` (reads until EOF or a reset).
bool closed_by_server(int fd, int seconds) {
  timeval timeout{seconds, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  char chunk[4096];
  for (;;) {
    const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) {
      return true;
    }
    if (n < 0) {
      return false;  // Timed out.
    }
  }
}

struct TlsServer {
  explicit TlsServer(std::uint32_t handshake_timeout_s = 10, bool stamp_requests = false) {
    TlsSettings settings = pki.settings();
    settings.handshake_timeout_s = handshake_timeout_s;
    auto context = TlsContext::create(settings);
    REQUIRE(context.ok());
    tls = std::move(*context);
    FrontendOptions options;
    options.urls = {ListenUrl{"ldap", "127.0.0.1", 0}, ListenUrl{"ldaps", "127.0.0.1", 0}};
    options.workers = 2;
    options.tls = tls.get();
    options.stamp_requests = stamp_requests;
    auto started = Frontend::start(options, handler);
    REQUIRE_MESSAGE(started.ok(), started.status().to_string());
    frontend = std::move(*started);
    plain_port = frontend->bound_urls()[0].port;
    tls_port = frontend->bound_urls()[1].port;
  }
  testing::Pki pki;
  std::unique_ptr<TlsContext> tls;
  TlsHandler handler;
  std::unique_ptr<Frontend> frontend;
  std::uint16_t plain_port = 0;
  std::uint16_t tls_port = 0;
};

TEST_CASE("Frontend TLS: ldaps answers pipelined requests from every worker") {
  TlsServer server;
  TlsClient client(server.pki, server.tls_port, /*tls_now=*/true);
  for (int i = 1; i <= 40; ++i) {
    client.search(i, "cn=" + std::to_string(i));
  }
  client.flush();
  int done = 0;
  LdapMessage message;
  for (int i = 0; i < 80; ++i) {
    REQUIRE(client.receive(message));
    if (message.op == ProtocolOp::kSearchResultEntry) {
      CHECK(message.search_entry.object_name == "cn=" + std::to_string(message.message_id));
    } else {
      ++done;
    }
  }
  CHECK(done == 40);
  CHECK(server.handler.handshakes.load() == 1);
}

TEST_CASE("Frontend TLS: StartTLS starts TLS once and only with nothing outstanding") {
  TlsServer server;
  SUBCASE("success, then requests over TLS; a second StartTLS is an operationsError") {
    TlsClient client(server.pki, server.plain_port, /*tls_now=*/false);
    client.search(1, "cn=before");
    client.flush();
    client.expect_search(1, "cn=before");
    client.start_tls_request(2);
    client.flush();
    LdapMessage message;
    REQUIRE(client.receive(message));
    CHECK(message.op == ProtocolOp::kExtendedResponse);
    CHECK(message.result.code == wire::ResultCode::kSuccess);
    REQUIRE(client.handshake());
    client.search(3, "cn=after");
    client.flush();
    client.expect_search(3, "cn=after");
    client.start_tls_request(4);
    client.flush();
    REQUIRE(client.receive(message));
    CHECK(message.result.code == wire::ResultCode::kOperationsError);
    client.search(5, "cn=still");
    client.flush();
    client.expect_search(5, "cn=still");
  }
  SUBCASE("with a search outstanding: operationsError, and the connection goes on in clear") {
    TlsClient client(server.pki, server.plain_port, /*tls_now=*/false);
    client.search(1, "gate");
    client.flush();
    server.handler.wait_at_gate();
    client.start_tls_request(2);
    client.flush();
    LdapMessage message;
    REQUIRE(client.receive(message));
    CHECK(message.message_id == 2);
    CHECK(message.result.code == wire::ResultCode::kOperationsError);
    server.handler.open_gate();
    client.expect_search(1, "gate");
    client.search(3, "cn=clear");
    client.flush();
    client.expect_search(3, "cn=clear");
  }
}

TEST_CASE("Frontend TLS: plaintext on the ldaps port and a stalled handshake are closed") {
  TlsServer server(/*handshake_timeout_s=*/1);
  TlsClient plaintext(server.pki, server.tls_port, /*tls_now=*/false);
  plaintext.search(1, "cn=x");
  plaintext.flush();
  CHECK(closed_by_server(plaintext.fd(), 5));

  const auto start = std::chrono::steady_clock::now();
  TlsClient silent(server.pki, server.tls_port, /*tls_now=*/false);
  // Meanwhile others are served, in clear and over TLS.
  TlsClient clear(server.pki, server.plain_port, /*tls_now=*/false);
  clear.search(1, "cn=clear");
  clear.flush();
  clear.expect_search(1, "cn=clear");
  TlsClient secure(server.pki, server.tls_port, /*tls_now=*/true);
  secure.search(1, "cn=secure");
  secure.flush();
  secure.expect_search(1, "cn=secure");
  CHECK(closed_by_server(silent.fd(), 5));
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(900));
  // Both closed as TLS failures, once each; the other two are open.
  REQUIRE(numadir::testing::wait_until([&] {
    const ListenerSnapshot listener = server.frontend->snapshot().listeners.at(0);
    return listener.accepted == 4 && listener.connections == 2;
  }));
  const ListenerSnapshot listener = server.frontend->snapshot().listeners.at(0);
  for (std::size_t r = 0; r < kCloseReasons; ++r) {
    INFO("reason ", close_reason_name(static_cast<CloseReason>(r)));
    CHECK(listener.closed[r] == (r == static_cast<std::size_t>(CloseReason::kTlsFailure) ? 2 : 0));
  }
}

TEST_CASE("Frontend TLS: with stamping a request carries when its plaintext came") {
  TlsServer server(/*handshake_timeout_s=*/10, /*stamp_requests=*/true);
  TlsClient secure(server.pki, server.tls_port, /*tls_now=*/true);
  const auto before = static_cast<std::int64_t>(threadpool::steady_ns());
  secure.search(1, "cn=secure");
  secure.flush();
  secure.expect_search(1, "cn=secure");
  CHECK(server.handler.last_received_ns.load() >= before);
  CHECK(server.handler.last_received_ns.load() <= server.handler.last_handled_ns.load());
}

}  // namespace
}  // namespace numadir::listener
