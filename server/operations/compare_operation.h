// server/operations/compare_operation.h: the Compare operation (RFC 4511 §4.10) on a directory
// entry, the root DSE or cn=Subschema: the assertion normalized by the attribute's equality
// rule, compared with every value of the attribute and its subtypes (options must cover the
// asserted ones). As slapd: an entry the client may not know of is missing (noSuchObject), then
// the compare right decides.
//
// Thread contract: immutable; run() may be called by any number of workers at once.
#pragma once

#include "listener/wire/ldap_message.h"
#include "server/operations/operation_context.h"
#include "server/operations/result_sender.h"
#include "server/operations/server_session.h"
#include "server/operations/worker_state.h"

namespace numadir::server {

class CompareOperation {
 public:
  // Requires: `context` outlives this object.
  explicit CompareOperation(const OperationContext& context) : context_(context) {}

  // Runs `request` (a CompareRequest) as `who` and sends the CompareResponse.
  void run(const listener::wire::LdapMessage& request, const Identity& who,
           ServerWorkerState& state, ResultSender& sender) const;

 private:
  // Returns: compareTrue if a value of `entry` matching `info` (with options `wanted_options`)
  //   equals `assertion` under `rule`; compareFalse if the attribute is there but no value
  //   equals it; noSuchAttribute otherwise.
  OwnedResult compare_values(const schema::Entry& entry, const backend::AttributeInfo& info,
                             std::string_view wanted_options, const schema::MatchingRule& rule,
                             std::string_view assertion) const;

  const OperationContext& context_;
};

}  // namespace numadir::server
