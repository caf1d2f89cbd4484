// server/replication/sync_session.h: one syncrepl search of a consumer, as RFC 4533 defines its
// messages: what the provider sends (entries with their Sync State, Sync Info messages, the Sync
// Done control) turned into batches for the directory's writer (backend::ReplicaChange), each
// carrying the cookie that covers it.
//
//   SyncSession session(rid, {base, scope}, SyncMode::kRefreshAndPersist, cookie.empty(), 500);
//   for each message: session.on_entry(...) / on_info(...) / on_done(...)
//   when session.batch_full() or the provider has nothing more for now:
//     if (auto batch = session.take_batch()) writer.run(job of *batch);
//
// The refresh phase (§3.4.1): every entry sent as add or modify is stored (an upsert by
// entryUUID), one sent as present only noted; at the end of a present phase (a refreshPresent
// Sync Info, or a Sync Done without refreshDeletes) every entry in scope that the provider did
// not name is pruned; deletes (a Sync State delete, a syncIdSet with refreshDeletes) remove
// entries. A refresh's batches skip deletes of entries already gone (a consumer that stopped
// mid-refresh is sent again what it applied without its cookie). The persist phase (§3.4.2):
// each change as it comes; a delete of an unknown entry there is the provider's error.
//
// Anything a provider sends that breaks the protocol (a present state in the persist phase, a
// cookie of another rid or one that does not parse, a message after the search is done) is
// refused with kMalformed and a message naming it: the consumer then drops the connection
// without writing anything of the pending batch.
//
// Thread contract: owned and used by the consumer's thread only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backend/directory_update.h"
#include "base/status.h"
#include "listener/wire/ldap_message.h"
#include "server/replication/sync_protocol.h"

namespace numadir::server::replication {

enum class SyncPhase : std::uint8_t { kRefresh, kPersist, kDone };

struct SyncScope {
  std::string base;
  backend::Scope scope = backend::Scope::kSubtree;
};

class SyncSession {
 public:
  // `full_refresh`: the search was sent without a cookie, so the refresh brings the provider's
  // whole content and whatever it does not name is gone, whichever way it ends (slapd ends
  // such a refresh as a delete phase, refreshDeletes TRUE, having deleted nothing: a reload
  // after e-syncRefreshRequired must still drop what the provider no longer has).
  // Requires: 1 <= rid <= 999; batch_entries >= 1.
  SyncSession(std::uint32_t rid, SyncScope scope, SyncMode mode, bool full_refresh,
              std::size_t batch_entries);
  SyncSession(const SyncSession&) = delete;
  SyncSession& operator=(const SyncSession&) = delete;

  // Tells the session that the replica holds nothing in its scope (the base entry is
  // absent): everything in scope at its end is then what it stored, so it prunes nothing and
  // keeps no list of the entryUUIDs named. Requires: before the first message.
  void set_scope_empty();

  // A SearchResultEntry with its Sync State control value (`state`, decoded by the caller).
  // Errors: kMalformed (see above).
  Status on_entry(std::string_view dn, const listener::wire::AttributeList& attributes,
                  const SyncState& state);
  // A Sync Info IntermediateResponse. Errors: kMalformed.
  Status on_info(const SyncInfo& info);
  // The SearchResultDone (success) with its Sync Done control value; ends the search (a
  // refreshOnly one, or a persist one the provider ended). Errors: kMalformed.
  Status on_done(const SyncDone& done);

  SyncPhase phase() const { return phase_; }
  // Whether the pending batch reached batch_entries items, or kBatchBytes of entries (take it
  // before reading more).
  bool batch_full() const {
    return items_.size() >= batch_entries_ || pending_bytes_ >= kBatchBytes;
  }
  // The entry bytes (DNs and attributes as received) past which a batch is full whatever its
  // count: a consumer holds a few batches at once, and entries with photos or certificates
  // would otherwise make a batch of thousands hundreds of megabytes.
  static constexpr std::size_t kBatchBytes = std::size_t{8} << 20;
  // Whether changes or a cookie wait to be taken.
  bool has_pending() const { return !items_.empty() || cookie_.has_value() || prune_.has_value(); }
  // Returns: the pending changes and cookie as one batch, or nullopt when nothing is pending.
  // The session starts a new batch.
  std::optional<backend::ReplicaChange> take_batch();

  // Counters for monitoring: entries and deletes received (present notices not counted).
  std::uint64_t entries_received() const { return entries_received_; }
  std::uint64_t deletes_received() const { return deletes_received_; }
  // The last cookie the provider sent (applied or pending), "" if none.
  const std::string& last_cookie() const { return last_cookie_; }

 private:
  Status take_cookie(const std::optional<std::string_view>& cookie);
  void end_present_phase();
  void add_delete(const SyncUuid& uuid);
  void note_present(const SyncUuid& uuid);
  Status end_refresh(bool refresh_done);
  Status require_refresh(const char* what) const;

  const std::uint32_t rid_;
  const SyncScope scope_;
  const SyncMode mode_;
  const bool full_refresh_;
  const std::size_t batch_entries_;
  bool scope_empty_ = false;  // set_scope_empty() was called: nothing to prune.

  SyncPhase phase_ = SyncPhase::kRefresh;
  std::vector<backend::ReplicaItem> items_;
  std::size_t pending_bytes_ = 0;      // Of the entries in items_.
  std::optional<std::string> cookie_;  // Pending: stored with the next batch.
  std::string cookie_csn_;             // Pending: the greatest CSN of cookie_ ("" for none).
  std::optional<backend::ReplicaPrune> prune_;
  bool refresh_items_ = false;  // The pending batch holds deletes of the refresh phase.
  bool refresh_batch_ = false;  // The pending batch holds items of the refresh phase.
  // Refresh only: the entryUUIDs the provider named (sent, or noted present), for the prune.
  std::vector<std::string> named_;
  std::string last_cookie_;
  std::uint64_t entries_received_ = 0;
  std::uint64_t deletes_received_ = 0;
};

}  // namespace numadir::server::replication
