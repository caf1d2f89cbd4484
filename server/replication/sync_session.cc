// server/replication/sync_session.cc: see sync_session.h.
#include "server/replication/sync_session.h"

#include <algorithm>
#include <utility>

#include "base/check.h"

namespace numadir::server::replication {

SyncSession::SyncSession(std::uint32_t rid, SyncScope scope, SyncMode mode, bool full_refresh,
                         std::size_t batch_entries)
    : rid_(rid),
      scope_(std::move(scope)),
      mode_(mode),
      full_refresh_(full_refresh),
      batch_entries_(batch_entries) {
  NUMADIR_CHECK(rid >= 1 && rid <= 999, "SyncSession: rid out of range");
  NUMADIR_CHECK(batch_entries >= 1, "SyncSession: empty batches");
}

void SyncSession::set_scope_empty() { scope_empty_ = true; }

Status SyncSession::take_cookie(const std::optional<std::string_view>& cookie) {
  if (!cookie.has_value()) {
    return Status();
  }
  Result<SyncCookie> parsed = parse_sync_cookie(*cookie);
  if (!parsed.ok()) {
    return malformed("the provider sent a cookie that does not parse (" +
                     parsed.status().message() + "): \"" + std::string(*cookie) + "\"");
  }
  if (parsed->rid.has_value() && static_cast<std::uint32_t>(*parsed->rid) != rid_) {
    return malformed("the provider sent the cookie of rid " + std::to_string(*parsed->rid) +
                     " to rid " + std::to_string(rid_) + ": \"" + std::string(*cookie) + "\"");
  }
  cookie_.emplace(*cookie);
  cookie_csn_.clear();
  for (const std::string_view csn : parsed->csns) {
    if (csn > cookie_csn_) {
      cookie_csn_.assign(csn);
    }
  }
  last_cookie_.assign(*cookie);
  return Status();
}

Status SyncSession::require_refresh(const char* what) const {
  if (phase_ == SyncPhase::kRefresh) {
    return Status();
  }
  return malformed(
      std::string("the provider sent ") + what +
      (phase_ == SyncPhase::kPersist ? " in the persist phase" : " after the search was done"));
}

void SyncSession::note_present(const SyncUuid& uuid) {
  if (!scope_empty_) {
    named_.push_back(format_uuid(uuid));
  }
}

void SyncSession::add_delete(const SyncUuid& uuid) {
  backend::ReplicaItem& item = items_.emplace_back();
  item.kind = backend::ReplicaItem::Kind::kDelete;
  item.uuid = format_uuid(uuid);
  refresh_items_ = refresh_items_ || phase_ == SyncPhase::kRefresh;
  refresh_batch_ = refresh_batch_ || phase_ == SyncPhase::kRefresh;
  ++deletes_received_;
}

void SyncSession::end_present_phase() {
  if (scope_empty_) {
    named_.clear();
    return;
  }
  backend::ReplicaPrune prune;
  prune.base = scope_.base;
  prune.scope = scope_.scope;
  std::sort(named_.begin(), named_.end());
  named_.erase(std::unique(named_.begin(), named_.end()), named_.end());
  prune.keep = std::move(named_);
  named_.clear();
  prune_ = std::move(prune);
}

Status SyncSession::end_refresh(bool refresh_done) {
  if (refresh_done) {
    phase_ = mode_ == SyncMode::kRefreshAndPersist ? SyncPhase::kPersist : SyncPhase::kDone;
  }
  return Status();
}

Status SyncSession::on_entry(std::string_view dn, const listener::wire::AttributeList& attributes,
                             const SyncState& state) {
  if (phase_ == SyncPhase::kDone) {
    return require_refresh("an entry");
  }
  if (state.state == SyncStateKind::kPresent) {
    NUMADIR_RETURN_IF_ERROR(require_refresh("a present entry"));
    note_present(state.uuid);
    return take_cookie(state.cookie);
  }
  if (state.state == SyncStateKind::kDelete) {
    add_delete(state.uuid);
    return take_cookie(state.cookie);
  }
  backend::ReplicaItem& item = items_.emplace_back();
  item.kind = backend::ReplicaItem::Kind::kUpsert;
  item.uuid = format_uuid(state.uuid);
  item.entry.dn.assign(dn);
  // Packed: one allocation here, where copies of each value would take one each (and be freed
  // on the thread that prepares the batch).
  std::size_t bytes = 0;
  for (const listener::wire::AttributeList::Attribute& attribute : attributes.attributes()) {
    bytes += backend::packed_replica_attribute_size(attribute.type, attributes.values(attribute));
  }
  item.packed.reserve(bytes);
  for (const listener::wire::AttributeList::Attribute& attribute : attributes.attributes()) {
    backend::pack_replica_attribute(item.packed, attribute.type, attributes.values(attribute));
  }
  if (phase_ == SyncPhase::kRefresh) {
    refresh_batch_ = true;
    if (!scope_empty_) {
      named_.push_back(item.uuid);
    }
  }
  pending_bytes_ += item.entry.dn.size() + item.packed.size();
  ++entries_received_;
  return take_cookie(state.cookie);
}

Status SyncSession::on_info(const SyncInfo& info) {
  if (phase_ == SyncPhase::kDone) {
    return require_refresh("a Sync Info message");
  }
  switch (info.kind) {
    case SyncInfoKind::kNewCookie:
      return take_cookie(info.cookie);
    case SyncInfoKind::kRefreshPresent:
      NUMADIR_RETURN_IF_ERROR(require_refresh("the end of a present phase"));
      NUMADIR_RETURN_IF_ERROR(take_cookie(info.cookie));
      end_present_phase();
      return end_refresh(info.refresh_done);
    case SyncInfoKind::kRefreshDelete:
      NUMADIR_RETURN_IF_ERROR(require_refresh("the end of a delete phase"));
      NUMADIR_RETURN_IF_ERROR(take_cookie(info.cookie));
      if (full_refresh_ && info.refresh_done) {
        end_present_phase();
      } else {
        named_.clear();  // A delete phase prunes nothing: the deletes were named.
      }
      return end_refresh(info.refresh_done);
    case SyncInfoKind::kSyncIdSet:
      if (info.refresh_deletes) {
        for (const SyncUuid& uuid : info.uuids) {
          add_delete(uuid);
        }
      } else {
        NUMADIR_RETURN_IF_ERROR(require_refresh("a syncIdSet of present entries"));
        for (const SyncUuid& uuid : info.uuids) {
          note_present(uuid);
        }
      }
      return take_cookie(info.cookie);
  }
  return malformed("unknown Sync Info message");
}

Status SyncSession::on_done(const SyncDone& done) {
  if (phase_ == SyncPhase::kDone) {
    return require_refresh("a second Sync Done");
  }
  NUMADIR_RETURN_IF_ERROR(take_cookie(done.cookie));
  if (phase_ == SyncPhase::kRefresh && (!done.refresh_deletes || full_refresh_)) {
    end_present_phase();
  }
  named_.clear();
  phase_ = SyncPhase::kDone;
  return Status();
}

std::optional<backend::ReplicaChange> SyncSession::take_batch() {
  if (items_.empty() && !cookie_.has_value() && !prune_.has_value()) {
    return std::nullopt;
  }
  backend::ReplicaChange change;
  change.rid = rid_;
  change.items = std::move(items_);
  change.prune = std::move(prune_);
  change.cookie = std::move(cookie_);
  change.cookie_csn = std::move(cookie_csn_);
  // Deletes in a refresh may repeat what a stopped consumer applied before its cookie.
  change.skip_missing_deletes = refresh_items_;
  refresh_items_ = false;
  // Its entries' CSNs do not advance the replica's contextCSN: only the cookie ending the
  // refresh does (ReplicaChange::refresh).
  change.refresh = refresh_batch_;
  refresh_batch_ = false;
  items_.clear();
  pending_bytes_ = 0;
  prune_.reset();
  cookie_.reset();
  cookie_csn_.clear();
  return change;
}

}  // namespace numadir::server::replication
