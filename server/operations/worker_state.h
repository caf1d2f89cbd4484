// server/operations/worker_state.h: ServerWorkerState, what one thread that runs operations keeps
// from one operation to the next: its read transactions (which also hold the backend's scratch),
// its slot of the operation counters, and scratch buffers that keep their capacity, so that the
// search-then-bind path allocates nothing once warm. OperationHandler::make_worker_state makes
// one per worker thread and per helping listener (threadpool/task.h); handle() gets it back.
//
// Thread contract: owned by the one thread that runs operations with it (Owner: that thread);
// made and destroyed there. Destroyed before the OperationHandler that made it and the
// Directory its transactions read.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/directory.h"
#include "backend/entry_filter.h"
#include "backend/password_scheme.h"
#include "server/monitoring/access_log.h"
#include "server/monitoring/operation_counters.h"
#include "server/operations/operation_context.h"
#include "server/operations/password_policy.h"
#include "server/operations/policy_engine.h"
#include "server/operations/server_session.h"
#include "threadpool/task.h"

namespace numadir::server {

class ServerWorkerState final : public LoggingWorkerState {
 public:
  // `owner` identifies the handler that made it (handle() checks it gets its own).
  ServerWorkerState(const void* owner, const backend::Directory& directory,
                    OperationCounters::Slot& counters)
      : owner_(owner),
        directory_(directory),
        txn_(directory.begin_read()),
        side_txn_(directory.begin_read()),
        counters_(counters) {}

  const void* owner() const { return owner_; }
  // The read transaction of the operation's own reads.
  backend::ReadTxn& txn() { return *txn_; }
  // Hands over txn() (a paused search keeps it, pinned: backend::Directory::pin_snapshot) and
  // starts a new one for the operations that follow.
  std::unique_ptr<backend::ReadTxn> take_txn() {
    std::unique_ptr<backend::ReadTxn> taken = std::move(txn_);
    txn_ = directory_.begin_read();
    return taken;
  }
  // A second one, for reads made while the first is in use (group lookups during a search).
  backend::ReadTxn& side_txn() { return *side_txn_; }
  OperationCounters::Slot& counters() { return counters_; }

  // Scratch; each member keeps its capacity across operations. Owner: the worker thread.
  DnScratch dn;                               // OperationContext's DN helpers.
  Identity identity;                          // A search's copy of its session's identity.
  std::string bind_ndn;                       // A simple bind's name, normalized.
  std::vector<std::string_view> bind_values;  // Its entry's userPassword values (views).
  PasswordState bind_state;                   // Its entry's password policy state,
  PasswordState bind_effective;               // with the lockout state in memory over it,
  PasswordState::Values bind_state_values;    // and the values read (views).
  std::string bind_subentry;                  // Its entry's pwdPolicySubentry.
  std::string bind_entry_dn;                  // Its entry's DN as stored.
  backend::PasswordScratch password;          // Its password checks' buffers.
  PolicyMemo policy_memo;                     // The last password policy read.
  std::string search_base;                    // A search's backend::SearchSpec::base.
  std::string entry_ndn;                      // Each search result's normalized DN.
  backend::EntryFilterScratch filter;         // A search's per-entry filter of denied items.
  std::vector<const schema::AttributeType*> item_types;  // A search filter's item types.

 private:
  const void* const owner_;
  const backend::Directory& directory_;
  std::unique_ptr<backend::ReadTxn> txn_;
  const std::unique_ptr<backend::ReadTxn> side_txn_;
  OperationCounters::Slot& counters_;
};

}  // namespace numadir::server
