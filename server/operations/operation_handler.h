// server/operations/operation_handler.h: the server's operation handlers behind the listener's
// RequestHandler seam: every LDAP operation (RFC 4511, 4513, 4532, 3062, 2696) carried out
// against a backend::Directory. Network-independent: a request comes in as a decoded
// LdapMessage and its responses go out through a ResponseSink.
//
// Binds as slapd's: a name that is not a DN gets invalidDNSyntax, a method numadir lacks
// authMethodNotSupported, every failure on an entry or password invalidCredentials.
// The handler itself only dispatches: it counts the operation, refuses controls it cannot
// honour, and hands the request to its unit (bind_operation.h, search_operation.h,
// compare_operation.h, add_operation.h, modify_operation.h, delete_operation.h,
// rename_operation.h, extended_operation.h; cn=Monitor in server/monitoring/monitor_search.h),
// which share the immutable OperationContext (operation_context.h) and answer through a
// ResultSender (result_sender.h). Access is decided by AccessControl (access_control.h); Status
// codes become LDAP results in result_codes.h only.
//
// Thread contract: constructed on the main thread before the listener starts; after that
// make_worker_state(), open_session() and handle() may be called from any number of threads at
// once: the handler's state is immutable except the operation counters (each worker writes its
// own slot). Each thread that runs operations makes its ServerWorkerState with
// make_worker_state() (its read transactions, scratch buffers and counter slot) and passes it
// to every handle() it runs; destroy those states, then the handler, and then the Directory
// (which must outlive the handler and every Session it opened).
#pragma once

#include <memory>
#include <vector>

#include "backend/directory.h"
#include "base/status.h"
#include "listener/request_handler.h"
#include "listener/wire/ldap_message.h"
#include "server/monitoring/operation_counters.h"
#include "server/operations/access_control.h"
#include "server/operations/operation_context.h"
#include "server/operations/policy_engine.h"

namespace numadir::server {

class ResultSender;
class ServerSession;
class ServerWorkerState;

class OperationHandler final : public listener::RequestHandler {
 public:
  // Requires: `directory` outlives this handler; so does options.access, compiled against the
  // directory's schema (OperationContext::compile_access_rules). A root_dn that does not parse
  // as a DN is ignored (no rootdn); the config check reports it before this is built.
  OperationHandler(backend::Directory& directory, HandlerOptions options);
  ~OperationHandler() override;
  OperationHandler(const OperationHandler&) = delete;
  OperationHandler& operator=(const OperationHandler&) = delete;

  // Returns: a ServerSession, bound anonymously.
  std::unique_ptr<listener::Session> open_session(const listener::ConnectionInfo& info) override;
  // Returns: a ServerWorkerState for the calling thread: two read transactions of the
  //   directory (begun on first use), a counter slot, empty scratch.
  std::unique_ptr<listener::RequestWorkerState> make_worker_state() override;
  // Runs `request` and sends its responses through `sink`, each with the request's message ID.
  // Requires: `session` came from this handler's open_session(), `state` from its
  // make_worker_state() and belongs to the calling thread. Never throws: every failure is an
  // LDAP result. Requests that have no response (responses sent by a confused client) are
  // dropped. With metrics on (HandlerOptions::metrics) each is measured (OperationMeter).
  void handle(const listener::wire::LdapMessage& request, listener::Session& session,
              listener::ResponseSink& sink, threadpool::WorkerState& state) override;
  // Counts the StartTLS requests the listener answers itself (`response` set) as extended
  // operations (with metrics on, their results too, latency from the request's read); unbind
  // and abandon are not operations (as handle() has them).
  void notice(const listener::wire::LdapMessage& request, listener::Session& session,
              const listener::RequestOrigin& origin,
              const listener::wire::LdapMessage* response) override;
  // With metrics on: counts each request dropped before it ran as abandoned.
  void not_run(const listener::wire::LdapMessage& request, listener::Session& session,
               const listener::RequestOrigin& origin) override;
  // Records the connection's TLS (and client certificate) in its ServerSession; with metrics
  // on, counts the handshake, full or resumed.
  void tls_established(listener::Session& session, const listener::TlsPeer& peer) override;
  // Returns: the operations handle() ran (and notice() counted) so far, by kind, and the
  //   successful binds.
  OperationTotals operation_totals() const { return counters_.totals(); }
  // Returns: the accounts locked by failed binds so far (0 without a password policy).
  std::uint64_t password_lockouts() const;

 private:
  struct Units;  // One per operation (operation_handler.cc).

  // handle() past its checks: refuses what the session may not do, else runs the unit.
  void run(const listener::wire::LdapMessage& request, ServerSession& session,
           ServerWorkerState& worker, ResultSender& sender);

  const OperationContext context_;
  // The password policy when enabled, else nullptr. After context_ (it reads it), before units_
  // (they use it): destroyed after them, flushing its lockout state while the writer runs.
  const std::unique_ptr<PolicyEngine> policy_;
  OperationCounters counters_;  // A slot per worker state; counting never contends.
  const std::unique_ptr<const Units> units_;
};

}  // namespace numadir::server
