// backend/replica.cc: a replication consumer's changes (ReplicaChange, update_job.h) applied in
// the writer's transaction: entries found by their entryUUID through its eq index, stored as the
// provider sent them, moved with their subtree when their DN changed, removed, the entries a
// present phase did not name pruned, and the consumer's cookie stored beside them.
//
// Thread contract: as detail/update_util.h: the writer thread, holding DirectoryCore::write_mu.
#include <algorithm>
#include <cstdio>

#include "backend/detail/directory_core.h"
#include "backend/detail/update_util.h"
#include "schema/ascii.h"

namespace numadir::backend::detail {
namespace {

using Attributes = std::vector<schema::EntryAttribute>;

// The consumer's view of the entryUUID eq index inside one write transaction.
class UuidIndex {
 public:
  UuidIndex(const DirectoryCore& core, MDB_txn* txn) : core_(core), txn_(txn) {}

  // Errors: kUnsupported when no built eq index covers entryUUID.
  Status open() {
    const AttributeInfo* type = core_.op_types.entry_uuid;
    if (type == nullptr || type->type->equality == nullptr) {
      return unsupported("replication needs the entryUUID attribute type and its equality rule");
    }
    rule_ = type->type->equality;
    const int slot =
        core_.indexes.find_usable(*type, IndexKind::kEquality, rule_, mdb_txn_id(txn_));
    if (slot < 0) {
      return unsupported(
          "replication needs an eq index on entryUUID (database.indexes), built (numadir index)");
    }
    Result<Cursor> cursor = Cursor::open(txn_, core_.indexes.index(slot).dbi);
    if (!cursor.ok()) {
      return cursor.status();
    }
    cursor_ = std::move(*cursor);
    return Status();
  }

  // Returns: the id of the entry whose entryUUID is `uuid`, 0 if none. Errors: kStorage.
  Result<EntryId> find(std::string_view uuid) {
    if (!core_.catalog.normalize(*rule_, uuid, normalized_)) {
      return EntryId{0};  // Not a UUID: no entry can have it.
    }
    ids_.clear();
    NUMADIR_RETURN_IF_ERROR(
        ids_for_key(cursor_, index_key(IndexKind::kEquality, normalized_), &ids_));
    return ids_.empty() ? EntryId{0} : ids_.front();
  }

 private:
  const DirectoryCore& core_;
  MDB_txn* const txn_;
  const schema::MatchingRule* rule_ = nullptr;
  Cursor cursor_;
  std::string normalized_;
  IdList ids_;
};

// Returns: the stored entryUUID of `view`, lower-case, or "" when it has none.
Result<std::string> stored_uuid(const DirectoryCore& core, const EntryView& view) {
  AttributeView attribute;
  Result<bool> found = view.find(core.op_types.entry_uuid->name, &attribute);
  if (!found.ok()) {
    return found.status();
  }
  std::string_view value;
  if (!*found || !attribute.values.next(&value)) {
    return std::string();
  }
  return schema::ascii_lowered(value);
}

Result<EntryView> read_view(const DirectoryCore& core, MDB_txn* txn, EntryId id) {
  EntryView view;
  Result<bool> found = read_entry(core, txn, id, &view);
  if (!found.ok()) {
    return found.status();
  }
  if (!*found) {
    return Status(StatusCode::kStorage,
                  "an index names id " + std::to_string(id) + " but id2entry has no such entry");
  }
  return view;
}

ChangeRecord record(ChangeKind kind, EntryId id, std::string dn, const Stamp& stamp) {
  ChangeRecord change;
  change.kind = kind;
  change.entry_id = id;
  change.dn = std::move(dn);
  change.csn = stamp.csn;
  return change;
}

// Replaces the stored content of entry `id` (under dn key `key`) with `attributes` (canonical),
// keeping its place in the tree. The DN is stored as `dn` spells it.
Status replace_in_place(DirectoryCore& core, MDB_txn* txn, EntryId id, const std::string& dn,
                        std::string_view key, const Stamp& stamp, Attributes attributes,
                        std::vector<ChangeRecord>& changes) {
  Result<EntryView> view = read_view(core, txn, id);
  if (!view.ok()) {
    return view.status();
  }
  const EntryId parent_id = view->parent_id();
  IndexKeys before;
  NUMADIR_RETURN_IF_ERROR(core.indexes.entry_keys(core.catalog, *view, &before));
  schema::Entry entry;
  entry.dn = dn;
  entry.attributes = std::move(attributes);
  const schema::ObjectClass* structural = nullptr;
  NUMADIR_RETURN_IF_ERROR(check_entry_schema(core, entry, &structural));
  stamp_new_entry(core.op_types, stamp,
                  structural != nullptr ? structural->primary_name() : std::string_view(),
                  /*keep_existing=*/true, entry.attributes);
  IndexKeys after;
  core.indexes.entry_keys(core.catalog, entry.attributes, &after);
  NUMADIR_RETURN_IF_ERROR(core.indexes.apply(txn, id, before, after));
  std::string encoded;
  const std::string stored_key(key);
  const EntryHeader header{parent_id, entry.dn, stored_key};
  NUMADIR_RETURN_IF_ERROR(put_entry(core, txn, id, header, entry.attributes, 0, encoded));
  changes.push_back(record(ChangeKind::kModify, id, entry.dn, stamp));
  return Status();
}

Status remove_entry(DirectoryCore& core, MDB_txn* txn, EntryId id, const Stamp& stamp,
                    std::vector<ChangeRecord>& changes) {
  Result<EntryView> view = read_view(core, txn, id);
  if (!view.ok()) {
    return view.status();
  }
  const std::string dn(view->dn());
  NUMADIR_RETURN_IF_ERROR(apply_remove(core, txn, dn, stamp, &changes.emplace_back()));
  return Status();
}

Status upsert(DirectoryCore& core, MDB_txn* txn, UuidIndex& uuids, const ReplicaItem& item,
              const Stamp& stamp, EntryId& next_id, std::vector<ChangeRecord>& changes) {
  Result<schema::Dn> dn = schema::Dn::parse(item.entry.dn);
  if (!dn.ok()) {
    return Status(StatusCode::kInvalidDnSyntax, dn.status().message());
  }
  const std::string key = dn_key(*dn, core.normalizer);
  if (!key_in_subtree(key, core.suffix_key)) {
    return Status(StatusCode::kNoSuchObject,
                  item.entry.dn + " is not under the database suffix " + core.options.suffix);
  }
  Attributes attributes;
  NUMADIR_RETURN_IF_ERROR(
      canonicalize_attributes(core.catalog, item.entry.attributes, &attributes));
  // What this server computes on read (entryDN, hasSubordinates, numSubordinates,
  // subschemaSubentry) is not stored, whatever the provider sent of its own.
  std::erase_if(attributes, [&](const schema::EntryAttribute& attribute) {
    return core.op_types.computed(core.catalog.resolve(description_type(attribute.description))) !=
           ComputedAttribute::kNone;
  });
  // The Sync State control's UUID is the entry's identity, whatever the attributes say.
  set_single(attributes, core.op_types.entry_uuid, item.uuid);

  Result<EntryId> by_uuid = uuids.find(item.uuid);
  if (!by_uuid.ok()) {
    return by_uuid.status();
  }
  Result<EntryId> by_dn = core.dns.find(txn, key);
  if (!by_dn.ok()) {
    return by_dn.status();
  }
  EntryId target = *by_dn;
  if (*by_uuid != 0 && *by_uuid != *by_dn) {
    // Renamed or moved on the provider: move ours, subtree and all, to the new DN first.
    if (*by_dn != 0) {
      Result<bool> children = has_children(core, txn, *by_dn);
      if (!children.ok()) {
        return children.status();
      }
      if (*children) {
        return Status(StatusCode::kEntryAlreadyExists,
                      item.entry.dn + " is held by an entry of another entryUUID with children");
      }
      NUMADIR_RETURN_IF_ERROR(remove_entry(core, txn, *by_dn, stamp, changes));
    }
    Result<EntryView> view = read_view(core, txn, *by_uuid);
    if (!view.ok()) {
      return view.status();
    }
    const std::string old_dn(view->dn());
    const std::string new_rdn = dn->rdn_string(0);
    const std::string superior = dn->parent().to_string();
    ChangeRecord& renamed = changes.emplace_back();
    NUMADIR_RETURN_IF_ERROR(apply_rename(core, txn, old_dn, new_rdn, /*delete_old_rdn=*/false,
                                         std::string_view(superior), stamp, &renamed));
    target = *by_uuid;
  }
  if (target != 0) {
    return replace_in_place(core, txn, target, item.entry.dn, key, stamp, std::move(attributes),
                            changes);
  }
  schema::Entry entry;
  entry.dn = item.entry.dn;
  entry.attributes = std::move(attributes);
  AddOptions options;
  options.import = true;  // Operational values kept as the provider sent them.
  AddScratch scratch;
  const EntryId id = next_id;
  NUMADIR_RETURN_IF_ERROR(add_in_txn(core, txn, entry, stamp, options, scratch, &next_id));
  changes.push_back(record(ChangeKind::kAdd, id, entry.dn, stamp));
  return Status();
}

Status prune(DirectoryCore& core, MDB_txn* txn, const ReplicaPrune& spec, const Stamp& stamp,
             std::vector<ChangeRecord>& changes) {
  Result<std::string> base = dn_key_of(spec.base, core.normalizer);
  if (!base.ok()) {
    return base.status();
  }
  // Collected first (dn2id in key order is a preorder walk), removed after in reverse order:
  // children before their parents.
  std::vector<EntryId> gone;
  {
    Result<Cursor> cursor = Cursor::open(txn, core.dns.dn2id());
    if (!cursor.ok()) {
      return cursor.status();
    }
    std::string_view key = *base;
    std::string_view value;
    Result<bool> at = cursor->get(MDB_SET_RANGE, &key, &value);
    for (; at.ok() && *at && key_in_subtree(key, *base); at = cursor->get(MDB_NEXT, &key, &value)) {
      const bool in_scope = spec.scope == Scope::kSubtree ||
                            (spec.scope == Scope::kBase && key == *base) ||
                            (spec.scope == Scope::kOneLevel && parent_key(key) == *base) ||
                            (spec.scope == Scope::kChildren && key != *base);
      if (!in_scope) {
        continue;
      }
      const EntryId id = load_id(value);
      Result<EntryView> view = read_view(core, txn, id);
      if (!view.ok()) {
        return view.status();
      }
      Result<std::string> uuid = stored_uuid(core, *view);
      if (!uuid.ok()) {
        return uuid.status();
      }
      if (!std::binary_search(spec.keep.begin(), spec.keep.end(), *uuid)) {
        gone.push_back(id);
      }
    }
    NUMADIR_RETURN_IF_ERROR(at.status());
  }
  for (auto it = gone.rbegin(); it != gone.rend(); ++it) {
    Result<bool> children = has_children(core, txn, *it);
    if (!children.ok()) {
      return children.status();
    }
    if (*children) {
      continue;  // An entry the provider kept lies below: it stays as the glue that holds it.
    }
    NUMADIR_RETURN_IF_ERROR(remove_entry(core, txn, *it, stamp, changes));
  }
  return Status();
}

}  // namespace

std::string replica_cookie_key(std::uint32_t rid) {
  char key[32];
  std::snprintf(key, sizeof key, "replica:%03u:cookie", rid);
  return key;
}

Status apply_replica(DirectoryCore& core, MDB_txn* txn, const ReplicaChange& change,
                     const Stamp& stamp, std::vector<ChangeRecord>& changes) {
  UuidIndex uuids(core, txn);
  NUMADIR_RETURN_IF_ERROR(uuids.open());
  Result<EntryId> next_id = load_next_id(core, txn);
  if (!next_id.ok()) {
    return next_id.status();
  }
  EntryId next = *next_id;
  for (const ReplicaItem& item : change.items) {
    const std::string uuid = schema::ascii_lowered(item.uuid);
    if (item.kind == ReplicaItem::Kind::kUpsert) {
      NUMADIR_RETURN_IF_ERROR(upsert(core, txn, uuids, item, stamp, next, changes));
      continue;
    }
    Result<EntryId> id = uuids.find(uuid);
    if (!id.ok()) {
      return id.status();
    }
    if (*id == 0) {
      if (change.skip_missing_deletes) {
        continue;
      }
      return Status(StatusCode::kNoSuchObject, "no entry has entryUUID " + uuid);
    }
    NUMADIR_RETURN_IF_ERROR(remove_entry(core, txn, *id, stamp, changes));
  }
  NUMADIR_RETURN_IF_ERROR(store_next_id(core, txn, next));
  if (change.prune.has_value()) {
    NUMADIR_RETURN_IF_ERROR(prune(core, txn, *change.prune, stamp, changes));
  }
  if (change.cookie.has_value()) {
    NUMADIR_RETURN_IF_ERROR(
        db_put(txn, core.meta, replica_cookie_key(change.rid), *change.cookie, 0).status());
  }
  return Status();
}

Result<std::optional<std::string>> run_replica_cookie(const DirectoryCore& core,
                                                      std::uint32_t rid) {
  Result<Txn> txn = Txn::begin(*core.env, true);
  if (!txn.ok()) {
    return txn.status();
  }
  std::string_view value;
  Result<bool> found = db_get(txn->raw(), core.meta, replica_cookie_key(rid), &value);
  if (!found.ok()) {
    return found.status();
  }
  return *found ? std::optional<std::string>(std::string(value)) : std::nullopt;
}

}  // namespace numadir::backend::detail
