// AuthWorker over TLS against a small blocking TLS LDAP server on a thread of the test (one
// connection at a time, so the worker runs one slot): ldaps, StartTLS, a new connection per
// auth with and without session resumption, a refused StartTLS and a server certificate from
// the wrong CA. The server decides when the run ends (after so many binds, refusals or failed
// handshakes) by writing the worker's stop eventfd, so nothing waits on a clock.
#include <arpa/inet.h>
#include <doctest/doctest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "listener/wire/ber_writer.h"
#include "listener/wire/framing.h"
#include "listener/wire/ldap_message.h"
#include "listener/wire/message_decoder.h"
#include "listener/wire/message_encoder.h"
#include "perf/auth_stats.h"
#include "perf/auth_worker.h"
#include "perf/auth_workload.h"
#include "perf/tls_client.h"

namespace numadir::perf {
namespace {

namespace wire = listener::wire;

// A self-signed certificate for 127.0.0.1 and localhost and its key, as PEM files.
struct TestCertificate {
  std::string cert_file;
  std::string key_file;
  X509* cert = nullptr;
  EVP_PKEY* key = nullptr;

  TestCertificate(const std::filesystem::path& dir, const std::string& name) {
    key = EVP_EC_gen("P-256");
    REQUIRE(key != nullptr);
    cert = X509_new();
    X509_set_version(cert, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert), 86400);
    X509_set_pubkey(cert, key);
    X509_NAME* subject = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(name.c_str()), -1, -1, 0);
    X509_set_issuer_name(cert, subject);
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
    X509_EXTENSION* san =
        X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
    REQUIRE(san != nullptr);
    X509_add_ext(cert, san, -1);
    X509_EXTENSION_free(san);
    REQUIRE(X509_sign(cert, key, EVP_sha256()) > 0);
    cert_file = (dir / (name + ".crt")).string();
    key_file = (dir / (name + ".key")).string();
    std::FILE* out = std::fopen(cert_file.c_str(), "w");
    REQUIRE(out != nullptr);
    PEM_write_X509(out, cert);
    std::fclose(out);
    out = std::fopen(key_file.c_str(), "w");
    REQUIRE(out != nullptr);
    PEM_write_PrivateKey(out, key, nullptr, nullptr, 0, nullptr, nullptr);
    std::fclose(out);
  }
  TestCertificate(const TestCertificate&) = delete;
  ~TestCertificate() {
    X509_free(cert);
    EVP_PKEY_free(key);
  }
};

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char name[] = "/tmp/authrate-tls-test-XXXXXX";
    REQUIRE(mkdtemp(name) != nullptr);
    path = name;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
};

struct TlsServerOptions {
  bool starttls = false;         // Expect StartTLS first on each connection.
  bool refuse_starttls = false;  // ... and answer it with unwillingToPerform.
  int stop_after = 10;           // Binds (or refusals, or failed handshakes) before the stop.
};

// Counters the server thread writes and the test reads after joining it.
struct TlsServerCounts {
  int connections = 0;
  int handshakes = 0;
  int resumed = 0;
  int failed_handshakes = 0;
  int binds = 0;
  int refusals = 0;
};

class TestTlsServer {
 public:
  TestTlsServer(const TestCertificate& certificate, TlsServerOptions options, int stop_fd)
      : options_(options), stop_fd_(stop_fd) {
    // OpenSSL writes with write(2): a peer that closed first must not kill the test (authrate
    // ignores SIGPIPE for the same reason).
    std::signal(SIGPIPE, SIG_IGN);
    ctx_ = SSL_CTX_new(TLS_server_method());
    REQUIRE(SSL_CTX_use_certificate(ctx_, certificate.cert) == 1);
    REQUIRE(SSL_CTX_use_PrivateKey(ctx_, certificate.key) == 1);
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    REQUIRE(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(listen_fd_, 16) == 0);
    socklen_t length = sizeof address_;
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address_), &length);
    address_len_ = length;
    thread_ = std::thread([this] { serve(); });
  }
  ~TestTlsServer() {
    join();
    ::close(listen_fd_);
    SSL_CTX_free(ctx_);
  }

  void join() {
    if (thread_.joinable()) {
      thread_.join();
    }
  }
  const sockaddr_storage& address() const { return address_; }
  socklen_t address_len() const { return address_len_; }
  // Valid after join().
  const TlsServerCounts& counts() const { return counts_; }

 private:
  // Blocking reads of one PDU through `ssl` (or the socket when null). Returns: false at the
  // end of the stream, on an error or after a 10 s timeout.
  bool receive(int fd, SSL* ssl, std::string& buffer, std::string& pdu,
               wire::LdapMessage& message) {
    for (;;) {
      const wire::Frame frame = wire::frame_pdu(buffer);
      if (frame.state == wire::FrameState::kComplete) {
        pdu = buffer.substr(0, frame.pdu_bytes);
        buffer.erase(0, frame.pdu_bytes);
        return wire::decode_message(pdu, message).ok();
      }
      if (frame.state != wire::FrameState::kNeedMore) {
        return false;
      }
      char chunk[4096];
      const int n = ssl != nullptr ? SSL_read(ssl, chunk, sizeof chunk)
                                   : static_cast<int>(::recv(fd, chunk, sizeof chunk, 0));
      if (n <= 0) {
        return false;
      }
      buffer.append(chunk, static_cast<std::size_t>(n));
    }
  }

  void send(int fd, SSL* ssl, const wire::LdapMessage& message) {
    wire::BerWriter writer;
    wire::encode_message(message, writer);
    if (ssl != nullptr) {
      SSL_write(ssl, writer.view().data(), static_cast<int>(writer.size()));
    } else {
      [[maybe_unused]] const ssize_t n =
          ::send(fd, writer.view().data(), writer.size(), MSG_NOSIGNAL);
    }
  }

  void stop_worker() {
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t n = ::write(stop_fd_, &one, sizeof one);
  }

  // Serves one connection; returns true once the stop condition is met.
  bool serve_connection(int fd) {
    ++counts_.connections;
    std::string buffer;
    std::string pdu;
    wire::LdapMessage request;
    wire::LdapMessage response;
    if (options_.starttls) {
      if (!receive(fd, nullptr, buffer, pdu, request) ||
          request.op != wire::ProtocolOp::kExtendedRequest ||
          request.extended.name != kStartTlsOid) {
        return false;
      }
      response.reset(request.message_id, wire::ProtocolOp::kExtendedResponse);
      response.result.code = options_.refuse_starttls ? wire::ResultCode::kUnwillingToPerform
                                                      : wire::ResultCode::kSuccess;
      response.extended.name = kStartTlsOid;
      send(fd, nullptr, response);
      if (options_.refuse_starttls) {
        return ++counts_.refusals >= options_.stop_after;
      }
    }
    SSL* ssl = SSL_new(ctx_);
    SSL_set_fd(ssl, fd);
    bool stop = false;
    if (SSL_accept(ssl) != 1) {
      ERR_clear_error();
      stop = ++counts_.failed_handshakes >= options_.stop_after;
    } else {
      ++counts_.handshakes;
      counts_.resumed += SSL_session_reused(ssl) == 1 ? 1 : 0;
      while (receive(fd, ssl, buffer, pdu, request)) {
        if (request.op == wire::ProtocolOp::kSearchRequest) {
          response.reset(request.message_id, wire::ProtocolOp::kSearchResultEntry);
          response.search_entry.object_name = "uid=user1,ou=people,dc=example,dc=com";
          send(fd, ssl, response);
          response.reset(request.message_id, wire::ProtocolOp::kSearchResultDone);
          send(fd, ssl, response);
        } else if (request.op == wire::ProtocolOp::kBindRequest) {
          response.reset(request.message_id, wire::ProtocolOp::kBindResponse);
          send(fd, ssl, response);
          if (++counts_.binds == options_.stop_after) {
            stop = true;
            stop_worker();
          }
        } else {
          break;  // An unbind.
        }
      }
    }
    SSL_free(ssl);
    ERR_clear_error();
    return stop;
  }

  void serve() {
    for (;;) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        return;
      }
      timeval timeout{10, 0};  // Never hang the test on a client that went away.
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
      const int one = 1;  // Each answer leaves at once, not after the client's delayed ACK.
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      const bool stop = serve_connection(fd);
      ::close(fd);
      if (stop) {
        if (counts_.binds < options_.stop_after) {
          stop_worker();  // Stopped by refusals or failed handshakes.
        }
        return;
      }
    }
  }

  const TlsServerOptions options_;
  const int stop_fd_;
  SSL_CTX* ctx_ = nullptr;
  int listen_fd_ = -1;
  sockaddr_storage address_{};
  socklen_t address_len_ = 0;
  TlsServerCounts counts_;  // Owner: the server thread until join().
  std::thread thread_;
};

struct TlsRunResult {
  AuthTotals totals;
  TlsServerCounts server;
};

// Runs one AuthWorker (one slot) against a TestTlsServer until the server stops it.
TlsRunResult run_against_server(const TestCertificate& server_certificate,
                                const TlsClientOptions& tls_options,
                                TlsServerOptions server_options, bool reconnect) {
  const int stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  REQUIRE(stop_fd >= 0);
  auto workload = AuthWorkload::create(WorkloadOptions{});
  REQUIRE(workload.ok());
  auto client = TlsClient::create(tls_options, "127.0.0.1");
  REQUIRE(client.ok());
  TlsRunResult result;
  {
    TestTlsServer server(server_certificate, server_options, stop_fd);
    WorkerConfig config;
    config.workload = &*workload;
    ServerTarget target;
    target.address = server.address();
    target.address_len = server.address_len();
    target.tls = client->get();
    const ServerList servers({target});
    config.servers = &servers;
    config.reconnect = reconnect;
    config.stop_fd = stop_fd;
    WorkerStats stats;
    AuthWorker worker(config, stats);
    REQUIRE(worker.run().ok());
    server.join();
    result.totals.add_live(stats);
    result.server = server.counts();
  }
  ::close(stop_fd);
  return result;
}

TEST_CASE("AuthWorker: auths over ldaps and StartTLS on a persistent connection") {
  TempDir dir;
  TestCertificate certificate(dir.path, "server");
  TlsClientOptions tls;
  tls.ca_file = certificate.cert_file;
  TlsServerOptions server;
  server.stop_after = 20;
  SUBCASE("ldaps") { tls.mode = TlsMode::kLdaps; }
  SUBCASE("StartTLS") {
    tls.mode = TlsMode::kStartTls;
    server.starttls = true;
  }
  const TlsRunResult run = run_against_server(certificate, tls, server, /*reconnect=*/false);
  // The last bind's answer may race the stop.
  CHECK(run.totals.auths >= 19);
  CHECK(run.totals.error_total() == 0);
  CHECK(run.totals.tls_handshakes == 1);
  CHECK(run.totals.tls_resumed == 0);
  CHECK(run.server.connections == 1);
  CHECK(run.server.handshakes == 1);
}

TEST_CASE("AuthWorker: a new connection per auth resumes the slot's session with tls_resume") {
  TempDir dir;
  TestCertificate certificate(dir.path, "server");
  TlsClientOptions tls;
  tls.mode = TlsMode::kLdaps;
  tls.ca_file = certificate.cert_file;
  TlsServerOptions server;
  server.stop_after = 10;
  SUBCASE("ldaps") {}
  SUBCASE("StartTLS") {
    tls.mode = TlsMode::kStartTls;
    server.starttls = true;
  }
  SUBCASE("without resumption") {
    const TlsRunResult run = run_against_server(certificate, tls, server, /*reconnect=*/true);
    CHECK(run.totals.auths >= 9);
    CHECK(run.totals.error_total() == 0);
    CHECK(run.totals.tls_handshakes >= 10);
    CHECK(run.totals.tls_resumed == 0);
    CHECK(run.server.resumed == 0);
    return;
  }
  tls.resume = true;
  const TlsRunResult run = run_against_server(certificate, tls, server, /*reconnect=*/true);
  CHECK(run.totals.auths >= 9);
  CHECK(run.totals.error_total() == 0);
  CHECK(run.totals.tls_handshakes >= 10);
  // Every handshake but the first resumes the previous connection's session.
  CHECK(run.totals.tls_resumed + 1 >= run.totals.tls_handshakes);
  CHECK(run.server.resumed + 1 >= run.server.handshakes);
}

TEST_CASE("AuthWorker: a refused StartTLS counts its result code and no auth") {
  TempDir dir;
  TestCertificate certificate(dir.path, "server");
  TlsClientOptions tls;
  tls.mode = TlsMode::kStartTls;
  TlsServerOptions server;
  server.starttls = true;
  server.refuse_starttls = true;
  server.stop_after = 3;
  const TlsRunResult run = run_against_server(certificate, tls, server, /*reconnect=*/false);
  // The last refusal may race the stop.
  CHECK(run.totals.auths == 0);
  CHECK(run.totals.result_codes[53] >= 2);
  CHECK(run.totals.errors[static_cast<std::size_t>(AuthError::kLdapResult)] ==
        run.totals.error_total());
  CHECK(run.totals.tls_handshakes == 0);
}

TEST_CASE("AuthWorker: a server certificate from another CA fails the handshake") {
  TempDir dir;
  TestCertificate certificate(dir.path, "server");
  TestCertificate other(dir.path, "other");
  TlsClientOptions tls;
  tls.mode = TlsMode::kLdaps;
  tls.ca_file = other.cert_file;
  TlsServerOptions server;
  server.stop_after = 2;
  const TlsRunResult run = run_against_server(certificate, tls, server, /*reconnect=*/false);
  CHECK(run.totals.auths == 0);
  CHECK(run.totals.errors[static_cast<std::size_t>(AuthError::kTlsFailed)] >= 2);
  CHECK(run.totals.tls_handshakes == 0);
  CHECK(run.server.failed_handshakes >= 2);
}

TEST_CASE("TlsClient: bad files and options are errors") {
  TempDir dir;
  TestCertificate certificate(dir.path, "server");
  TestCertificate other(dir.path, "other");
  TlsClientOptions tls;
  tls.mode = TlsMode::kLdaps;
  SUBCASE("a missing CA file") {
    tls.ca_file = (dir.path / "missing.crt").string();
    CHECK(TlsClient::create(tls, "127.0.0.1").status().code() == StatusCode::kInvalidArgument);
  }
  SUBCASE("a certificate without its key") {
    tls.cert_file = certificate.cert_file;
    CHECK(TlsClient::create(tls, "127.0.0.1").status().code() == StatusCode::kInvalidArgument);
  }
  SUBCASE("a key that does not match the certificate") {
    tls.cert_file = certificate.cert_file;
    tls.key_file = other.key_file;
    const auto client = TlsClient::create(tls, "127.0.0.1");
    CHECK(client.status().code() == StatusCode::kInvalidArgument);
    CHECK(client.status().message().find("--tls-key") != std::string::npos);
  }
  SUBCASE("a key file that is not PEM") {
    tls.cert_file = certificate.cert_file;
    tls.key_file = certificate.cert_file;
    CHECK(TlsClient::create(tls, "localhost").status().code() == StatusCode::kInvalidArgument);
  }
  SUBCASE("a matching certificate and key") {
    tls.cert_file = certificate.cert_file;
    tls.key_file = certificate.key_file;
    tls.ca_file = other.cert_file;
    CHECK(TlsClient::create(tls, "localhost").ok());
  }
}

TEST_CASE("probe_tls: a verified handshake passes and another CA is named as the reason") {
  TempDir dir;
  TestCertificate certificate(dir.path, "server");
  TestCertificate other(dir.path, "other");
  const int stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  REQUIRE(stop_fd >= 0);
  TlsServerOptions server_options;
  server_options.stop_after = 1;  // The failed probe stops the server.
  TestTlsServer server(certificate, server_options, stop_fd);
  const auto probe = [&](const std::string& ca_file) {
    TlsClientOptions tls;
    tls.mode = TlsMode::kLdaps;
    tls.ca_file = ca_file;
    auto client = TlsClient::create(tls, "127.0.0.1");
    REQUIRE(client.ok());
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(::connect(fd, reinterpret_cast<const sockaddr*>(&server.address()),
                      server.address_len()) == 0);
    const Status status = probe_tls(**client, fd, "ldaps://127.0.0.1", 10'000);
    ::close(fd);
    return status;
  };
  CHECK(probe(certificate.cert_file).ok());
  const Status refused = probe(other.cert_file);
  CHECK(refused.code() == StatusCode::kIo);
  CHECK(refused.message().find("certificate verification") != std::string::npos);
  server.join();
  CHECK(server.counts().handshakes == 1);
  CHECK(server.counts().failed_handshakes == 1);
  ::close(stop_fd);
}

}  // namespace
}  // namespace numadir::perf
