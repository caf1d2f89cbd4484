// server/operations/extended_operation.h: the Extended operation (RFC 4511 §4.12): Who am I? (RFC
// 4532), Password Modify (RFC 3062, server/operations/password_modify_operation.h) and StartTLS
// (RFC 4511 §4.14: the listener carries it out when TLS is configured; one that reaches the
// handler is refused). Any other OID is a protocolError, as slapd answers it. Like slapd,
// responses carry no responseName for these operations.
//
// Thread contract: immutable; run() may be called by any number of workers at once.
#pragma once

#include "listener/wire/ldap_message.h"
#include "server/operations/operation_context.h"
#include "server/operations/password_modify_operation.h"
#include "server/operations/result_sender.h"
#include "server/operations/server_session.h"
#include "server/operations/worker_state.h"

namespace numadir::server {

class ExtendedOperation {
 public:
  // Requires: `context` outlives this object.
  // Requires: `context` and `policy` (nullptr: no password policy) outlive this object.
  ExtendedOperation(const OperationContext& context, const PolicyEngine* policy)
      : password_modify_(context, policy) {}

  // Runs `request` (an ExtendedRequest) as `session`'s identity and sends the ExtendedResponse.
  void run(const listener::wire::LdapMessage& request, ServerSession& session,
           ServerWorkerState& state, ResultSender& sender) const;

 private:
  const PasswordModifyOperation password_modify_;
};

}  // namespace numadir::server
