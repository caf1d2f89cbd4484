// listener/request_handler.h: the seam between the listener (sockets, framing, decoding,
// per-connection rules) and the server's operation handlers. The listener never includes
// backend headers: the server gives it a RequestHandler, and the listener hands each decoded
// request to it on a worker thread together with the connection's Session and a ResponseSink.
//
// Thread contract: one RequestHandler serves every connection and is called concurrently from
// every worker thread; it must be safe for that (its state immutable or internally locked). A
// Session belongs to one connection: open_session runs on the listener thread that accepted the
// connection; handle() calls for that connection may run concurrently on several workers (the
// listener runs a BindRequest only when nothing else of the connection is outstanding, and
// nothing else while a bind runs), so a Session locks whatever concurrent operations share. The
// listener destroys the Session after the last handle() of its connection has returned.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "listener/tls.h"
#include "listener/wire/ldap_message.h"

namespace numadir::listener {

// What the listener knows of a connection when it opens.
struct ConnectionInfo {
  std::uint64_t id = 0;  // Unique for the process's life (conn= in the log).
  std::string peer;      // "IP:port" of the client.
  std::uint16_t local_port = 0;
  bool tls = false;  // Accepted on an ldaps:// listener (or after StartTLS).
};

// The server's per-connection state (bound identity, paged-results cookies, ...).
class Session {
 public:
  virtual ~Session() = default;
};

// Where a handler sends the responses of one request. Owned by the listener; valid only during
// the handle() call it was passed to.
class ResponseSink {
 public:
  virtual ~ResponseSink() = default;
  // Encodes `response` (its views need only live during the call) and queues it for the
  // connection, in order. Entries of a large search are flushed to the socket as they come, so
  // memory stays bounded; a client that does not read stalls only its own connection's
  // operation.
  virtual void send(const wire::LdapMessage& response) = 0;
  // Returns: true once the operation was abandoned (AbandonRequest, Unbind, or the connection
  //   closed): a long search checks it between entries and stops without a SearchResultDone.
  virtual bool abandoned() const = 0;
};

class RequestHandler {
 public:
  virtual ~RequestHandler() = default;
  // Returns: the state for a new connection. Called on the accepting listener thread.
  virtual std::unique_ptr<Session> open_session(const ConnectionInfo& info) = 0;
  // Runs one request on a worker thread and sends its response(s) (none for operations that
  // have none). `request` is any operation but UnbindRequest and AbandonRequest, which the
  // listener carries out itself; its views stay valid during the call. Never throws, never
  // blocks on the network: a failure becomes an LDAP result code in a response.
  virtual void handle(const wire::LdapMessage& request, Session& session, ResponseSink& sink) = 0;
  // Called on the listener thread with each UnbindRequest and AbandonRequest, which have no
  // response and which the listener carries out itself, just before it does (for the access
  // log). Must not block. The default does nothing.
  virtual void notice(const wire::LdapMessage& request, Session& session) {
    (void)request;
    (void)session;
  }
  // Called on the listener thread when the connection's TLS handshake has finished (ldaps://
  // or after StartTLS), before any request sent over TLS is handled. The default does nothing.
  virtual void tls_established(Session& session, const TlsPeer& peer) {
    (void)session;
    (void)peer;
  }
};

}  // namespace numadir::listener
