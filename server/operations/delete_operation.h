// server/operations/delete_operation.h: the Delete operation (RFC 4511 §4.8): the entry checked
// as slapd's frontend checks it (a DN, not the root DSE or the subschema subentry, inside the
// naming context), then one remove job for the writer (run_update) whose check asks write access
// to the parent's children and to the entry itself in the write transaction, and whose Status
// becomes the result.
//
// Thread contract: immutable; run() may be called by any number of workers at once.
#pragma once

#include "listener/wire/ldap_message.h"
#include "server/operations/operation_context.h"
#include "server/operations/result_sender.h"
#include "server/operations/server_session.h"
#include "server/operations/worker_state.h"

namespace numadir::server {

class DeleteOperation {
 public:
  // Requires: `context` outlives this object.
  explicit DeleteOperation(const OperationContext& context) : context_(context) {}

  // Runs `request` (a DelRequest) as `who` and sends the DelResponse.
  void run(const listener::wire::LdapMessage& request, const Identity& who,
           ServerWorkerState& state, ResultSender& sender) const;

 private:
  const OperationContext& context_;
};

}  // namespace numadir::server
