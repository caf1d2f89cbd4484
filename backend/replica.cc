// backend/replica.cc: a replication consumer's changes (ReplicaChange, directory_update.h) applied
// in the writer's transaction: entries found by their entryUUID through its eq index, stored as the
// provider sent them, moved with their subtree when their DN changed, removed, the entries a
// present phase did not name pruned, and the consumer's cookie stored beside them. New entries
// are stored as an import stores them (detail/import_stages.h); every upsert's entry is prepared
// (canonical, checked, encoded, keyed) ahead of the writer by run_prepare_replica.
//
// Thread contract: run_prepare_replica on any thread (it reads only the directory's immutable
// parts); the rest as detail/update_util.h: the writer thread, holding DirectoryCore::write_mu.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <future>
#include <optional>
#include <utility>

#include "backend/detail/change_state.h"
#include "backend/detail/directory_core.h"
#include "backend/detail/import_stages.h"
#include "backend/detail/update_util.h"
#include "schema/ascii.h"

namespace numadir::backend {
namespace {

void put_length(std::string& out, std::size_t length) {
  const auto value = static_cast<std::uint32_t>(length);
  char bytes[sizeof value];
  std::memcpy(bytes, &value, sizeof value);
  out.append(bytes, sizeof value);
}

// Reads a length written by put_length at `at`, and moves past it.
std::uint32_t take_length(std::string_view packed, std::size_t& at) {
  std::uint32_t value = 0;
  std::memcpy(&value, packed.data() + at, sizeof value);
  at += sizeof value;
  return value;
}

std::string_view take_bytes(std::string_view packed, std::size_t& at) {
  const std::uint32_t length = take_length(packed, at);
  const std::string_view bytes = packed.substr(at, length);
  at += length;
  return bytes;
}

}  // namespace

// The packing: per attribute, its description's length and octets, the number of values, and
// each value's length and octets (lengths as 4-byte host-order integers: the packing never
// leaves the process).
void pack_replica_attribute(std::string& packed, std::string_view description,
                            std::span<const std::string_view> values) {
  put_length(packed, description.size());
  packed.append(description);
  put_length(packed, values.size());
  for (const std::string_view value : values) {
    put_length(packed, value.size());
    packed.append(value);
  }
}

std::size_t packed_replica_attribute_size(std::string_view description,
                                          std::span<const std::string_view> values) {
  std::size_t bytes = 2 * sizeof(std::uint32_t) + description.size();
  for (const std::string_view value : values) {
    bytes += sizeof(std::uint32_t) + value.size();
  }
  return bytes;
}

void unpack_replica_attributes(std::string_view packed, std::vector<schema::EntryAttribute>& out) {
  std::size_t count = 0;
  std::size_t at = 0;
  while (at < packed.size()) {
    if (count == out.size()) {
      out.emplace_back();
    }
    schema::EntryAttribute& attribute = out[count++];
    attribute.description.assign(take_bytes(packed, at));
    const std::uint32_t values = take_length(packed, at);
    attribute.values.resize(values);
    for (std::string& value : attribute.values) {
      value.assign(take_bytes(packed, at));
    }
  }
  out.resize(count);
}

}  // namespace numadir::backend

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
  Result<std::string_view> value = stored_entry_uuid(core, view);
  if (!value.ok()) {
    return value.status();
  }
  return schema::ascii_lowered(*value);
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

// A replicated change's record: its CSN is the entry's entryCSN as the provider sent it.
ChangeRecord record(ChangeKind kind, EntryId id, std::string dn, std::string_view csn,
                    std::string_view uuid) {
  ChangeRecord change;
  change.kind = kind;
  change.entry_id = id;
  change.dn = std::move(dn);
  change.csn.assign(csn);
  change.entry_uuid.assign(uuid);
  return change;
}

// Prepares the upsert of `uuid` with `entry` (owned: canonicalized and stamped in place) into
// `out`, as Directory::prepare_replica documents, stamping with scratch.stamp; checked against
// the schema when `check_schema` (ReplicaChange::check_schema).
Status prepare_upsert(const DirectoryCore& core, PrepareScratch& scratch, bool check_schema,
                      std::string_view uuid, schema::Entry& entry, ReplicaItem::Prepared& out) {
  NUMADIR_RETURN_IF_ERROR(dn_key_into(entry.dn, core.normalizer, out.key, scratch.dn));
  if (!key_in_subtree(out.key, core.suffix_key)) {
    return Status(StatusCode::kNoSuchObject,
                  entry.dn + " is not under the database suffix " + core.options.suffix);
  }
  Attributes& attributes = entry.attributes;
  NUMADIR_RETURN_IF_ERROR(canonicalize_in_place(core.catalog, attributes));
  // What this server computes on read (entryDN, hasSubordinates, numSubordinates,
  // subschemaSubentry) is not stored, whatever the provider sent of its own.
  std::erase_if(attributes, [&](const schema::EntryAttribute& attribute) {
    return core.op_types.computed(core.catalog.resolve(description_type(attribute.description))) !=
           ComputedAttribute::kNone;
  });
  // The Sync State control's UUID is the entry's identity, whatever the attributes say.
  set_single(attributes, core.op_types.entry_uuid, uuid);
  // Operational values are kept as the provider sent them; those it did not send are stamped.
  NUMADIR_RETURN_IF_ERROR(check_schema
                              ? check_and_encode(core, scratch.stamp, entry, out.key, out.encoded,
                                                 out.keys, scratch.check, scratch.uuids)
                              : encode_unchecked(core, scratch.stamp, entry, out.key, out.encoded,
                                                 out.keys, scratch.uuids));
  out.csn.assign(entry_csn_of(core, attributes));
  return Status();
}

// Replaces the stored content of entry `id` with the prepared one, keeping its place in the
// tree.
Status replace_in_place(const DirectoryCore& core, MDB_txn* txn, EntryId id,
                        const ReplicaItem& item, const ReplicaItem::Prepared& prepared,
                        std::string& scratch, std::vector<ChangeRecord>& changes) {
  Result<EntryView> view = read_view(core, txn, id);
  if (!view.ok()) {
    return view.status();
  }
  const EntryId parent_id = view->parent_id();
  IndexKeys before;
  NUMADIR_RETURN_IF_ERROR(core.indexes.entry_keys(core.catalog, *view, &before));
  NUMADIR_RETURN_IF_ERROR(core.indexes.apply(txn, id, before, prepared.keys));
  set_encoded_parent(prepared.encoded, parent_id, scratch);
  NUMADIR_RETURN_IF_ERROR(db_put(txn, core.id2entry, id_bytes(id), scratch, 0).status());
  changes.push_back(record(ChangeKind::kModify, id, item.entry.dn, prepared.csn, item.uuid));
  return Status();
}

// The record's CSN is `csn`, the batch's cookie CSN: a delete carries no entryCSN of its own
// ("": record_changes gives it the contextCSN as it stands).
Status remove_entry(DirectoryCore& core, MDB_txn* txn, EntryId id, const Stamp& stamp,
                    std::string_view csn, std::vector<ChangeRecord>& changes) {
  Result<EntryView> view = read_view(core, txn, id);
  if (!view.ok()) {
    return view.status();
  }
  const std::string dn(view->dn());
  ChangeRecord& removed = changes.emplace_back();
  NUMADIR_RETURN_IF_ERROR(apply_remove(core, txn, dn, stamp, &removed));
  removed.csn.assign(csn);
  return Status();
}

// What one batch's upserts share: the entryUUID index, the adder of new entries (an import's
// store: append-only ids, the parent found last remembered) and a buffer.
struct UpsertState {
  UuidIndex& uuids;
  ImportWriter& adder;
  std::string scratch;
  std::string_view delete_csn;  // ReplicaChange::cookie_csn.
};

Status upsert(DirectoryCore& core, MDB_txn* txn, UpsertState& state, const ReplicaItem& item,
              const ReplicaItem::Prepared& prepared, const Stamp& stamp,
              std::vector<ChangeRecord>& changes) {
  const std::string& dn = item.entry.dn;
  Result<EntryId> by_uuid = state.uuids.find(item.uuid);
  if (!by_uuid.ok()) {
    return by_uuid.status();
  }
  Result<EntryId> by_dn = core.dns.find(txn, prepared.key);
  if (!by_dn.ok()) {
    return by_dn.status();
  }
  EntryId target = *by_dn;
  if (*by_uuid != 0 && *by_uuid != *by_dn) {
    // Renamed or moved on the provider: move ours, subtree and all, to the new DN first.
    state.adder.forget_parent();
    if (*by_dn != 0) {
      Result<bool> children = has_children(core, txn, *by_dn);
      if (!children.ok()) {
        return children.status();
      }
      if (*children) {
        return Status(StatusCode::kEntryAlreadyExists,
                      dn + " is held by an entry of another entryUUID with children");
      }
      NUMADIR_RETURN_IF_ERROR(remove_entry(core, txn, *by_dn, stamp, state.delete_csn, changes));
    }
    Result<schema::Dn> parsed = schema::Dn::parse(dn);
    if (!parsed.ok()) {
      return Status(StatusCode::kInvalidDnSyntax, parsed.status().message());
    }
    Result<EntryView> view = read_view(core, txn, *by_uuid);
    if (!view.ok()) {
      return view.status();
    }
    const std::string old_dn(view->dn());
    const std::string new_rdn = parsed->rdn_string(0);
    const std::string superior = parsed->parent().to_string();
    ChangeRecord& renamed = changes.emplace_back();
    NUMADIR_RETURN_IF_ERROR(apply_rename(core, txn, old_dn, new_rdn, /*delete_old_rdn=*/false,
                                         std::string_view(superior), stamp, &renamed));
    renamed.csn = prepared.csn;  // Not the local stamp: replace_in_place stores the provider's.
    target = *by_uuid;
  }
  if (target != 0) {
    return replace_in_place(core, txn, target, item, prepared, state.scratch, changes);
  }
  const EntryId id = state.adder.next_id();
  NUMADIR_RETURN_IF_ERROR(state.adder.store(prepared.key, prepared.encoded, prepared.keys));
  changes.push_back(record(ChangeKind::kAdd, id, dn, prepared.csn, item.uuid));
  return Status();
}

Status prune(DirectoryCore& core, MDB_txn* txn, const ReplicaPrune& spec, const Stamp& stamp,
             std::string_view delete_csn, std::vector<ChangeRecord>& changes) {
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
    NUMADIR_RETURN_IF_ERROR(remove_entry(core, txn, *it, stamp, delete_csn, changes));
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
  {
    // New entries take ids past every stored one, in order: appended as an import appends.
    ImportWriter adder(core, txn, *next_id);
    NUMADIR_RETURN_IF_ERROR(adder.open());
    UpsertState state{uuids, adder, std::string(), change.cookie_csn};
    // For an item the consumer did not prepare (made for the first).
    ReplicaItem::Prepared own;
    schema::Entry copy;
    std::optional<PrepareScratch> scratch;
    for (const ReplicaItem& item : change.items) {
      if (item.kind == ReplicaItem::Kind::kUpsert) {
        const ReplicaItem::Prepared* prepared = item.prepared ? &*item.prepared : nullptr;
        if (prepared == nullptr) {
          copy.dn = item.entry.dn;
          if (item.packed.empty()) {
            copy.attributes = item.entry.attributes;
          } else {
            unpack_replica_attributes(item.packed, copy.attributes);
          }
          if (!scratch.has_value()) {
            scratch.emplace();
            scratch->stamp = stamp;
          }
          NUMADIR_RETURN_IF_ERROR(
              prepare_upsert(core, *scratch, change.check_schema, item.uuid, copy, own));
          prepared = &own;
        }
        NUMADIR_RETURN_IF_ERROR(upsert(core, txn, state, item, *prepared, stamp, changes));
        continue;
      }
      const std::string uuid = schema::ascii_lowered(item.uuid);
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
      adder.forget_parent();
      NUMADIR_RETURN_IF_ERROR(remove_entry(core, txn, *id, stamp, change.cookie_csn, changes));
    }
    NUMADIR_RETURN_IF_ERROR(store_next_id(core, txn, adder.next_id()));
  }  // The adder's cursors are closed before the prune writes.
  if (change.prune.has_value()) {
    NUMADIR_RETURN_IF_ERROR(prune(core, txn, *change.prune, stamp, change.cookie_csn, changes));
  }
  if (change.cookie.has_value()) {
    NUMADIR_RETURN_IF_ERROR(
        db_put(txn, core.meta, replica_cookie_key(change.rid), *change.cookie, 0).status());
  }
  return Status();
}

namespace {

// Prepares the upserts of items[begin, end). Returns: the first refusal, with its item's index.
std::pair<Status, std::size_t> prepare_items(const DirectoryCore& core, const Stamp& stamp,
                                             bool check_schema, std::vector<ReplicaItem>& items,
                                             std::size_t begin, std::size_t end) {
  // Packed items are unpacked here, into strings this thread reuses from one item to the next,
  // as the schema check reuses its storage.
  schema::Entry unpacked;
  PrepareScratch scratch{stamp, {}, {}, {}};
  for (std::size_t i = begin; i < end; ++i) {
    ReplicaItem& item = items[i];
    if (item.kind != ReplicaItem::Kind::kUpsert) {
      continue;
    }
    schema::Entry* entry = &item.entry;
    if (!item.packed.empty()) {
      unpacked.dn.assign(item.entry.dn);
      unpack_replica_attributes(item.packed, unpacked.attributes);
      entry = &unpacked;
    }
    ReplicaItem::Prepared& prepared = item.prepared.emplace();
    if (Status status = prepare_upsert(core, scratch, check_schema, item.uuid, *entry, prepared);
        !status.ok()) {
      item.prepared.reset();
      return {status, i};
    }
    // The writer needs the DN only: the values go now, on this thread, not on the writer's.
    std::string().swap(item.packed);
    std::vector<schema::EntryAttribute>().swap(item.entry.attributes);
  }
  return {Status(), end};
}

// Batches of at least this many items are prepared in two halves, one on a helper thread.
constexpr std::size_t kSplitItems = 64;

}  // namespace

Status run_prepare_replica(const DirectoryCore& core, ReplicaChange& change) {
  const Stamp stamp = make_stamp(core, UpdateContext{});
  std::vector<ReplicaItem>& items = change.items;
  const bool check = change.check_schema;
  if (items.size() < kSplitItems) {
    return prepare_items(core, stamp, check, items, 0, items.size()).first;
  }
  const std::size_t half = items.size() / 2;
  auto second = std::async(std::launch::async, [&] {
    return prepare_items(core, stamp, check, items, half, items.size());
  });
  std::pair<Status, std::size_t> first = prepare_items(core, stamp, check, items, 0, half);
  std::pair<Status, std::size_t> rest = second.get();
  // The first refusal in item order, as one thread preparing them in order would report.
  return !first.first.ok() ? first.first : rest.first;
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
