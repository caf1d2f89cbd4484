// server/replication/sync_provider.h: SyncProvider, numadir as an RFC 4533 replication provider
// (what slapd's syncprov overlay does): searches carrying the Sync Request control are served
// as content synchronization for consumers, slapd's syncrepl and numadir's own
// (server/replication/consumer.h) alike.
//
// A sync search is a search like any other for access control and the size limit: its
// requester (the replication identity) sees only the entries and attributes it may read. It
// runs in two phases:
//   - Refresh: the entries in scope, in one snapshot of the directory, each with a Sync State
//     control (add) carrying its entryUUID. With a cookie (the CSN the consumer holds):
//       * covered by the session log (backend::Directory::session_log_since): only the entries
//         whose entryCSN is newer, and the entryUUIDs of the entries deleted since in a
//         syncIdSet with refreshDeletes (the delete phase);
//       * not covered: the newer entries, and the entryUUIDs of the unchanged ones in syncIdSets
//         (the present phase: the consumer deletes what was not named);
//       * the provider's contextCSN itself: nothing has changed.
//     A cookie whose CSN is newer than the contextCSN, or any cookie of a provider that has no
//     CSN yet, is refused with unwillingToPerform, as slapd does. A cookie with no CSN of the
//     provider's server id is ignored (a full refresh).
//     refreshOnly ends with a SearchResultDone carrying the Sync Done control and the cookie
//     ("rid=NNN,sid=SSS,csn=CSN", the contextCSN read before the snapshot).
//   - Persist (refreshAndPersist): a Sync Info refreshDelete / refreshPresent with refreshDone
//     and the cookie, then every change committed (the directory's change feed, in commit order,
//     subscribed before the refresh's snapshot: a change the refresh already showed may come
//     again, which a consumer applies as the same content) as an entry with a Sync State of add,
//     modify or delete and the change's cookie. An entry modified or renamed out of the scope, the
//     filter or the requester's reach is sent as deleted.
//
// No back-pressure on the writer: the change feed's callback copies each change into the
// search's own queue, bounded by queue_changes, and never waits; a worker sends what is queued
// while the connection takes output, pausing (without holding a worker) when it does not. A
// consumer whose queue overflows is ended with busy (51), "fell behind": it comes back with its
// cookie and the session log (or a present phase) brings it up to date. Memory per consumer is
// bounded by queue_changes change records (each its DN(s), CSN and entryUUID) plus the
// connection's output bound (server.max_output_bytes).
//
// Thread contract: one SyncProvider serves every worker (SyncSearchService); status() from any
// thread. The change feed's callbacks run on the writer thread and only queue. Destroy the
// provider after the listeners stopped (every sync search ended: Frontend::stop waits for the
// open operations, whose ends remove them) and before the Directory.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "backend/directory.h"
#include "base/thread_annotations.h"
#include "server/operations/sync_search.h"
#include "server/replication/sync_provider_status.h"

namespace numadir::server::replication {

class SyncSearch;

struct SyncProviderOptions {
  std::uint64_t queue_changes = 4096;     // Per persistent search.
  std::uint32_t max_consumers = 64;       // Sync searches served at once; more get busy.
  std::uint64_t session_log_entries = 0;  // As the directory was opened with (for status).
  std::uint32_t server_id = 0;            // database.server_id: the sid of the cookies.
};

class SyncProvider final : public SyncSearchService {
 public:
  // Requires: `directory` outlives the provider.
  SyncProvider(backend::Directory& directory, SyncProviderOptions options);
  SyncProvider(const SyncProvider&) = delete;
  SyncProvider& operator=(const SyncProvider&) = delete;
  ~SyncProvider() override;

  bool serves(const listener::wire::Control& control) const override;
  void run(const OperationContext& context, const listener::wire::LdapMessage& request,
           const OperationAccess& access, ServerSession& session, ServerWorkerState& state,
           ResultSender& sender) override;

  ProviderStatus status() const;

 private:
  friend class SyncSearch;
  // Forgets `search` (it ended); it is destroyed once its last user lets go, outside the lock.
  void remove(const SyncSearch* search) NUMADIR_EXCLUDES(mu_);

  backend::Directory& directory_;
  const SyncProviderOptions options_;
  mutable Mutex mu_;
  std::vector<std::shared_ptr<SyncSearch>> searches_ NUMADIR_GUARDED_BY(mu_);
  std::atomic<std::uint64_t> served_{0};
  std::atomic<std::uint64_t> refused_{0};
  std::atomic<std::uint64_t> fell_behind_{0};
};

}  // namespace numadir::server::replication
