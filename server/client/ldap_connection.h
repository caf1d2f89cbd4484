// server/client/ldap_connection.h: one blocking LDAPv3 client connection on the server's own
// codec (listener/wire): a TCP connection (or, for ldapi://, a Unix-domain socket's) made within
// a timeout, TLS on it (from the first byte
// for ldaps://, or after a StartTLS the caller negotiated), and whole LDAPMessages sent and
// received with deadlines and a bound on the size of a PDU. What `numadir stats`' LdapClient
// (server/commands/ldap_client.h) and the replication consumer's ProviderConnection
// (server/replication/provider_connection.h) are built on.
//
// The socket is non-blocking; every wait is a poll() bounded by the call's deadline, so a silent
// or slow server never holds the calling thread longer than it asked. Messages do not name the
// server: the caller, which knows what it connected to and why, prefixes them.
//
// Thread contract: owned and used by one thread; the destructor closes the connection (without
// waiting for the server).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "listener/wire/ber_writer.h"
#include "listener/wire/framing.h"
#include "listener/wire/ldap_message.h"
#include "server/client/ldap_result_text.h"  // describe_ldap_result, for the callers.
#include "server/client/ldap_url.h"
#include "server/client/tcp_keepalive.h"

typedef struct ssl_st SSL;

namespace numadir::server {

class TlsClientContext;

struct LdapConnectOptions {
  int connect_timeout_ms = 10000;  // The TCP connection (every address of the host together).
  int send_timeout_ms = 10000;     // Each send() waits at most this long for the socket.
  std::size_t max_pdu_bytes = listener::wire::kDefaultMaxPduBytes;  // Larger answers: an error.
  TcpKeepalive keepalive;                                           // Off by default.
};

class LdapConnection {
 public:
  // Resolves url.host (empty: 127.0.0.1) and connects to url.port, trying each address in turn.
  // Sets TCP_NODELAY, and the keepalive when options.keepalive is enabled. TLS is not started
  // (for ldaps:// call start_tls() next). For ldapi:// connects to the Unix-domain socket at
  // url.path instead (TCP_NODELAY and the keepalive do not apply there and are skipped).
  // Errors: kIo "host \"...\" does not resolve: <reason>", "no connection within N ms",
  //   "<strerror of the last address>" (e.g. "Connection refused"). For ldapi: kNotFound
  //   "no such socket (No such file or directory)"; kIo "not a socket (Connection refused)" for
  //   a file of another kind, else the system's reason ("Permission denied", "Connection
  //   refused" from a socket nobody listens on).
  static Result<std::unique_ptr<LdapConnection>> connect(const LdapUrl& url,
                                                         const LdapConnectOptions& options);
  ~LdapConnection();
  LdapConnection(const LdapConnection&) = delete;
  LdapConnection& operator=(const LdapConnection&) = delete;

  // Runs the TLS handshake over the connection, checking the server's certificate against
  // `host` as `tls` says (tls_client_context.h); afterwards every message goes through TLS.
  // Requires: TLS not started yet, nothing received and unread (after a StartTLS response).
  // Errors: kIo "certificate verify failed: <reason>", "TLS handshake failed: <reason>", "no
  //   TLS handshake within N ms"; kInternal when OpenSSL cannot make the SSL. The connection is
  //   then unusable.
  Status start_tls(const TlsClientContext& tls, const std::string& host, int timeout_ms);

  // Returns: the message ID for the next request (1, 2, ...; never 0).
  std::int32_t next_message_id();

  // Encodes and sends `message`. Errors: kIo "send: <reason>" or "the server accepted nothing
  //   within N ms" (the connection is then unusable: part of a PDU may have gone).
  Status send(const listener::wire::LdapMessage& message);

  // Reads the next message into `message`, waiting at most `timeout_ms` (< 0: without limit).
  // `message` views the connection's buffer until the next receive(). A Notice of Disconnection
  // (RFC 4511 §4.4.1) is returned like any message, and leaves the connection unusable.
  // Errors:
  //   kIo "no message within N ms": the connection stays usable (a part already read is kept);
  //   kIo "the server closed the connection" (", in the middle of a message" when a PDU was
  //     cut), "receive: <reason>", or a TLS failure: unusable;
  //   kMalformed "the server sent something that is not an LDAP message: ..." or the decoder's
  //     "LDAPMessage: offset N: ...": unusable;
  //   kLimitExceeded "the server sent a message of N bytes, over the limit of M": unusable.
  Status receive(listener::wire::LdapMessage& message, int timeout_ms);

  // Sends `request` under the next message ID (set here) and waits for the message answering it
  // (others are skipped), at most `timeout_ms`.
  // Errors: as send() and receive(); kMalformed "<op> answered with <op>" for a response of
  //   the wrong kind; kIo "the server disconnected: <diagnostic>" for a Notice of Disconnection.
  Status exchange(listener::wire::LdapMessage& request, listener::wire::ProtocolOp expected,
                  listener::wire::LdapMessage& response, int timeout_ms);

  // Sends close_notify when TLS is up (without waiting for the server's), shuts the socket
  // down and closes it. Idempotent; usable() is false afterwards.
  void close();

  // False once the connection failed or was closed: no call but close() may follow.
  bool usable() const { return fd_ >= 0 && usable_; }
  bool tls_active() const { return ssl_ != nullptr; }
  // Returns: the TLS version ("TLSv1.3"), or "" without TLS.
  std::string tls_version() const;

  // Returns: the socket (-1 once closed), for tests to read its options.
  int socket_for_test() const { return fd_; }

 private:
  LdapConnection(int fd, const LdapConnectOptions& options) : fd_(fd), options_(options) {}

  enum class Io : std::uint8_t { kOk, kTimeout, kClosed, kFailed };
  // Reads what is there (waiting until `deadline_ms`, a monotonic time; -1: none) into buffer_.
  Io read_more(std::int64_t deadline_ms, std::string& error);
  // Writes all of `bytes` by `deadline_ms`.
  Io write_all(std::string_view bytes, std::int64_t deadline_ms, std::string& error);
  // Waits until the socket is ready for `events` (POLLIN / POLLOUT) or `deadline_ms`.
  Io wait(short events, std::int64_t deadline_ms, std::string& error);
  Status fail(StatusCode code, std::string message);

  int fd_;  // -1 once closed.
  const LdapConnectOptions options_;
  SSL* ssl_ = nullptr;  // Owned; nullptr without TLS.
  bool usable_ = true;
  std::int32_t next_id_ = 1;
  listener::wire::BerWriter writer_;
  std::string buffer_;  // Bytes read (and decrypted) and not yet framed.
  std::string pdu_;     // The last message received; what it views.
};

}  // namespace numadir::server
