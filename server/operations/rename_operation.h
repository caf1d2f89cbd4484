// server/operations/rename_operation.h: the Modify DN operation (RFC 4511 §4.9): the entry, the
// new RDN and the new superior checked as slapd's frontend checks them, then one rename job for
// the writer (run_update) whose check asks, in the write transaction, write access to the old and
// the new parent's children (before the entry, as slapd does) and to the entry itself, and whose
// Status becomes the result.
//
// Thread contract: immutable; run() may be called by any number of workers at once.
#pragma once

#include "listener/wire/ldap_message.h"
#include "server/operations/operation_context.h"
#include "server/operations/result_sender.h"
#include "server/operations/server_session.h"
#include "server/operations/worker_state.h"

namespace numadir::server {

class RenameOperation {
 public:
  // Requires: `context` outlives this object.
  explicit RenameOperation(const OperationContext& context) : context_(context) {}

  // Runs `request` (a ModifyDNRequest) as `who` and sends the ModifyDNResponse.
  void run(const listener::wire::LdapMessage& request, const Identity& who,
           ServerWorkerState& state, ResultSender& sender) const;

 private:
  const OperationContext& context_;
};

}  // namespace numadir::server
