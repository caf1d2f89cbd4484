// perf/tls_client.h: TLS for authrate. TlsClient holds the OpenSSL client context (the CA to
// verify the server against, an optional client certificate, client-side session caching for
// --tls-resume) and makes one SSL object per connection; TlsSession keeps the last session a
// connection's server handed out, so the next connection of the same slot can resume it;
// probe_tls() does one blocking handshake (after StartTLS if asked) to report a server that
// cannot be reached over TLS once, clearly.
//
// Thread contract: a TlsClient is immutable after create() and may be shared by every worker
// thread (an SSL_CTX may be used by several threads to make SSL objects). A TlsSession and the
// SSL objects made for it belong to the one thread that drives their connection; the
// new-session callback runs on that thread, inside SSL_connect or SSL_read. OpenSSL's error
// queue is per thread: each failing call's errors are read and cleared on the thread that made
// it.
#pragma once

#include <openssl/ssl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace numadir::perf {

// How authrate talks to the server: in the clear, TLS from the first byte (ldaps://), or the
// StartTLS extended operation on each new connection before its first request.
enum class TlsMode : std::uint8_t { kNone, kLdaps, kStartTls };
// Returns: "none", "ldaps" or "starttls".
std::string_view tls_mode_name(TlsMode mode);

// The StartTLS extended operation's requestName (RFC 4511 §4.14.1).
inline constexpr std::string_view kStartTlsOid = "1.3.6.1.4.1.1466.20037";

struct TlsClientOptions {
  TlsMode mode = TlsMode::kNone;
  std::string ca_file;    // Verify the server against these CAs; empty: no verification.
  std::string cert_file;  // Client certificate (PEM, leaf then chain); needs key_file.
  std::string key_file;
  bool resume = false;      // Keep each connection's session and offer it on the slot's next one.
  std::string max_version;  // "1.2" or "1.3": the newest protocol offered; empty: OpenSSL's.
};

// The last resumable session of a connection slot. Non-copyable; frees the session it holds.
class TlsSession {
 public:
  TlsSession() = default;
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;
  ~TlsSession();

  // Returns: the held session (still owned here), or nullptr.
  SSL_SESSION* get() const { return session_; }
  // Takes ownership of `session` (one reference), freeing the one held before.
  void reset(SSL_SESSION* session);

 private:
  SSL_SESSION* session_ = nullptr;
};

class TlsClient {
 public:
  // Loads the CA file and the client certificate and key. `host` is the server's name or
  // address as in the URL: with a CA file the server certificate must match it (a DNS name or
  // an IP address SAN); a DNS name is also sent as SNI.
  // Errors: kInvalidArgument when a file cannot be read or parsed, the key does not match the
  //   certificate, or only one of cert_file and key_file is given (each naming the option and
  //   OpenSSL's reason); kInternal when OpenSSL cannot make a context.
  static Result<std::unique_ptr<TlsClient>> create(const TlsClientOptions& options,
                                                   std::string_view host);

  TlsClient(const TlsClient&) = delete;
  TlsClient& operator=(const TlsClient&) = delete;
  ~TlsClient();

  const TlsClientOptions& options() const { return options_; }

  // Makes the client side of a TLS connection on connected socket `fd` (not yet handshaken;
  // drive it with SSL_connect). With resume, offers `session`'s held session and stores there
  // each new session the server hands out on this connection; `session` must outlive the SSL.
  // Returns: the SSL (the caller frees it with SSL_free), or nullptr when OpenSSL is out of
  //   memory (its error queue is cleared).
  SSL* new_connection(int fd, TlsSession* session) const;

 private:
  TlsClient(TlsClientOptions options, std::string host, bool host_is_ip, SSL_CTX* ctx)
      : options_(std::move(options)), host_(std::move(host)), host_is_ip_(host_is_ip), ctx_(ctx) {}

  const TlsClientOptions options_;
  const std::string host_;  // Sent as SNI unless an IP address.
  const bool host_is_ip_;
  SSL_CTX* const ctx_;  // Owned.
};

// Returns: OpenSSL's error queue as text ("; "-separated, newest last), and clears it; with
//   `ssl` given and a failed certificate verification, the verification error first.
std::string take_tls_errors(const SSL* ssl = nullptr);

// One blocking check on connected socket `fd`: StartTLS first if the mode says so, then a
// handshake (and a close_notify). A StartTLS request answered with an error is not a failure
// here (the workers count those answers); the handshake is then not tried.
// Errors: kIo naming `what` (the URL) and the reason: a timeout after `timeout_ms`, a closed
//   connection, an unexpected answer, or the handshake's OpenSSL / verification error.
Status probe_tls(const TlsClient& client, int fd, std::string_view what, int timeout_ms);

}  // namespace numadir::perf
