// TlsContext and TlsChannel (listener/tls.h): contexts from files and their errors, a full
// handshake against an in-process OpenSSL client over memory (one TLS 1.3 ticket, AES-128-GCM
// preferred), data both ways, client certificates verified or not in each mode, garbage
// instead of a handshake, reload.
#include "listener/tls.h"

#include "tests/listener/tls_test_util.h"

#include <doctest/doctest.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

namespace numadir::listener {
namespace {

using testing::KeyAndCertificate;
using testing::Pki;
using testing::write_pem;

// An OpenSSL client over memory BIOs, talking to a TlsChannel by passing bytes by hand.
class TlsTestClient {
 public:
  // `max_version`: e.g. TLS1_2_VERSION; 0: the highest both sides speak.
  explicit TlsTestClient(const Pki& pki, const KeyAndCertificate* certificate = nullptr,
                         int max_version = 0) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_max_proto_version(ctx_, max_version);
    X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx_), pki.ca().certificate);
    SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    if (certificate != nullptr) {
      SSL_CTX_use_certificate(ctx_, certificate->certificate);
      SSL_CTX_use_PrivateKey(ctx_, certificate->key);
    }
    // Counts the sessions (TLS 1.3: tickets) the server gives.
    SSL_CTX_set_session_cache_mode(ctx_, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL);
    SSL_CTX_sess_set_new_cb(ctx_, [](SSL* ssl, SSL_SESSION*) {
      ++static_cast<TlsTestClient*>(SSL_get_app_data(ssl))->sessions;
      return 0;  // Not kept.
    });
    ssl_ = SSL_new(ctx_);
    SSL_set_app_data(ssl_, this);
    SSL_set_bio(ssl_, BIO_new(BIO_s_mem()), BIO_new(BIO_s_mem()));
    SSL_set_connect_state(ssl_);
  }
  ~TlsTestClient() {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
  }
  // Runs the client side once: feeds `in`, returns what it wants to send.
  std::string step(std::string_view in) {
    if (!in.empty()) {
      BIO_write(SSL_get_rbio(ssl_), in.data(), static_cast<int>(in.size()));
    }
    if (!SSL_is_init_finished(ssl_)) {
      SSL_do_handshake(ssl_);
    }
    char buffer[4096];
    for (;;) {
      const int n = SSL_read(ssl_, buffer, sizeof(buffer));
      if (n <= 0) {
        break;
      }
      received.append(buffer, static_cast<std::size_t>(n));
    }
    return take_output();
  }
  std::string write(std::string_view plain) {
    SSL_write(ssl_, plain.data(), static_cast<int>(plain.size()));
    return take_output();
  }
  bool connected() const { return SSL_is_init_finished(ssl_) == 1; }
  long verify_result() const { return SSL_get_verify_result(ssl_); }
  // Before the handshake: asks for no session ticket (TLS 1.2 resumption then needs the
  // server's session cache), and offers `session` (not taken) to resume.
  void take_no_ticket() { SSL_set_options(ssl_, SSL_OP_NO_TICKET); }
  void offer(SSL_SESSION* session) { SSL_set_session(ssl_, session); }
  // Ends the client's side with a close_notify (OpenSSL marks the session of an SSL freed
  // without one unresumable) and returns its session (the caller frees it).
  SSL_SESSION* end() {
    SSL_shutdown(ssl_);
    return SSL_get1_session(ssl_);
  }
  std::string received;
  int sessions = 0;

 private:
  std::string take_output() {
    std::string out;
    char buffer[4096];
    int n = 0;
    while ((n = BIO_read(SSL_get_wbio(ssl_), buffer, sizeof(buffer))) > 0) {
      out.append(buffer, static_cast<std::size_t>(n));
    }
    return out;
  }
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
};

// Passes bytes between `client` and `server` until neither has anything to say.
// Returns: the server's last input result.
TlsChannel::InputResult handshake(TlsTestClient& client, TlsChannel& server, std::string& plain) {
  std::string to_server = client.step("");
  TlsChannel::InputResult result = TlsChannel::InputResult::kOk;
  for (int round = 0; round < 10 && !to_server.empty(); ++round) {
    std::string to_client;
    result = server.input(to_server, plain, to_client);
    if (result != TlsChannel::InputResult::kOk) {
      client.step(to_client);  // The alert.
      return result;
    }
    to_server = client.step(to_client);
  }
  return result;
}

TEST_CASE("TlsContext: files and settings that do not work are errors naming them") {
  const Pki pki;
  CHECK(TlsContext::create(pki.settings()).ok());
  TlsSettings missing = pki.settings();
  missing.certificate = pki.path("nowhere.crt");
  auto created = TlsContext::create(missing);
  REQUIRE_FALSE(created.ok());
  CHECK(created.status().message().find("tls.certificate") != std::string::npos);
  CHECK(created.status().message().find("nowhere.crt") != std::string::npos);
  TlsSettings wrong_key = pki.settings();
  wrong_key.key = pki.path("client.key");  // Not the certificate's key.
  created = TlsContext::create(wrong_key);
  REQUIRE_FALSE(created.ok());
  CHECK(created.status().message().find("tls.key") != std::string::npos);
  TlsSettings ciphers = pki.settings();
  ciphers.ciphers = "NO-SUCH-CIPHER";
  CHECK_FALSE(TlsContext::create(ciphers).ok());
  TlsSettings demand = pki.settings(ClientCertificates::kDemand);
  demand.ca_file.clear();
  CHECK_FALSE(TlsContext::create(demand).ok());
}

TEST_CASE("TlsChannel: a handshake then data both ways") {
  const Pki pki;
  auto context = TlsContext::create(pki.settings());
  REQUIRE(context.ok());
  TlsChannel server((*context)->new_ssl());
  TlsTestClient client(pki);
  std::string plain;
  CHECK(handshake(client, server, plain) == TlsChannel::InputResult::kOk);
  REQUIRE(server.handshake_done());
  CHECK(client.connected());
  CHECK(client.verify_result() == X509_V_OK);  // The client trusts the server's chain.
  const TlsPeer peer = server.peer();
  CHECK_FALSE(peer.has_certificate);
  CHECK(peer.protocol == "TLSv1.3");
  CHECK(client.sessions == 1);  // One ticket (OpenSSL's default would send two).

  std::string out;
  CHECK(server.input(client.write("request bytes"), plain, out) == TlsChannel::InputResult::kOk);
  CHECK(plain == "request bytes");
  out.clear();
  REQUIRE(server.output("response bytes", out).ok());
  client.step(out);
  CHECK(client.received == "response bytes");
}

// Returns: the suite a default OpenSSL client (which offers AES-256-GCM first) gets from a
// server made with `settings`, over TLS 1.3 or, with `max_version` TLS1_2_VERSION, 1.2.
std::string negotiated_cipher(const Pki& pki, const TlsSettings& settings, int max_version) {
  auto context = TlsContext::create(settings);
  REQUIRE(context.ok());
  TlsChannel server((*context)->new_ssl());
  TlsTestClient client(pki, nullptr, max_version);
  std::string plain;
  REQUIRE(handshake(client, server, plain) == TlsChannel::InputResult::kOk);
  REQUIRE(server.handshake_done());
  return server.peer().cipher;
}

TEST_CASE("TlsContext: AES-128-GCM with SHA-256 by default and a configured list otherwise") {
  const Pki pki;  // An ECDSA P-256 server certificate.
  SUBCASE("defaults") {
    CHECK(negotiated_cipher(pki, pki.settings(), 0) == "TLS_AES_128_GCM_SHA256");
    CHECK(negotiated_cipher(pki, pki.settings(), TLS1_2_VERSION) ==
          "ECDHE-ECDSA-AES128-GCM-SHA256");
  }
  SUBCASE("configured") {
    TlsSettings settings = pki.settings();
    settings.ciphersuites = "TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256";
    settings.ciphers = "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-AES128-GCM-SHA256";
    CHECK(negotiated_cipher(pki, settings, 0) == "TLS_AES_256_GCM_SHA384");
    CHECK(negotiated_cipher(pki, settings, TLS1_2_VERSION) == "ECDHE-ECDSA-AES256-GCM-SHA384");
  }
}

// A TLS 1.2 connection of a client that takes no tickets, ended as the server ends every
// connection (the channel destroyed, no close_notify sent), then a second connection offering
// its session. Returns: whether the second was resumed. `break_first`: garbage follows the
// first handshake, so the first channel ends failed.
bool resumed_by_session_id(bool break_first) {
  const Pki pki;
  auto context = TlsContext::create(pki.settings());
  REQUIRE(context.ok());
  SSL_SESSION* session = nullptr;
  {
    auto server = std::make_unique<TlsChannel>((*context)->new_ssl());
    TlsTestClient client(pki, nullptr, TLS1_2_VERSION);
    client.take_no_ticket();
    std::string plain;
    REQUIRE(handshake(client, *server, plain) == TlsChannel::InputResult::kOk);
    REQUIRE(server->handshake_done());
    CHECK_FALSE(server->peer().resumed);
    if (break_first) {
      std::string out;
      CHECK(server->input(std::string(64, '\x17'), plain, out) == TlsChannel::InputResult::kFailed);
    }
    session = client.end();  // The server does not read the close_notify.
  }
  TlsChannel server((*context)->new_ssl());
  TlsTestClient client(pki, nullptr, TLS1_2_VERSION);
  client.take_no_ticket();
  client.offer(session);
  std::string plain;
  REQUIRE(handshake(client, server, plain) == TlsChannel::InputResult::kOk);
  REQUIRE(server.handshake_done());
  SSL_SESSION_free(session);
  return server.peer().resumed;
}

TEST_CASE("TlsChannel: a TLS 1.2 session without a ticket resumes from the server's cache") {
  CHECK(resumed_by_session_id(false));
  // A connection that ended on bad records leaves nothing to resume.
  CHECK_FALSE(resumed_by_session_id(true));
}

TEST_CASE("TlsChannel: client certificates in each mode") {
  const Pki pki;
  SUBCASE("allow: a certificate from the CA is verified, its subject read") {
    auto context = TlsContext::create(pki.settings(ClientCertificates::kAllow));
    REQUIRE(context.ok());
    TlsChannel server((*context)->new_ssl());
    TlsTestClient client(pki, &pki.client());
    std::string plain;
    REQUIRE(handshake(client, server, plain) == TlsChannel::InputResult::kOk);
    const TlsPeer peer = server.peer();
    CHECK(peer.has_certificate);
    CHECK(peer.verified);
    CHECK(peer.subject == "CN=user5");
    REQUIRE(peer.subject_attributes.size() == 1);
    CHECK(peer.subject_attributes[0] == std::pair<std::string, std::string>{"CN", "user5"});
  }
  SUBCASE("allow: an untrusted certificate gets in but is not verified") {
    auto context = TlsContext::create(pki.settings(ClientCertificates::kAllow));
    REQUIRE(context.ok());
    TlsChannel server((*context)->new_ssl());
    TlsTestClient client(pki, &pki.stranger());
    std::string plain;
    REQUIRE(handshake(client, server, plain) == TlsChannel::InputResult::kOk);
    CHECK(server.peer().has_certificate);
    CHECK_FALSE(server.peer().verified);
  }
  SUBCASE("demand: no certificate or an untrusted one fails the handshake") {
    auto context = TlsContext::create(pki.settings(ClientCertificates::kDemand));
    REQUIRE(context.ok());
    for (const KeyAndCertificate* certificate :
         {static_cast<const KeyAndCertificate*>(nullptr), &pki.stranger()}) {
      TlsChannel server((*context)->new_ssl());
      TlsTestClient client(pki, certificate);
      std::string plain;
      CHECK(handshake(client, server, plain) == TlsChannel::InputResult::kFailed);
      CHECK_FALSE(server.handshake_done());
      CHECK_FALSE(server.error().empty());
      std::string out;
      CHECK_FALSE(server.output("x", out).ok());
    }
    TlsChannel server((*context)->new_ssl());
    TlsTestClient client(pki, &pki.client());
    std::string plain;
    CHECK(handshake(client, server, plain) == TlsChannel::InputResult::kOk);
    CHECK(server.peer().verified);
  }
}

TEST_CASE("TlsChannel: plaintext or garbage instead of a handshake fails cleanly") {
  const Pki pki;
  auto context = TlsContext::create(pki.settings());
  REQUIRE(context.ok());
  for (const std::string_view garbage :
       {std::string_view("\x30\x0c\x02\x01\x01\x60\x07\x02\x01\x03\x04\x00\x80\x00", 14),
        std::string_view("\x16\x03\x01\x00\x05hello", 10),
        std::string_view("GET / HTTP/1.0\r\n")}) {
    TlsChannel server((*context)->new_ssl());
    std::string plain;
    std::string out;
    const TlsChannel::InputResult result = server.input(garbage, plain, out);
    // Either refused at once or waiting for the rest of a record that never makes sense.
    if (result == TlsChannel::InputResult::kOk) {
      CHECK(server.input(std::string(64, '\xff'), plain, out) == TlsChannel::InputResult::kFailed);
    } else {
      CHECK(result == TlsChannel::InputResult::kFailed);
    }
    CHECK(plain.empty());
    CHECK_FALSE(server.handshake_done());
  }
}

TEST_CASE("TlsContext: reload takes new files for new channels and keeps the old on error") {
  const Pki pki;
  auto context = TlsContext::create(pki.settings());
  REQUIRE(context.ok());
  TlsChannel before((*context)->new_ssl());
  TlsTestClient first(pki);
  std::string plain;
  REQUIRE(handshake(first, before, plain) == TlsChannel::InputResult::kOk);

  std::filesystem::remove(pki.path("server.key"));
  CHECK_FALSE((*context)->reload().ok());  // The key is gone: the old context stays.
  TlsChannel still((*context)->new_ssl());
  TlsTestClient second(pki);
  CHECK(handshake(second, still, plain) == TlsChannel::InputResult::kOk);

  write_pem(pki.path("server.key"), pki.server(), true);
  CHECK((*context)->reload().ok());
  TlsChannel after((*context)->new_ssl());
  TlsTestClient third(pki);
  CHECK(handshake(third, after, plain) == TlsChannel::InputResult::kOk);
  // The channel made before the reloads still works.
  std::string out;
  REQUIRE(before.output("still here", out).ok());
  first.step(out);
  CHECK(first.received == "still here");
}

}  // namespace
}  // namespace numadir::listener
