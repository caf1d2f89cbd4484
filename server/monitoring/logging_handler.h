// server/monitoring/logging_handler.h: a RequestHandler that writes the access log around another
// one: the connection opening and closing, each request and its result with the time it took, and
// the unbinds and abandons the listener carries out itself.
// Wrapped around the OperationHandler only when logging is on, so a server without a log pays
// nothing for it. Each operation writes its records through the LogWriter of the thread running
// it (its worker state's), the connection's events through its listener's; an operation kept open
// (detach) finishes through the log's shared writer.
//
// Thread contract: as RequestHandler (server/monitoring/access_log.h for the log's).
#pragma once

#include <memory>

#include "listener/request_handler.h"
#include "server/monitoring/access_log.h"

namespace numadir::server {

class LoggingHandler final : public listener::RequestHandler {
 public:
  // Requires: `inner` and `log` outlive this handler and every session it opened.
  LoggingHandler(listener::RequestHandler& inner, AccessLog& log, LogLevel level)
      : inner_(inner), log_(log), level_(level) {}

  std::unique_ptr<listener::Session> open_session(const listener::ConnectionInfo& info) override;
  // The inner handler's, which must be a LoggingWorkerState, with a LogWriter of its thread's.
  std::unique_ptr<listener::RequestWorkerState> make_worker_state() override;
  void handle(const listener::wire::LdapMessage& request, listener::Session& session,
              listener::ResponseSink& sink, threadpool::WorkerState& state) override;
  // Logs UNBIND, ABANDON with the message ID abandoned (slapd's `ABANDON msg=N`), or StartTLS
  // (EXT) and its result, then tells the inner handler.
  void notice(const listener::wire::LdapMessage& request, listener::Session& session,
              const listener::RequestOrigin& origin,
              const listener::wire::LdapMessage* response) override;
  // Logs the request, then ABANDONED, then tells the inner handler.
  void not_run(const listener::wire::LdapMessage& request, listener::Session& session,
               const listener::RequestOrigin& origin) override;
  // Logs the TLS handshake (protocol, cipher, client certificate) and tells the inner handler.
  void tls_established(listener::Session& session, const listener::TlsPeer& peer) override;

 private:
  listener::RequestHandler& inner_;
  AccessLog& log_;
  const LogLevel level_;
};

}  // namespace numadir::server
