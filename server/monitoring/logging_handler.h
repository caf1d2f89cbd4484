// server/monitoring/logging_handler.h: a RequestHandler that writes the access log around another
// one: the connection opening and closing, each request and its result with the time it took, and
// the unbinds and abandons the listener carries out itself.
// Wrapped around the OperationHandler only when logging is on, so a server without a log pays
// nothing for it.
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
  // The inner handler's: handle() passes it through.
  std::unique_ptr<threadpool::WorkerState> make_worker_state() override {
    return inner_.make_worker_state();
  }
  void handle(const listener::wire::LdapMessage& request, listener::Session& session,
              listener::ResponseSink& sink, threadpool::WorkerState& state) override;
  // Logs UNBIND, or ABANDON with the message ID abandoned (slapd's `ABANDON msg=N`).
  void notice(const listener::wire::LdapMessage& request, listener::Session& session) override;
  // Logs the TLS handshake (protocol, cipher, client certificate) and tells the inner handler.
  void tls_established(listener::Session& session, const listener::TlsPeer& peer) override;

 private:
  listener::RequestHandler& inner_;
  AccessLog& log_;
  const LogLevel level_;
};

// Returns: the access log's line describing `request` (without timestamp or conn/op prefix),
//   e.g. `SRCH base="dc=example,dc=com" scope=2 deref=0 filter="(uid=a)" attrs="1.1"`.
std::string describe_request(const listener::wire::LdapMessage& request);

}  // namespace numadir::server
