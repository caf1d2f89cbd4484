// backend/rename.cc: the modify DN operation (RFC 4511 §4.9), subtree moves included: every
// descendant gets its new dn2id key and stored DN in the same (the writer's) transaction.
#include <algorithm>
#include <utility>

#include "backend/detail/change_state.h"
#include "backend/detail/directory_core.h"
#include "backend/detail/update_util.h"

namespace numadir::backend::detail {
namespace {

using Attributes = std::vector<schema::EntryAttribute>;

Result<schema::Dn> parse_dn(std::string_view text, std::string_view what) {
  Result<schema::Dn> dn = schema::Dn::parse(text);
  if (!dn.ok()) {
    return Status(StatusCode::kInvalidDnSyntax, std::string(what) + ": " + dn.status().message());
  }
  return dn;
}

// Normalized value of an AVA under its type's equality rule (the bytes without one).
bool ava_normalized(const AttributeCatalog& catalog, const AttributeInfo& info,
                    std::string_view value, std::string& out) {
  if (info.type->equality == nullptr) {
    out.assign(value);
    return true;
  }
  return catalog.normalize(*info.type->equality, value, out);
}

int find_normalized(const AttributeCatalog& catalog, const AttributeInfo& info,
                    const std::vector<std::string>& values, std::string_view wanted) {
  std::string scratch;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (ava_normalized(catalog, info, values[i], scratch) && scratch == wanted) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

// Adds the new RDN's values and, with delete_old_rdn, removes the old RDN's values that the
// new RDN does not repeat.
Status apply_rdn_change(const DirectoryCore& core, const schema::Dn& old_dn,
                        const schema::Dn& new_rdn, bool delete_old_rdn, Attributes& attributes) {
  std::string wanted;
  auto find_attribute = [&](std::string_view name) {
    return std::find_if(attributes.begin(), attributes.end(),
                        [&](const schema::EntryAttribute& a) { return a.description == name; });
  };
  for (const schema::Ava& ava : new_rdn.rdn(0)) {
    const AttributeInfo* info = core.catalog.resolve(ava.type);
    if (info == nullptr) {
      return Status(StatusCode::kUndefinedAttributeType,
                    std::string(ava.type) + ": attribute type undefined");
    }
    NUMADIR_RETURN_IF_ERROR(check_user_modifiable(core.catalog, info->name));
    if (!ava_normalized(core.catalog, *info, ava.value, wanted)) {
      return Status(StatusCode::kInvalidAttributeSyntax,
                    std::string(ava.type) + ": value invalid per syntax");
    }
    auto attribute = find_attribute(info->name);
    if (attribute == attributes.end()) {
      attributes.push_back(schema::EntryAttribute{std::string(info->name), {}});
      attribute = attributes.end() - 1;
    }
    if (find_normalized(core.catalog, *info, attribute->values, wanted) < 0) {
      attribute->values.emplace_back(ava.value);
    }
  }
  if (!delete_old_rdn || old_dn.is_root()) {
    return Status();
  }
  std::string other;
  for (const schema::Ava& ava : old_dn.rdn(0)) {
    const AttributeInfo* info = core.catalog.resolve(ava.type);
    if (info == nullptr || !ava_normalized(core.catalog, *info, ava.value, wanted)) {
      continue;
    }
    const bool kept =
        std::any_of(new_rdn.rdn(0).begin(), new_rdn.rdn(0).end(), [&](const schema::Ava& new_ava) {
          return core.catalog.resolve(new_ava.type) == info &&
                 ava_normalized(core.catalog, *info, new_ava.value, other) && other == wanted;
        });
    if (kept) {
      continue;
    }
    auto attribute = find_attribute(info->name);
    if (attribute == attributes.end()) {
      continue;
    }
    const int found = find_normalized(core.catalog, *info, attribute->values, wanted);
    if (found >= 0) {
      attribute->values.erase(attribute->values.begin() + found);
    }
    if (attribute->values.empty()) {
      attributes.erase(attribute);
    }
  }
  return Status();
}

// Returns: `descendant` (a stored DN below `old_dn`) re-rooted under `new_dn`.
Result<std::string> moved_dn(std::string_view descendant, const schema::Dn& old_dn,
                             std::string_view new_dn) {
  Result<schema::Dn> dn = schema::Dn::parse(descendant);
  if (!dn.ok() || dn->rdn_count() <= old_dn.rdn_count()) {
    return internal_error("stored DN '" + std::string(descendant) +
                          "' is not below the moved entry");
  }
  std::string out;
  for (std::size_t i = 0; i < dn->rdn_count() - old_dn.rdn_count(); ++i) {
    out += dn->rdn_string(i);
    out += ',';
  }
  out += new_dn;
  return out;
}

}  // namespace

Status apply_rename(DirectoryCore& core, MDB_txn* t, std::string_view dn, std::string_view new_rdn,
                    bool delete_old_rdn, std::optional<std::string_view> new_superior,
                    const Stamp& stamp, ChangeRecord* change) {
  Result<schema::Dn> target = parse_dn(dn, "entry");
  NUMADIR_RETURN_IF_ERROR(target.status());
  Result<schema::Dn> rdn = parse_dn(new_rdn, "new RDN");
  NUMADIR_RETURN_IF_ERROR(rdn.status());
  if (rdn->rdn_count() != 1) {
    return Status(StatusCode::kInvalidDnSyntax, "new RDN: not a single RDN");
  }
  std::string superior_key;
  if (new_superior.has_value()) {
    Result<schema::Dn> superior = parse_dn(*new_superior, "new superior");
    NUMADIR_RETURN_IF_ERROR(superior.status());
    superior_key = dn_key(*superior, core.normalizer);
  }
  const std::string old_key = dn_key(*target, core.normalizer);

  EntryView view;
  Result<EntryId> id = find_entry(core, t, old_key, &view);
  NUMADIR_RETURN_IF_ERROR(id.status());
  if (old_key == core.suffix_key) {
    return Status(StatusCode::kUnwillingToPerform, "cannot rename the suffix entry");
  }
  schema::Entry entry;
  NUMADIR_RETURN_IF_ERROR(view.decode(&entry));
  const EntryId old_parent_id = view.parent_id();
  IndexKeys before;
  NUMADIR_RETURN_IF_ERROR(core.indexes.entry_keys(core.catalog, view, &before));

  EntryId new_parent_id = old_parent_id;
  std::string parent_key_text(parent_key(old_key));
  if (new_superior.has_value()) {
    if (!key_in_subtree(superior_key, core.suffix_key)) {
      return Status(StatusCode::kNoSuchObject, "");
    }
    Result<EntryId> superior_id = core.dns.find(t, superior_key);
    NUMADIR_RETURN_IF_ERROR(superior_id.status());
    if (*superior_id == 0) {
      Result<std::string> matched = matched_dn(core, t, superior_key);
      NUMADIR_RETURN_IF_ERROR(matched.status());
      return Status(StatusCode::kNoSuchObject, std::move(*matched));
    }
    if (key_in_subtree(superior_key, old_key)) {
      return Status(StatusCode::kUnwillingToPerform,
                    "new superior is the entry itself or one of its descendants");
    }
    new_parent_id = *superior_id;
    parent_key_text = superior_key;
  }
  EntryView parent_view;
  Result<bool> parent_found = read_entry(core, t, new_parent_id, &parent_view);
  NUMADIR_RETURN_IF_ERROR(parent_found.status());
  if (!*parent_found) {
    return internal_error("parent id " + std::to_string(new_parent_id) + " missing");
  }
  const std::string new_dn = rdn->rdn_string(0) + "," + std::string(parent_view.dn());
  const std::string new_key = parent_key_text + kDnKeySeparator + dn_key(*rdn, core.normalizer);
  if (new_key != old_key) {
    Result<EntryId> taken = core.dns.find(t, new_key);
    NUMADIR_RETURN_IF_ERROR(taken.status());
    if (*taken != 0) {
      return Status(StatusCode::kEntryAlreadyExists, "entry already exists");
    }
  }

  Result<schema::Dn> old_dn = schema::Dn::parse(entry.dn);
  if (!old_dn.ok()) {
    return internal_error("stored DN '" + entry.dn + "' does not parse");
  }
  const schema::ObjectClass* old_structural = core.schema.structural_class(entry);
  NUMADIR_RETURN_IF_ERROR(apply_rdn_change(core, *old_dn, *rdn, delete_old_rdn, entry.attributes));
  const std::string old_dn_text = std::exchange(entry.dn, new_dn);
  const schema::ObjectClass* structural = nullptr;
  NUMADIR_RETURN_IF_ERROR(check_entry_schema(core, entry, &structural));
  if (structural != old_structural && old_structural != nullptr) {
    return Status(StatusCode::kObjectClassModsProhibited,
                  "structural object class modification not allowed");
  }
  stamp_modified_entry(core.op_types, stamp, entry.attributes);
  IndexKeys after;
  core.indexes.entry_keys(core.catalog, entry.attributes, &after);
  NUMADIR_RETURN_IF_ERROR(core.indexes.apply(t, *id, before, after));

  // Descendants: collected first (the cursor must be gone before writes and commit).
  std::vector<std::pair<std::string, EntryId>> descendants;
  if (new_key != old_key || new_dn != old_dn_text) {
    Result<Cursor> cursor = Cursor::open(t, core.dns.dn2id());
    NUMADIR_RETURN_IF_ERROR(cursor.status());
    SubtreeScan scan(*cursor, old_key, false);
    std::string_view key;
    EntryId child = 0;
    Result<bool> more = scan.next(&key, &child);
    while (more.ok() && *more) {
      descendants.emplace_back(std::string(key), child);
      more = scan.next(&key, &child);
    }
    NUMADIR_RETURN_IF_ERROR(more.status());
  }
  std::string encoded;
  for (const auto& [key, child] : descendants) {
    EntryView child_view;
    Result<bool> found = read_entry(core, t, child, &child_view);
    NUMADIR_RETURN_IF_ERROR(found.status());
    if (!*found) {
      return internal_error("dn2id names missing id " + std::to_string(child));
    }
    Result<std::string> child_dn = moved_dn(child_view.dn(), *old_dn, new_dn);
    NUMADIR_RETURN_IF_ERROR(child_dn.status());
    const std::string child_key = new_key + key.substr(old_key.size());
    reencode_entry(child_view, EntryHeader{child_view.parent_id(), *child_dn, child_key}, encoded);
    NUMADIR_RETURN_IF_ERROR(db_put(t, core.id2entry, id_bytes(child), encoded, 0).status());
  }
  if (new_key != old_key) {
    NUMADIR_RETURN_IF_ERROR(core.dns.remove_key(t, old_key));
    for (const auto& [key, child] : descendants) {
      NUMADIR_RETURN_IF_ERROR(core.dns.remove_key(t, key));
    }
    NUMADIR_RETURN_IF_ERROR(core.dns.put_key(t, new_key, *id));
    for (const auto& [key, child] : descendants) {
      NUMADIR_RETURN_IF_ERROR(core.dns.put_key(t, new_key + key.substr(old_key.size()), child));
    }
  }
  NUMADIR_RETURN_IF_ERROR(core.dns.move_child(t, *id, old_parent_id, new_parent_id));
  const EntryHeader header{new_parent_id, entry.dn, new_key};
  NUMADIR_RETURN_IF_ERROR(put_entry(core, t, *id, header, entry.attributes, 0, encoded));
  change->kind = ChangeKind::kRename;
  change->entry_id = *id;
  change->dn = old_dn_text;
  change->new_dn = std::move(entry.dn);
  change->csn = stamp.csn;
  change->entry_uuid.assign(entry_uuid_of(core, entry.attributes));
  return Status();
}

}  // namespace numadir::backend::detail
