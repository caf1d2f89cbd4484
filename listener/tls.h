// listener/tls.h: TLS for connections (ldaps:// URLs and StartTLS) with OpenSSL.
//
// TlsContext holds the server's SSL_CTX built from TlsSettings: certificate chain and key, CAs
// for client certificates, minimum version, cipher policy, client certificate mode. reload()
// builds a new one from the same files (SIGHUP); connections already open keep the context
// they started with (each SSL holds a reference to its SSL_CTX), new ones get the new one.
// Session resumption: OpenSSL's stateless tickets (TLS 1.3 and 1.2) and its session cache.
//
// TlsChannel is one connection's TLS over memory BIOs: the listener feeds it the ciphertext it
// reads and gets plaintext back; whoever writes a response encrypts through it and queues the
// ciphertext like any other output. So TLS adds no socket calls of its own and the handshake
// never blocks: it advances as bytes arrive, on the listener thread that owns the connection.
//
// Thread contract: TlsContext is safe to use from any thread (reload swaps under a lock). A
// TlsChannel is not: its owner serializes every call (Connection does, under its mutex).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "base/thread_annotations.h"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace numadir::listener {

enum class ClientCertificates : std::uint8_t {
  kNever,   // Not asked for.
  kAllow,   // Asked for; a missing or unverifiable one is let in (SASL EXTERNAL then fails).
  kDemand,  // Required and verified: the handshake fails without a valid one.
};

struct TlsSettings {
  std::filesystem::path certificate;  // PEM: the server certificate, then its chain.
  std::filesystem::path key;          // PEM private key.
  std::filesystem::path ca_file;      // CAs trusted for client certificates (optional).
  std::filesystem::path ca_dir;       // Or an OpenSSL hashed directory (optional).
  bool tls13_only = false;            // Minimum TLS 1.3 instead of 1.2.
  // TLS 1.2 cipher list and TLS 1.3 suites, in OpenSSL's syntax. Empty: OpenSSL's default
  // sets with AES-128-GCM / SHA-256 first (OpenSSL's own order starts with AES-256 / SHA-384).
  std::string ciphers;
  std::string ciphersuites;
  ClientCertificates client_certificates = ClientCertificates::kNever;
  std::uint32_t handshake_timeout_s = 10;
};

// What a finished handshake learned about the client.
struct TlsPeer {
  bool has_certificate = false;
  bool verified = false;  // A client certificate was presented and verified against the CAs.
  std::string subject;    // Its subject, RFC 4514 string form ("CN=user5,O=Example").
  // The subject's attributes, in order: (short name as OpenSSL prints it, e.g. "CN", "UID",
  // "emailAddress"; UTF-8 value).
  std::vector<std::pair<std::string, std::string>> subject_attributes;
  std::string protocol;  // "TLSv1.3", ...
  std::string cipher;
  bool resumed = false;
};

class TlsContext {
 public:
  // Errors: kInvalidArgument naming the file and OpenSSL's reason (unreadable certificate, key
  //   not matching it, bad cipher list, ...).
  static Result<std::unique_ptr<TlsContext>> create(const TlsSettings& settings);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // Re-reads the files. On error the current context stays. Errors: as create().
  Status reload() NUMADIR_EXCLUDES(mu_);
  // Returns: a new server-side SSL for one connection on the current context; nullptr when
  //   OpenSSL cannot make one (out of memory).
  SSL* new_ssl() const NUMADIR_EXCLUDES(mu_);
  const TlsSettings& settings() const { return settings_; }

 private:
  TlsContext(const TlsSettings& settings, SSL_CTX* ctx) : settings_(settings), ctx_(ctx) {}

  const TlsSettings settings_;
  mutable Mutex mu_;
  SSL_CTX* ctx_ NUMADIR_GUARDED_BY(mu_);  // Owned (one reference).
};

class TlsChannel {
 public:
  // Takes ownership of `ssl` (from TlsContext::new_ssl) and puts it in server mode.
  explicit TlsChannel(SSL* ssl);
  ~TlsChannel();
  TlsChannel(const TlsChannel&) = delete;
  TlsChannel& operator=(const TlsChannel&) = delete;

  enum class InputResult : std::uint8_t {
    kOk,      // Everything fed was consumed (plaintext may or may not have come out).
    kClosed,  // The client sent close_notify: no more input.
    kFailed,  // A handshake failure or a protocol error: error() says which.
  };
  // Feeds `cipher` (bytes read from the socket). Appends decrypted application data to `plain`
  // and the bytes to send (handshake messages, tickets, alerts) to `out`.
  InputResult input(std::string_view cipher, std::string& plain, std::string& out);
  // Encrypts `plain`, appending the records to `out`. Errors: kInternal before the handshake
  //   finished or after a failure.
  Status output(std::string_view plain, std::string& out);

  bool handshake_done() const { return handshake_done_; }
  const std::string& error() const { return error_; }
  // Returns: what the handshake learned. Requires: handshake_done().
  TlsPeer peer() const;

 private:
  void drain(std::string& out);
  // Gives ssl_ a new pair of memory BIOs (freeing any it had). Returns: false when out of
  // memory (the old ones, if any, stay).
  bool attach_memory_bios();
  // Once the handshake is done: fresh memory BIOs, so the handshake's buffers are freed.
  void renew_bios();

  SSL* ssl_;
  bool handshake_done_ = false;
  bool failed_ = false;
  std::string error_;
};

}  // namespace numadir::listener
