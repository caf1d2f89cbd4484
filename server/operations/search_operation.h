// server/operations/search_operation.h: the Search operation (RFC 4511 §4.5): cn=Monitor (its own
// unit, server/monitoring/monitor_search.h), the root DSE and cn=Subschema, then the directory,
// streaming each entry as it is found; size and time limits per identity class; the Paged
// Results control (RFC 2696, server/operations/search_paging.h). Filters on the root DSE and
// cn=Subschema are evaluated by the backend's evaluator (backend/entry_filter.h), as on stored
// entries.
//
// Thread contract: immutable; run() may be called by any number of workers at once, each with
// its own worker state.
#pragma once

#include <cstdint>
#include <string_view>

#include "backend/directory.h"
#include "listener/wire/ldap_message.h"
#include "server/monitoring/monitor_search.h"
#include "server/operations/operation_access.h"
#include "server/operations/operation_context.h"
#include "server/operations/result_sender.h"
#include "server/operations/search_paging.h"
#include "server/operations/server_session.h"
#include "server/operations/worker_state.h"

namespace numadir::server {

// The smaller of the client's and the server's limits for the requester's identity class
// (0: none).
struct SearchLimits {
  std::uint64_t size = 0;
  std::uint64_t time_s = 0;
};
// Returns: the limits of `search` by `who` under `options` (a paged search: size_limit_paged).
SearchLimits search_limits(const HandlerOptions& options, const Identity& who,
                           const listener::wire::SearchRequest& search, bool paged);

class SearchOperation {
 public:
  // Requires: `context` and `monitor` outlive this object.
  SearchOperation(const OperationContext& context, const MonitorSearch& monitor)
      : context_(context), monitor_(monitor) {}

  // Runs `request` (a SearchRequest) as `session`'s identity and sends its entries and its
  // SearchResultDone (nothing more once it is abandoned).
  void run(const listener::wire::LdapMessage& request, ServerSession& session,
           ServerWorkerState& state, ResultSender& sender) const;

 private:
  // Sends the entries of a search of the root DSE or cn=Subschema (`base_ndn`); returns false,
  // sending nothing, if the base is neither.
  bool search_special(const listener::wire::LdapMessage& request, const OperationAccess& access,
                      std::string_view base_ndn, ServerWorkerState& state,
                      ResultSender& sender) const;
  // Searches the directory, from where `page` resumes, and sends the result; or, when the
  // connection's output fills up, pauses it (PausedSearch) to go on later.
  void search_directory(const listener::wire::LdapMessage& request, const OperationAccess& access,
                        ServerSession& session, ServerWorkerState& state, SearchPage& page,
                        ResultSender& sender) const;

  const OperationContext& context_;
  const MonitorSearch& monitor_;
};

}  // namespace numadir::server
