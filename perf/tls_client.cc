#include "perf/tls_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "listener/wire/ber_writer.h"
#include "listener/wire/framing.h"
#include "listener/wire/ldap_message.h"
#include "listener/wire/message_decoder.h"
#include "listener/wire/message_encoder.h"

namespace numadir::perf {

namespace wire = listener::wire;

namespace {

// After the probe's handshake, how long to wait for the server's alert (see probe_tls).
constexpr int kAlertWaitMs = 200;

// The new-session callback (SSL_SESS_CACHE_CLIENT): the connection's TlsSession keeps the
// newest resumable session. TLS 1.3 servers send their tickets after the handshake, so this
// runs inside SSL_read as often as inside SSL_connect.
int keep_new_session(SSL* ssl, SSL_SESSION* session) {
  auto* holder = static_cast<TlsSession*>(SSL_get_app_data(ssl));
  if (holder == nullptr || SSL_SESSION_is_resumable(session) == 0) {
    return 0;  // Not kept: OpenSSL frees it.
  }
  holder->reset(session);
  return 1;  // The reference is ours now.
}

bool is_ip_address(const std::string& host) {
  unsigned char address[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), address) == 1 ||
         inet_pton(AF_INET6, host.c_str(), address) == 1;
}

}  // namespace

std::string_view tls_mode_name(TlsMode mode) {
  switch (mode) {
    case TlsMode::kNone:
      return "none";
    case TlsMode::kLdaps:
      return "ldaps";
    case TlsMode::kStartTls:
      return "starttls";
  }
  return "unknown";
}

TlsSession::~TlsSession() { SSL_SESSION_free(session_); }

void TlsSession::reset(SSL_SESSION* session) {
  SSL_SESSION_free(session_);
  session_ = session;
}

std::string take_tls_errors(const SSL* ssl) {
  std::string text;
  if (ssl != nullptr && (SSL_get_verify_mode(ssl) & SSL_VERIFY_PEER) != 0) {
    const long verify = SSL_get_verify_result(ssl);
    if (verify != X509_V_OK) {
      text = std::string("certificate verification: ") + X509_verify_cert_error_string(verify);
    }
  }
  while (const unsigned long error = ERR_get_error()) {
    char line[256];
    ERR_error_string_n(error, line, sizeof line);
    text += text.empty() ? "" : "; ";
    text += line;
  }
  return text;
}

Result<std::unique_ptr<TlsClient>> TlsClient::create(const TlsClientOptions& options,
                                                     std::string_view host) {
  if (options.cert_file.empty() != options.key_file.empty()) {
    return invalid_argument("--tls-cert and --tls-key go together");
  }
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) {
    return internal_error("SSL_CTX_new: " + take_tls_errors());
  }
  std::unique_ptr<SSL_CTX, void (*)(SSL_CTX*)> owned(ctx, SSL_CTX_free);
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  if (!options.max_version.empty()) {
    SSL_CTX_set_max_proto_version(ctx,
                                  options.max_version == "1.2" ? TLS1_2_VERSION : TLS1_3_VERSION);
  }
  // Partial writes: flush() keeps its own offset, as with send(). A moving buffer: the output
  // BerWriter may reallocate between a write that wanted to be retried and its retry.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  const std::string name(host);
  const bool ip = is_ip_address(name);
  if (!options.ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, options.ca_file.c_str(), nullptr) != 1) {
      return invalid_argument("--tls-ca " + options.ca_file + ": " + take_tls_errors());
    }
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    // The server's certificate must name the host of the URL. Set on the context, so every
    // SSL made from it inherits the check.
    X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
    const int set = ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str())
                       : X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
    if (set != 1) {
      return invalid_argument("cannot check the server certificate against '" + name +
                              "': " + take_tls_errors());
    }
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  }
  if (!options.cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx, options.cert_file.c_str()) != 1) {
      return invalid_argument("--tls-cert " + options.cert_file + ": " + take_tls_errors());
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, options.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      return invalid_argument("--tls-key " + options.key_file + ": " + take_tls_errors());
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
      return invalid_argument("--tls-key " + options.key_file + " does not match --tls-cert " +
                              options.cert_file + ": " + take_tls_errors());
    }
  }
  if (options.resume) {
    // No internal store: each slot keeps its own session (TlsSession), as a client that
    // reconnects to one server would.
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(ctx, keep_new_session);
  } else {
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  }
  return std::unique_ptr<TlsClient>(new TlsClient(options, name, ip, owned.release()));
}

TlsClient::~TlsClient() { SSL_CTX_free(ctx_); }

SSL* TlsClient::new_connection(int fd, TlsSession* session) const {
  SSL* ssl = SSL_new(ctx_);
  if (ssl == nullptr) {
    ERR_clear_error();
    return nullptr;
  }
  bool ok = SSL_set_fd(ssl, fd) == 1;
  if (ok && !host_is_ip_) {
    ok = SSL_set_tlsext_host_name(ssl, host_.c_str()) == 1;
  }
  if (ok && options_.resume && session != nullptr) {
    SSL_set_app_data(ssl, session);
    if (session->get() != nullptr) {
      ok = SSL_set_session(ssl, session->get()) == 1;
    }
  }
  if (!ok) {
    SSL_free(ssl);
    ERR_clear_error();
    return nullptr;
  }
  SSL_set_connect_state(ssl);
  return ssl;
}

namespace {

// Blocking I/O with a timeout for the probe. Errors: kIo with the reason.
Status send_all(int fd, std::string_view bytes, std::string_view what) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return status_error(StatusCode::kIo,
                          "StartTLS to " + std::string(what) + ": " + std::strerror(errno));
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return Status();
}

}  // namespace

Status probe_tls(const TlsClient& client, int fd, std::string_view what, int timeout_ms) {
  const std::string where(what);
  const int flags = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  const timeval timeout{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);

  if (client.options().mode == TlsMode::kStartTls) {
    wire::LdapMessage message;
    message.reset(1, wire::ProtocolOp::kExtendedRequest);
    message.extended.name = kStartTlsOid;
    wire::BerWriter request;
    wire::encode_message(message, request);
    if (Status sent = send_all(fd, request.view(), what); !sent.ok()) {
      return sent;
    }
    std::string input;
    for (;;) {
      const wire::Frame frame = wire::frame_pdu(input);
      if (frame.state == wire::FrameState::kComplete) {
        input.resize(frame.pdu_bytes);
        break;
      }
      if (frame.state != wire::FrameState::kNeedMore) {
        return status_error(StatusCode::kIo, "StartTLS to " + where + ": not an LDAP answer");
      }
      char chunk[4096];
      const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n <= 0) {
        return status_error(StatusCode::kIo,
                            "StartTLS to " + where + ": " +
                                (n == 0            ? std::string("connection closed")
                                 : errno == EAGAIN ? std::string("no answer in time")
                                                   : std::string(std::strerror(errno))));
      }
      input.append(chunk, static_cast<std::size_t>(n));
    }
    wire::LdapMessage answer;
    if (!wire::decode_message(input, answer).ok() ||
        answer.op != wire::ProtocolOp::kExtendedResponse) {
      return status_error(StatusCode::kIo,
                          "StartTLS to " + where + ": the answer is not an ExtendedResponse");
    }
    if (answer.result.code != wire::ResultCode::kSuccess) {
      return Status();  // Refused: the workers count each refusal under its result code.
    }
  }

  ERR_clear_error();
  SSL* ssl = client.new_connection(fd, nullptr);
  if (ssl == nullptr) {
    return status_error(StatusCode::kIo, "TLS to " + where + ": cannot make an SSL object");
  }
  const int rc = SSL_connect(ssl);
  Status status;
  if (rc != 1) {
    const int error = SSL_get_error(ssl, rc);
    std::string reason = take_tls_errors(ssl);
    if (reason.empty()) {
      reason = error == SSL_ERROR_SYSCALL && errno == EAGAIN ? "no answer in time"
               : error == SSL_ERROR_SYSCALL && errno != 0    ? std::strerror(errno)
                                                             : "the server closed the connection";
    }
    status = status_error(StatusCode::kIo, "TLS handshake with " + where + " failed: " + reason);
  } else {
    // In TLS 1.3 the client's side of the handshake ends before the server has checked the
    // client's certificate: a refusal comes as an alert just after. Wait a moment for one.
    const timeval moment{0, kAlertWaitMs * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &moment, sizeof moment);
    char byte;
    const int peeked = SSL_peek(ssl, &byte, 1);
    if (peeked <= 0 && SSL_get_error(ssl, peeked) == SSL_ERROR_SSL) {
      status = status_error(StatusCode::kIo,
                            "TLS handshake with " + where + " failed: " + take_tls_errors(ssl));
    } else {
      SSL_shutdown(ssl);
    }
  }
  SSL_free(ssl);
  ERR_clear_error();
  return status;
}

}  // namespace numadir::perf
