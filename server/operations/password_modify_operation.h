// server/operations/password_modify_operation.h: the Password Modify extended operation (RFC
// 3062): the bound identity's own password or, with the write right on its userPassword,
// another entry's; the old password checked whenever given (as slapd); a new password made up
// when none is given (returned as genPasswd); stored hashed with the default scheme (refused
// with constraintViolation if that value's cost were over a ceiling, password_cost.h). The change
// goes to the directory's writer as a job whose check decides access in the write transaction
// (run_update), as Modify's does.
//
// Thread contract: immutable; run() may be called by any number of workers at once.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"
#include "listener/wire/ldap_message.h"
#include "server/operations/operation_access.h"
#include "server/operations/operation_context.h"
#include "server/operations/policy_engine.h"
#include "server/operations/result_sender.h"
#include "server/operations/server_session.h"
#include "server/operations/worker_state.h"

namespace numadir::server {

class PasswordModifyOperation {
 public:
  // Requires: `context` and `policy` (nullptr: no password policy) outlive this object.
  PasswordModifyOperation(const OperationContext& context, const PolicyEngine* policy)
      : context_(context), policy_(policy) {}

  // Runs `request` (an ExtendedRequest named kPasswordModifyOid) as `session`'s identity and
  // sends the ExtendedResponse. Under a password policy the change is checked and carries the
  // policy state first (password_change.h); a wrong old password is refused before (53).
  void run(const listener::wire::LdapMessage& request, ServerSession& session,
           ServerWorkerState& state, ResultSender& sender) const;

 private:
  // The old password of a request, as the worker found it: given or not, and the stored
  // userPassword value it matched in the worker's snapshot.
  struct OldPassword {
    bool given = false;
    std::optional<std::string> matched;
  };
  // Returns: the userPassword value of entry `dn` that `password` verifies against, read in
  //   `state`'s snapshot; nullopt if none does or the entry cannot be read.
  std::optional<std::string> matching_password(std::string_view dn, std::string_view password,
                                               ServerWorkerState& state) const;
  // The job's check, in the write transaction: ok if `who` may write the userPassword of `dn`
  // (else kInsufficientAccessRights) and, when the request gave an old password, its matched
  // value is still stored (else kUnwillingToPerform).
  static Status may_store(const OperationContext& context, const EntryReader& reader,
                          const Identity& who, std::string_view dn, std::string_view ndn,
                          const OldPassword& old);

  const OperationContext& context_;
  const PolicyEngine* const policy_;
};

}  // namespace numadir::server
