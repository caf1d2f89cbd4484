// server/operations/password_modify_operation.h: the Password Modify extended operation (RFC
// 3062): the bound identity's own password or, with the write right on its userPassword,
// another entry's; the old password checked whenever given (as slapd); a new password made up
// when none is given (returned as genPasswd); stored hashed with the default scheme.
//
// Thread contract: immutable; run() may be called by any number of workers at once.
#pragma once

#include "listener/wire/ldap_message.h"
#include "server/operations/operation_context.h"
#include "server/operations/result_sender.h"
#include "server/operations/server_session.h"
#include "server/operations/worker_state.h"

namespace numadir::server {

class PasswordModifyOperation {
 public:
  // Requires: `context` outlives this object.
  explicit PasswordModifyOperation(const OperationContext& context) : context_(context) {}

  // Runs `request` (an ExtendedRequest named kPasswordModifyOid) as `who` and sends the
  // ExtendedResponse.
  void run(const listener::wire::LdapMessage& request, const Identity& who,
           ServerWorkerState& state, ResultSender& sender) const;

 private:
  // Returns: whether `password` is one of the userPassword values of entry `dn`.
  bool old_password_matches(std::string_view dn, std::string_view password,
                            ServerWorkerState& state) const;
  // Stores `new_password` (nullopt: a generated one) hashed as the userPassword of `dn` and
  // sends the response.
  void store(std::string_view dn, std::optional<std::string_view> new_password, const Identity& who,
             ResultSender& sender) const;

  const OperationContext& context_;
};

}  // namespace numadir::server
