// backend/update.cc: add and remove (inside the writer's transaction), and the helpers every
// update shares.
#include <algorithm>
#include <chrono>
#include <cstring>

#include "backend/detail/change_state.h"
#include "backend/detail/directory_core.h"
#include "backend/detail/update_util.h"

namespace numadir::backend::detail {

Stamp make_stamp(const DirectoryCore& core, const UpdateContext& context) {
  const auto now = context.now.value_or(std::chrono::system_clock::now());
  return Stamp{context.actor_dn, generalized_time(now), next_csn(now, core.options.server_id)};
}

Result<EntryId> load_next_id(const DirectoryCore& core, MDB_txn* txn) {
  std::string_view value;
  Result<bool> found = db_get(txn, core.meta, kMetaNextId, &value);
  if (!found.ok()) {
    return found.status();
  }
  const EntryId id = *found ? load_id(value) : 0;
  if (id == 0) {
    return Status(StatusCode::kStorage, "meta: next_id missing or corrupt");
  }
  return id;
}

Status store_next_id(const DirectoryCore& core, MDB_txn* txn, EntryId next_id) {
  return db_put(txn, core.meta, kMetaNextId, id_bytes(next_id), 0).status();
}

Status canonicalize_attributes(const AttributeCatalog& catalog,
                               std::span<const schema::EntryAttribute> in,
                               std::vector<schema::EntryAttribute>* out) {
  out->clear();
  out->reserve(in.size());
  for (const schema::EntryAttribute& attribute : in) {
    Result<std::string> description = catalog.canonical_description(attribute.description);
    if (!description.ok()) {
      return description.status();
    }
    for (const schema::EntryAttribute& seen : *out) {
      if (seen.description == *description) {
        return Status(StatusCode::kAttributeOrValueExists,
                      "attribute '" + attribute.description + "' provided more than once");
      }
    }
    out->push_back(schema::EntryAttribute{std::move(*description), attribute.values});
  }
  return Status();
}

Status check_user_modifiable(const AttributeCatalog& catalog, std::string_view description) {
  const AttributeInfo* info = catalog.resolve(description_type(description));
  if (info != nullptr && info->type->no_user_modification) {
    return Status(StatusCode::kConstraintViolation,
                  std::string(description_type(description)) + ": no user modification allowed");
  }
  return Status();
}

Status check_entry_schema(const DirectoryCore& core, const schema::Entry& entry,
                          const schema::ObjectClass** structural) {
  return core.schema.check_entry(entry, structural);
}

Status put_entry(const DirectoryCore& core, MDB_txn* txn, EntryId id, const EntryHeader& header,
                 std::span<const schema::EntryAttribute> attributes, unsigned flags,
                 std::string& scratch) {
  encode_entry(header, attributes, scratch);
  Result<bool> put = db_put(txn, core.id2entry, id_bytes(id), scratch, flags);
  if (!put.ok()) {
    return put.status();
  }
  if (!*put) {
    return internal_error("id2entry: id " + std::to_string(id) + " already used");
  }
  return Status();
}

Status add_in_txn(DirectoryCore& core, MDB_txn* txn, const schema::Entry& entry, const Stamp& stamp,
                  const AddOptions& options, AddScratch& scratch, UuidGenerator& uuids,
                  EntryId* next_id) {
  Result<schema::Dn> dn = schema::Dn::parse(entry.dn);
  if (!dn.ok()) {
    return Status(StatusCode::kInvalidDnSyntax, dn.status().message());
  }
  const std::string key = dn_key(*dn, core.normalizer);
  if (!key_in_subtree(key, core.suffix_key)) {
    return Status(StatusCode::kNoSuchObject, "");
  }
  schema::Entry canonical;
  canonical.dn = entry.dn;
  NUMADIR_RETURN_IF_ERROR(
      canonicalize_attributes(core.catalog, entry.attributes, &canonical.attributes));
  if (!options.import) {
    for (const schema::EntryAttribute& attribute : canonical.attributes) {
      const bool internal =
          std::any_of(options.internal_attributes.begin(), options.internal_attributes.end(),
                      [&](const std::string& name) {
                        Result<std::string> description = core.catalog.canonical_description(name);
                        return description.ok() && *description == attribute.description;
                      });
      if (!internal) {
        NUMADIR_RETURN_IF_ERROR(check_user_modifiable(core.catalog, attribute.description));
      }
    }
  }
  const schema::ObjectClass* structural = nullptr;
  NUMADIR_RETURN_IF_ERROR(check_entry_schema(core, canonical, &structural));

  Result<EntryId> existing = core.dns.find(txn, key);
  if (!existing.ok()) {
    return existing.status();
  }
  if (*existing != 0) {
    return Status(StatusCode::kEntryAlreadyExists, "entry already exists");
  }
  EntryId parent_id = 0;
  if (key != core.suffix_key) {
    Result<EntryId> parent = core.dns.find(txn, parent_key(key));
    if (!parent.ok()) {
      return parent.status();
    }
    if (*parent == 0) {
      Result<std::string> matched = matched_dn(core, txn, key);
      if (!matched.ok()) {
        return matched.status();
      }
      return Status(StatusCode::kNoSuchObject, std::move(*matched));
    }
    parent_id = *parent;
  }
  stamp_new_entry(core.op_types, stamp,
                  structural != nullptr ? structural->primary_name() : std::string_view(),
                  options.import, uuids, canonical.attributes);

  scratch.entry_uuid.assign(entry_uuid_of(core, canonical.attributes));
  const EntryId id = (*next_id)++;
  const EntryHeader header{parent_id, entry.dn, key};
  NUMADIR_RETURN_IF_ERROR(put_entry(core, txn, id, header, canonical.attributes,
                                    options.append_id ? MDB_APPEND : MDB_NOOVERWRITE,
                                    scratch.encoded));
  NUMADIR_RETURN_IF_ERROR(core.dns.add(txn, key, id, parent_id));
  scratch.keys.clear();
  core.indexes.entry_keys(core.catalog, canonical.attributes, &scratch.keys);
  return core.indexes.apply(txn, id, scratch.none, scratch.keys, options.append_id);
}

Status apply_add(DirectoryCore& core, MDB_txn* txn, const schema::Entry& entry,
                 std::span<const std::string> internal_attributes, const Stamp& stamp,
                 UuidGenerator& uuids, ChangeRecord* change) {
  Result<EntryId> next_id = load_next_id(core, txn);
  if (!next_id.ok()) {
    return next_id.status();
  }
  EntryId next = *next_id;
  AddScratch scratch;
  AddOptions options;
  options.internal_attributes = internal_attributes;
  NUMADIR_RETURN_IF_ERROR(add_in_txn(core, txn, entry, stamp, options, scratch, uuids, &next));
  NUMADIR_RETURN_IF_ERROR(store_next_id(core, txn, next));
  change->kind = ChangeKind::kAdd;
  change->entry_id = next - 1;  // add_in_txn took the id it was given and moved past it.
  change->dn = entry.dn;
  change->csn = stamp.csn;
  change->entry_uuid = std::move(scratch.entry_uuid);
  return Status();
}

Result<EntryId> find_entry(const DirectoryCore& core, MDB_txn* txn, std::string_view key,
                           EntryView* view) {
  Result<EntryId> id = core.dns.find(txn, key);
  if (!id.ok()) {
    return id.status();
  }
  if (*id == 0) {
    Result<std::string> matched = matched_dn(core, txn, key);
    if (!matched.ok()) {
      return matched.status();
    }
    return Status(StatusCode::kNoSuchObject, std::move(*matched));
  }
  Result<bool> found = read_entry(core, txn, *id, view);
  if (!found.ok()) {
    return found.status();
  }
  if (!*found) {
    return Status(StatusCode::kStorage,
                  "dn2id names id " + std::to_string(*id) + " but id2entry has no such entry");
  }
  return *id;
}

Result<bool> has_children(const DirectoryCore& core, MDB_txn* txn, EntryId id) {
  return db_get(txn, core.dns.children(), id_bytes(id), nullptr);
}

Status apply_remove(DirectoryCore& core, MDB_txn* txn, std::string_view dn, const Stamp& stamp,
                    ChangeRecord* change) {
  Result<std::string> key = dn_key_of(dn, core.normalizer);
  if (!key.ok()) {
    return key.status();
  }
  EntryView view;
  Result<EntryId> id = find_entry(core, txn, *key, &view);
  if (!id.ok()) {
    return id.status();
  }
  Result<bool> children = has_children(core, txn, *id);
  if (!children.ok()) {
    return children.status();
  }
  if (*children) {
    return Status(StatusCode::kNotAllowedOnNonLeaf, "subordinate objects must be deleted first");
  }
  // Everything needed from the view is copied before the first write invalidates it.
  const EntryId parent_id = view.parent_id();
  change->kind = ChangeKind::kDelete;
  change->entry_id = *id;
  change->dn.assign(view.dn());
  change->csn = stamp.csn;
  Result<std::string_view> uuid = stored_entry_uuid(core, view);
  if (!uuid.ok()) {
    return uuid.status();
  }
  change->entry_uuid.assign(*uuid);
  IndexKeys keys;
  NUMADIR_RETURN_IF_ERROR(core.indexes.entry_keys(core.catalog, view, &keys));
  NUMADIR_RETURN_IF_ERROR(core.indexes.apply(txn, *id, keys, IndexKeys()));
  NUMADIR_RETURN_IF_ERROR(core.dns.remove(txn, *key, *id, parent_id));
  return db_del(txn, core.id2entry, id_bytes(*id), nullptr).status();
}

}  // namespace numadir::backend::detail
