// server/operations/bind_operation.h: the Bind operation (RFC 4511 §4.2, RFC 4513 §5): anonymous,
// simple with the rootdn's password or an entry's userPassword; SASL EXTERNAL over TLS with a
// client certificate (RFC 4513 §5.2.3) when TLS is configured.
//
// Privacy: a simple bind that fails for any reason tied to an entry or the password (no such
// entry, no userPassword, a wrong password, a stored value we cannot read or that is over a cost
// ceiling) gets invalidCredentials with the same empty diagnostic, so a client cannot tell which.
// A name that is not a DN says nothing about the directory: it gets invalidDNSyntax, as from
// slapd. An authentication choice numadir does not implement gets authMethodNotSupported.
//
// Costly stored values ({PBKDF2-*}, {ARGON2}, {CRYPT}: backend::password_scheme_costly):
//   - A value over a ceiling of the cost policy ([passwords] max_*) is refused without being
//     hashed: its cost is read from the value itself. A bind that fails with such a value says
//     so once, on the access log when it is on, else on standard error.
//   - A value within the ceilings is never hashed on a listener thread. A bind runs inline on a
//     listener that helps its pool (WorkerState::helping(), threadpool/task.h); there it checks
//     the cheap values (the salted SHA family, cleartext) as always, and on meeting a costly one
//     detaches the operation (ResponseSink::detach) and hands the whole bind to the pool as a
//     task that only workers take, which runs it again on a worker with the worker's state and
//     answers through the open operation. The bind stays outstanding meanwhile, so the
//     connection's later requests wait for it (RFC 4511 §4.2.1); if the pool refuses the task
//     (full, stopping) the bind answers busy (51). An operation the listener ends meanwhile
//     (unbind, close) is dropped by the worker unchecked.
//
// Thread contract: immutable; run() may be called by any number of workers, and listeners
// helping their pool, at once, each with its own worker state. A bind handed to a worker holds
// its Session through the open operation (the listener keeps the Session until every open
// operation of its connection is released) and this BindOperation (which outlives the pools:
// the frontend stops before the handler is destroyed).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "backend/password_scheme.h"
#include "listener/wire/ldap_message.h"
#include "server/operations/operation_context.h"
#include "server/operations/password_policy.h"
#include "server/operations/policy_engine.h"
#include "server/operations/result_sender.h"
#include "server/operations/server_session.h"
#include "server/operations/worker_state.h"

namespace numadir::server {

class BindOperation {
 public:
  // Requires: `context` and `policy` (nullptr: no password policy) outlive this object.
  BindOperation(const OperationContext& context, const PolicyEngine* policy)
      : context_(context), policy_(policy) {}

  // Binds `session` as `request` asks (it is anonymous whatever the outcome until a bind
  // succeeds) and sends the BindResponse, now or, for a costly stored value met on a helping
  // listener, from a worker (see above). Counts a successful simple bind with a name and
  // password in the counters of the thread that checked the password (an auth).
  void run(const listener::wire::LdapMessage& request, ServerSession& session,
           ServerWorkerState& state, ResultSender& sender) const;

 private:
  class Verification;  // A bind handed to a worker (bind_operation.cc).

  // What checking one stored value gave.
  enum class Check : std::uint8_t {
    kMatch,
    kNoMatch,  // Also: unreadable, or over a ceiling (then noted in `refused`).
    kCostly,   // Costly, within the ceilings, and not checked: costly values are not allowed.
  };

  // A simple bind with a name and a password. `cheap_only`: running inline on a listener,
  // where a costly stored value hands the bind to `state.helping()`.
  void simple(const listener::wire::LdapMessage& request, ServerSession& session,
              ServerWorkerState& state, ResultSender& sender, bool cheap_only) const;
  // Checks `password` against `stored` unless that is costly and `cheap_only`, with the buffers
  // of `scratch` (the calling thread's). Notes the first value refused over a ceiling in
  // `refused`.
  Check check_value(std::string_view password, std::string_view stored, bool cheap_only,
                    backend::PasswordScratch& scratch,
                    std::optional<backend::CostExcess>& refused) const;
  // Detaches the bind and submits it to `state.helping()` to run on a worker. A sink that cannot
  // keep operations open (none on the listener's path) has the bind checked here after all.
  void hand_to_worker(const listener::wire::LdapMessage& request, ServerSession& session,
                      ServerWorkerState& state, ResultSender& sender) const;
  // Writes the one line saying that the bind named `ndn` refused a value over a ceiling.
  void log_refusal(const listener::wire::LdapMessage& request, const ServerSession& session,
                   std::string_view ndn, const backend::CostExcess& refused) const;
  // The end of a simple bind of an entry a password policy governs (`policy`, the entry's state
  // in state.bind_state): counts a failure or clears the failures, refuses a locked account
  // (`locked`: found locked before the password was checked), an expired password, and uses a
  // grace login (written before the answer), as slapd's ppolicy overlay does.
  void finish_with_policy(const listener::wire::LdapMessage& request, ServerSession& session,
                          ServerWorkerState& state, ResultSender& sender, std::string_view ndn,
                          const PasswordPolicy& policy, bool locked, bool lock_durable,
                          bool matched) const;
  // Answers a bind of a locked account: invalidCredentials (with accountLocked when
  // use_lockout), once the lock is durable (FailureTable::when_lock_durable).
  void answer_locked(const listener::wire::LdapMessage& request, std::string_view ndn,
                     bool lock_durable, ResultSender& sender) const;
  // A grace login: pwdGraceUseTime is written (checked again in the write transaction) before
  // the bind succeeds.
  void grace_login(const listener::wire::LdapMessage& request, ServerSession& session,
                   ServerWorkerState& state, ResultSender& sender, std::string_view ndn,
                   const PasswordPolicy& policy, UnixMicros now) const;
  // SASL EXTERNAL: the identity from the connection's verified client certificate.
  void external(const listener::wire::LdapMessage& request, ServerSession& session,
                ResultSender& sender) const;

  const OperationContext& context_;
  const PolicyEngine* const policy_;
};

}  // namespace numadir::server
