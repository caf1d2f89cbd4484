// server/monitoring/monitor_search.h: MonitorSearch, the Search operation below cn=Monitor
// (server/monitoring/monitor.h). The entries are built from the counters when a search comes,
// then scoped here and filtered by the backend's evaluator for decoded entries
// (backend/entry_filter.h: every filter item, ordering and substrings included).
//
// Access: the subtree exists for the rootdn only. Anyone else gets noSuchObject, exactly as for
// a name nothing holds, so the monitor does not even disclose that it exists.
//
// Thread contract: immutable; run() may be called by any number of workers at once.
#pragma once

#include <string_view>

#include "listener/wire/ldap_message.h"
#include "server/monitoring/operation_counters.h"
#include "server/operations/operation_context.h"
#include "server/operations/result_sender.h"
#include "server/operations/server_session.h"
#include "server/operations/worker_state.h"

namespace numadir::server {

class MonitorSearch {
 public:
  // Requires: `context` and `counters` (the operations cn=Operations shows) outlive this object.
  MonitorSearch(const OperationContext& context, const OperationCounters& counters)
      : context_(context), counters_(counters) {}

  // Answers `request` and returns true when `base_ndn` (its normalized base) is cn=Monitor or
  // below it and the context has a monitor; returns false, sending nothing, otherwise.
  bool run(const listener::wire::LdapMessage& request, const Identity& who,
           std::string_view base_ndn, ServerWorkerState& state, ResultSender& sender) const;

 private:
  const OperationContext& context_;
  const OperationCounters& counters_;
};

}  // namespace numadir::server
