// server/operations/modify_operation.h: the Modify operation (RFC 4511 §4.6): the request checked
// as slapd's frontend checks it, write access to each attribute modified (the entry itself is
// not asked for, as slapd), the cleartext userPassword values it adds hashed with the default
// scheme unless cleartext passwords are allowed, then one Directory::modify whose Status becomes
// the result.
//
// Thread contract: immutable; run() may be called by any number of workers at once.
#pragma once

#include <vector>

#include "backend/directory.h"
#include "listener/wire/ldap_message.h"
#include "server/operations/operation_access.h"
#include "server/operations/operation_context.h"
#include "server/operations/result_sender.h"
#include "server/operations/server_session.h"
#include "server/operations/update_common.h"
#include "server/operations/worker_state.h"

namespace numadir::server {

class ModifyOperation {
 public:
  // Requires: `context` outlives this object.
  explicit ModifyOperation(const OperationContext& context) : context_(context) {}

  // Runs `request` (a ModifyRequest) as `who` and sends the ModifyResponse.
  void run(const listener::wire::LdapMessage& request, const Identity& who,
           ServerWorkerState& state, ResultSender& sender) const;

 private:
  // Checks the request before access is asked. Returns: the entry's name, or nullopt after
  // sending the refusal.
  std::optional<ParsedName> check_request(const listener::wire::ModifyRequest& modify,
                                          ResultSender& sender) const;
  // Fills `out` with the request's modifications, each attribute's write access checked.
  // Returns: false after sending the refusal.
  bool modifications(const listener::wire::ModifyRequest& modify, const ParsedName& name,
                     const OperationAccess& access, ServerWorkerState& state,
                     std::vector<backend::Modification>& out, ResultSender& sender) const;

  const OperationContext& context_;
};

}  // namespace numadir::server
