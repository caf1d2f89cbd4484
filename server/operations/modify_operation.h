// server/operations/modify_operation.h: the Modify operation (RFC 4511 §4.6): the request checked
// as slapd's frontend checks it, the cleartext userPassword values it adds hashed with the
// default scheme unless cleartext passwords are allowed, the userPassword values it adds
// refused with constraintViolation when one's cost is over a ceiling (password_cost.h), then
// one modify job for the writer
// (run_update) whose check asks write access to each attribute modified (the entry itself is
// not asked for, as slapd) in the write transaction, and whose Status becomes the result.
//
// Thread contract: immutable; run() may be called by any number of workers at once.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "backend/directory.h"
#include "listener/wire/ldap_message.h"
#include "server/operations/operation_access.h"
#include "server/operations/operation_context.h"
#include "server/operations/policy_engine.h"
#include "server/operations/result_sender.h"
#include "server/operations/server_session.h"
#include "server/operations/update_common.h"
#include "server/operations/worker_state.h"

namespace numadir::server {

class ModifyOperation {
 public:
  // Requires: `context` and `policy` (nullptr: no password policy) outlive this object.
  ModifyOperation(const OperationContext& context, const PolicyEngine* policy)
      : context_(context), policy_(policy) {}

  // Runs `request` (a ModifyRequest) as `who` on `session` and sends the ModifyResponse. A change
  // of userPassword goes through the password policy first (password_change.h).
  void run(const listener::wire::LdapMessage& request, const Identity& who, ServerSession& session,
           ServerWorkerState& state, ResultSender& sender) const;

 private:
  // Checks the request before access is asked. Returns: the entry's name, or nullopt after
  // sending the refusal.
  std::optional<ParsedName> check_request(const listener::wire::ModifyRequest& modify,
                                          ResultSender& sender) const;
  // Fills `out` with the request's modifications and `types` with each one's attribute type
  // (nullptr when unknown). Returns: false after sending the refusal.
  bool modifications(const listener::wire::ModifyRequest& modify,
                     std::vector<backend::Modification>& out,
                     std::vector<const schema::AttributeType*>& types, ResultSender& sender) const;
  // The job's check: write access to each of `types` of the entry `dn` (normalized `ndn`), read
  // through `reader`. Returns: ok, or the refusal (refused()).
  static Status may_modify(const OperationContext& context, const EntryReader& reader,
                           const Identity& who, std::string_view dn, std::string_view ndn,
                           std::span<const schema::AttributeType* const> types);

  const OperationContext& context_;
  const PolicyEngine* const policy_;
};

}  // namespace numadir::server
