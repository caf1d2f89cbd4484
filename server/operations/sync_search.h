// server/operations/sync_search.h: SyncSearchService, the seam through which a search carrying
// a control of content synchronization (RFC 4533's Sync Request) reaches the replication
// provider (server/replication/sync_provider.h) without the operations depending on it.
//
// Thread contract: one service serves every worker at once: run() and serves() are called
// concurrently from any worker; the service locks what its searches share.
#pragma once

#include "listener/wire/ldap_message.h"
#include "server/operations/operation_access.h"
#include "server/operations/operation_context.h"
#include "server/operations/result_sender.h"
#include "server/operations/server_session.h"
#include "server/operations/worker_state.h"

namespace numadir::server {

class SyncSearchService {
 public:
  virtual ~SyncSearchService() = default;
  // Returns: whether `control` is one this service takes on a search.
  virtual bool serves(const listener::wire::Control& control) const = 0;
  // Runs search `request` (carrying a control the service serves) for `access`'s requester,
  // whose base exists for it (the search checked the base is not hidden): sends its entries and
  // result through `sender`, or keeps the operation open (ResultSender::detach) to go on. The
  // context outlives every operation the service keeps open.
  virtual void run(const OperationContext& context, const listener::wire::LdapMessage& request,
                   const OperationAccess& access, ServerSession& session, ServerWorkerState& state,
                   ResultSender& sender) = 0;
};

}  // namespace numadir::server
