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
// listener destroys the Session after the last handle() of its connection has returned and the
// last OpenOperation of its connection has been released.
//
// Most operations end when handle() returns. One that must stay open (a persistent search fed as
// changes come, an update the single writer completes later) calls ResponseSink::detach() during
// handle() and keeps the OpenOperation it returns: see OpenOperation.
//
// make_worker_state() runs on each thread that will call handle() or make requests (every pool
// worker, and each listener) as that thread starts; the thread then passes its state to every
// handle() it runs, and destroys it when it ends, before the Frontend's stop() returns.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/check.h"
#include "listener/request_worker_state.h"
#include "listener/tls.h"
#include "listener/wire/ldap_message.h"
#include "threadpool/task.h"

namespace numadir::listener {

// What the listener knows of a connection when it opens.
// The client process of an ldapi:// connection, as the kernel saw it at connect (SO_PEERCRED).
struct PeerCredentials {
  uid_t uid = 0;
  gid_t gid = 0;
  pid_t pid = 0;
};

struct ConnectionInfo {
  std::uint64_t id = 0;  // Unique for the process's life (conn= in the log).
  // "IP:port" of the client; for ldapi:// "PATH=<socket path>" (slapd's form).
  std::string peer;
  std::uint16_t local_port = 0;  // 0 for ldapi://.
  bool tls = false;              // Accepted on an ldaps:// listener (or after StartTLS).
  // Accepted on an ldapi:// listener: a local, confidential channel with the peer's
  // credentials (nullopt when the kernel did not give them).
  bool local = false;
  std::optional<PeerCredentials> peer_credentials;
  // The accepting listener thread's WorkerState (made by the handler's make_worker_state), for
  // what the handler does on that thread for this connection (open_session, notice,
  // tls_established, the Session's destruction): valid during open_session only. nullptr when
  // the connection was not opened by a Listener.
  threadpool::WorkerState* listener_state = nullptr;
};

// Where a request came from, for the access log.
struct RequestOrigin {
  // Its number on its connection, from 0, in the order the listener read the connection's
  // requests (slapd's op=; every request counts, unbinds, abandons and StartTLS too).
  std::uint64_t number = 0;
  std::string_view pdu;  // Its bytes (the whole LDAPMessage); empty if unknown.
  // CLOCK_MONOTONIC nanoseconds (threadpool::steady_ns()) when the listener read the bytes that
  // completed the request's PDU (one clock read per read from the socket, shared by every
  // request that read completed); 0 unless FrontendOptions::stamp_requests is on.
  std::int64_t received_ns = 0;
};

// The server's per-connection state (bound identity, paged-results cookies, ...).
class Session {
 public:
  virtual ~Session() = default;
};

// An operation that outlives the handle() call that started it (ResponseSink::detach). Its
// holder sends the operation's responses through it, from any thread, until it finishes the
// operation or the listener ends it.
//
// While open, the operation counts as outstanding on its connection, as a running one does: a
// BindRequest waits for it, it counts against max_outstanding_per_connection, StartTLS is
// refused. It ends in one of three ways:
//   - finish(): its last response is queued; it stops counting as outstanding.
//   - the OpenOperation is destroyed unfinished: it ends without a response.
//   - the listener ends it: an AbandonRequest for its message ID, an Unbind, or the connection
//     closing (the client went, a protocol error, the server stops). abandoned() turns true,
//     whatever the holder sends after is dropped, and on_end (set_on_end) runs so that whoever
//     feeds the operation drops it.
// In every case the connection (and its socket: a reused fd never gets another connection's
// bytes) stays until the OpenOperation is destroyed: a connection closes only once every
// OpenOperation of it has been released. Frontend::stop() waits for that too, so a holder must
// drop the operation when on_end runs.
//
// Output backpressure: each connection bounds the response bytes queued for its socket
// (ListenerLimits::max_output_bytes). Past the bound the connection is not read and none of its
// requests starts; an operation producing output (a search) checks writable() between messages
// and, when it is false, pauses without holding a worker: it keeps the operation open
// (ResponseSink::detach) and asks set_on_writable() to be run again, on a worker, once half of
// the bound has drained. send() itself never blocks and never refuses: it queues what it is
// given, so the bound is exceeded by at most what a producer sends between two checks.
//
// Thread contract: the holder calls send, finish, abandoned and set_on_end from any thread, one
// call at a time (it serializes them, e.g. under its own lock), and may destroy the
// OpenOperation on any thread, including inside on_end. on_end runs on the connection's
// listener thread.
class OpenOperation {
 public:
  // Ends the operation without a response unless it was finished or ended; releases the
  // connection.
  virtual ~OpenOperation() = default;
  // Encodes `message` (an entry, a reference, an IntermediateResponse, with its controls; its
  //   views need only live during the call) and queues it for the connection, after everything
  //   the operation sent before. Does nothing once the operation ended.
  // Requires: not finished.
  virtual void send(const wire::LdapMessage& message) = 0;
  // Encodes and queues the operation's final response and ends the operation. Does nothing
  //   (the response is dropped) once the listener ended it.
  // Requires: not finished.
  virtual void finish(const wire::LdapMessage& last_message) = 0;
  // Returns: true once the listener ended the operation (abandon, unbind, close).
  virtual bool abandoned() const = 0;
  // Sets what runs when the listener ends the operation: at most once, on the listener thread,
  //   never if the holder finished or released the operation first. If the operation had
  //   already ended, it runs soon after, on the listener thread. It may run while a send,
  //   finish or destruction is under way on the holder's thread (those then do nothing), so it
  //   should only tell the feeder to drop the operation (e.g. find it by message ID under the
  //   feeder's lock) and must not assume the OpenOperation still exists. Must not block.
  // Requires: called at most once.
  virtual void set_on_end(std::function<void()> on_end) = 0;
  // Returns: whether the connection takes more output now (false past max_output_bytes).
  virtual bool writable() const { return true; }
  // Sets what runs once the connection's output has drained to half the bound: `resume`, once,
  //   on a thread of the connection's pool (a worker, or its listener helping), with that
  //   thread's WorkerState; soon when it has drained already. Dropped unrun (destroyed on the
  //   listener thread) if the operation ends first (abandon, unbind, close, stop), so `resume`
  //   may own the holder's state, OpenOperation included. The default (a holder that never
  //   sees writable() false) aborts.
  // Requires: at most one set at a time (it is taken when it runs); not finished.
  virtual void set_on_writable(std::function<void(threadpool::WorkerState&)> resume) {
    (void)resume;
    NUMADIR_CHECK(false, "OpenOperation::set_on_writable on an operation without an output bound");
  }
  // Gathers what send() is given into writes of at least `bytes` (0, the default: each message
  //   is queued as it comes): for a holder streaming many messages to a client that takes them
  //   all (a sync refresh), which then costs the connection a write, and the client a read, per
  //   batch rather than per message. What is gathered is queued once it reaches `bytes`, and by
  //   finish(), set_on_writable() and set_gather_bytes(0); writable() does not count it.
  //   The default (an operation whose messages go out one by one anyway) ignores it.
  virtual void set_gather_bytes(std::size_t bytes) { (void)bytes; }
};

// Where a handler sends the responses of one request. Owned by the listener; valid only during
// the handle() call it was passed to.
class ResponseSink {
 public:
  virtual ~ResponseSink() = default;
  // Encodes `response` (its views need only live during the call) and queues it for the
  // connection, in order. Entries of a large search are flushed to the socket as they come; a
  // client that does not read stalls only its own connection's operations, which pause at the
  // connection's output bound (writable()).
  virtual void send(const wire::LdapMessage& response) = 0;
  // Returns: true once the operation was abandoned (AbandonRequest, Unbind, or the connection
  //   closed): a long search checks it between entries and stops without a SearchResultDone.
  virtual bool abandoned() const = 0;
  // Returns: whether the connection takes more output now (OpenOperation::writable); a search
  //   that finds it false pauses (detach, then OpenOperation::set_on_writable). The default is
  //   for sinks without a bound.
  virtual bool writable() const { return true; }
  // Keeps the operation open after handle() returns: what was sent so far is queued, and the
  //   rest goes through the returned OpenOperation, which the handler may keep and hand to
  //   another thread. The operation stays outstanding until that ends it (OpenOperation).
  // Returns: the open operation, or nullptr if this sink cannot keep operations open (the
  //   default: a sink wrapping another one, which has not been taught to pass detach() on).
  // Requires: called at most once, during handle(); no send() on this sink after it.
  virtual std::unique_ptr<OpenOperation> detach() { return nullptr; }
  // Returns: where the request came from. The default is for sinks that do not know.
  virtual RequestOrigin origin() const { return {}; }
};

class RequestHandler {
 public:
  virtual ~RequestHandler() = default;
  // Returns: the state for a new connection. Called on the accepting listener thread.
  virtual std::unique_ptr<Session> open_session(const ConnectionInfo& info) = 0;
  // Returns: the per-worker state handle() gets on the calling thread (never nullptr): a
  //   RequestWorkerState, whose caches recycle the requests the thread makes and runs, or a
  //   state derived from it. Called concurrently by threads starting. The default holds nothing
  //   else.
  virtual std::unique_ptr<RequestWorkerState> make_worker_state() {
    return std::make_unique<RequestWorkerState>();
  }
  // Runs one request on a worker thread and sends its response(s) (none for operations that
  // have none). `request` is any operation but UnbindRequest and AbandonRequest, which the
  // listener carries out itself; its views stay valid during the call. `state` is the calling
  // thread's, made by this handler's make_worker_state(). Never throws, never blocks on the
  // network: a failure becomes an LDAP result code in a response.
  virtual void handle(const wire::LdapMessage& request, Session& session, ResponseSink& sink,
                      threadpool::WorkerState& state) = 0;
  // Called on the listener thread with each request the listener carries out itself (for the
  // access log): UnbindRequest and AbandonRequest just before it does (`response` nullptr: they
  // have none), StartTLS once its response is queued (`response`). Must not block. The default
  // does nothing.
  virtual void notice(const wire::LdapMessage& request, Session& session,
                      const RequestOrigin& origin, const wire::LdapMessage* response) {
    (void)request;
    (void)session;
    (void)origin;
    (void)response;
  }
  // Called for a request that was read and then abandoned before it started (an Abandon, an
  // Unbind or the connection closing while it waited: handle() never sees it), on the thread that
  // drops it (for the access log). Must not block. The default
  // does nothing.
  virtual void not_run(const wire::LdapMessage& request, Session& session,
                       const RequestOrigin& origin) {
    (void)request;
    (void)session;
    (void)origin;
  }
  // Called on the listener thread when the connection's TLS handshake has finished (ldaps://
  // or after StartTLS), before any request sent over TLS is handled. The default does nothing.
  virtual void tls_established(Session& session, const TlsPeer& peer) {
    (void)session;
    (void)peer;
  }
};

}  // namespace numadir::listener
