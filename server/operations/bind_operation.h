// server/operations/bind_operation.h: the Bind operation (RFC 4511 §4.2, RFC 4513 §5): anonymous,
// simple with the rootdn's password or an entry's userPassword; SASL EXTERNAL over TLS with a
// client certificate (RFC 4513 §5.2.3) when TLS is configured.
//
// Privacy: a simple bind that fails for any reason tied to an entry or the password (no such
// entry, no userPassword, a wrong password, a stored value we cannot read) gets
// invalidCredentials with the same empty diagnostic, so a client cannot tell which. A name that
// is not a DN says nothing about the directory: it gets invalidDNSyntax, as from slapd. An
// authentication choice numadir does not implement gets authMethodNotSupported.
//
// Thread contract: immutable; run() may be called by any number of workers at once, each with
// its own worker state.
#pragma once

#include "listener/wire/ldap_message.h"
#include "server/operations/operation_context.h"
#include "server/operations/result_sender.h"
#include "server/operations/server_session.h"
#include "server/operations/worker_state.h"

namespace numadir::server {

class BindOperation {
 public:
  // Requires: `context` outlives this object.
  explicit BindOperation(const OperationContext& context) : context_(context) {}

  // Binds `session` as `request` asks (it is anonymous whatever the outcome until a bind
  // succeeds) and sends the BindResponse. Counts a successful simple bind with a name and
  // password in the worker's counters (an auth).
  void run(const listener::wire::LdapMessage& request, ServerSession& session,
           ServerWorkerState& state, ResultSender& sender) const;

 private:
  // A simple bind with a name and a password.
  void simple(const listener::wire::LdapMessage& request, ServerSession& session,
              ServerWorkerState& state, ResultSender& sender) const;
  // SASL EXTERNAL: the identity from the connection's verified client certificate.
  void external(const listener::wire::LdapMessage& request, ServerSession& session,
                ResultSender& sender) const;

  const OperationContext& context_;
};

}  // namespace numadir::server
