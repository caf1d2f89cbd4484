// server/client/tls_client_context.h: the client side of TLS for connections numadir makes to
// other servers (a replication provider), with OpenSSL: the CAs the server's certificate must
// chain to, whether it is verified at all, and an optional client certificate (for SASL
// EXTERNAL). Each connection's SSL checks the server's certificate against the host name (or
// address) it connected to, and sends that name as SNI.
//
// Thread contract: immutable after create(); new_ssl() may be called from any thread (an SSL_CTX
// makes SSL objects for several threads). Each SSL belongs to the thread that drives its
// connection. OpenSSL's error queue is per thread: errors are read and cleared by the thread of
// the failing call.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace numadir::server {

struct TlsClientSettings {
  // PEM CAs the server's certificate must chain to; empty: OpenSSL's default store (the
  // system's CAs).
  std::filesystem::path ca_file;
  // false: the server's certificate is not checked at all (anyone in the path can pretend to be
  // the server); for tests and trusted networks only.
  bool verify = true;
  std::filesystem::path certificate;  // Client certificate (PEM, leaf then chain); with key.
  std::filesystem::path key;          // Its private key (PEM).
};

class TlsClientContext {
 public:
  // Loads the CAs and the client certificate and key.
  // Errors: kInvalidArgument "ca_file <path>: <OpenSSL's reason>", "certificate <path>: ...",
  //   "key <path>: ...", "key <path> does not match certificate <path>", or "certificate and key
  //   go together" (the caller prefixes the config key's table); kInternal when OpenSSL cannot
  //   make a context.
  static Result<std::unique_ptr<TlsClientContext>> create(const TlsClientSettings& settings);
  ~TlsClientContext();
  TlsClientContext(const TlsClientContext&) = delete;
  TlsClientContext& operator=(const TlsClientContext&) = delete;

  // Returns: a client SSL on connected socket `fd` (in connect state, not handshaken) that
  //   verifies the server's certificate against `host` (a DNS name, or an IPv4 / IPv6 address
  //   matched against the certificate's IP addresses) and sends a name as SNI. The caller owns
  //   it (SSL_free).
  // Errors: kInternal when OpenSSL cannot make it or take the host (OpenSSL's reason).
  Result<SSL*> new_ssl(int fd, const std::string& host) const;

  const TlsClientSettings& settings() const { return settings_; }

 private:
  TlsClientContext(const TlsClientSettings& settings, SSL_CTX* ctx)
      : settings_(settings), ctx_(ctx) {}

  const TlsClientSettings settings_;
  SSL_CTX* const ctx_;  // Owned (one reference).
};

// Returns: OpenSSL's queued errors as text ("; "-separated; their reason strings), and clears
//   them; `fallback` when there are none. Call on the thread of the failing call.
std::string take_openssl_errors(std::string_view fallback);

// Returns: why `ssl`'s handshake failed, worded for an admin: "certificate verify failed:
//   <X509 reason>" when the server's certificate did not verify (wrong CA, expired, a name that
//   does not match...), else "TLS handshake failed: <OpenSSL's reason or `fallback`>". Clears
//   the thread's OpenSSL errors.
std::string describe_handshake_failure(SSL* ssl, std::string_view fallback);

}  // namespace numadir::server
