// server/operations/add_operation.h: the Add operation (RFC 4511 §4.7): the request checked as
// slapd's frontend checks it, the RDN's values added to the entry, cleartext userPassword values
// hashed with the default scheme unless cleartext passwords are allowed, userPassword values
// whose cost is over a ceiling refused with constraintViolation (password_cost.h), then one add
// job for the writer (run_update) whose check asks write access to the parent's children, the new
// entry and each of its attributes in the write transaction, and whose Status becomes the result.
//
// Thread contract: immutable; run() may be called by any number of workers at once.
#pragma once

#include <string_view>

#include "listener/wire/ldap_message.h"
#include "schema/entry.h"
#include "server/operations/operation_access.h"
#include "server/operations/operation_context.h"
#include "server/operations/policy_engine.h"
#include "server/operations/result_sender.h"
#include "server/operations/server_session.h"
#include "server/operations/update_common.h"
#include "server/operations/worker_state.h"

namespace numadir::server {

class AddOperation {
 public:
  // Requires: `context` outlives this object.
  // Requires: `policy` (nullptr: no password policy) outlives this object too.
  AddOperation(const OperationContext& context, const PolicyEngine* policy)
      : context_(context), policy_(policy) {}

  // Runs `request` (an AddRequest) as `who` and sends the AddResponse.
  void run(const listener::wire::LdapMessage& request, const Identity& who,
           ServerWorkerState& state, ResultSender& sender) const;

 private:
  // Checks the request before access is asked: values for every attribute, a DN, attributes,
  // not the root DSE or the subschema subentry, inside the naming context. Returns: the
  // entry's name, or nullopt after sending the refusal.
  std::optional<ParsedName> check_request(const listener::wire::AddRequest& add,
                                          ResultSender& sender) const;
  // Returns: ok if `access`'s requester may write the new `entry` (normalized DN `ndn`) and each
  //   attribute it is given (as slapd); else the refusal. Part of the job's check.
  static Status may_write(const OperationContext& context, const OperationAccess& access,
                          std::string_view ndn, const schema::Entry& entry);

  // The password policy of the new entry (slapd's ppolicy_add): one userPassword value, its
  // quality (but from the rootdn), and pwdChangedTime when passwords age. Returns: false after
  // sending the refusal; else adds pwdChangedTime to `entry` (named in `internal`) if due.
  bool apply_policy(const listener::wire::LdapMessage& request, const Identity& who,
                    schema::Entry& entry, std::vector<std::string>& internal,
                    ServerWorkerState& state, ResultSender& sender) const;

  const OperationContext& context_;
  const PolicyEngine* const policy_;
};

}  // namespace numadir::server
