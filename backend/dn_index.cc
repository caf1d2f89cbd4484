// backend/dn_index.cc: dn keys, dn2id and children.
#include "backend/dn_index.h"

#include <vector>

namespace numadir::backend {
namespace {

char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// Dn's default value rule: spaces trimmed and collapsed, ASCII case folded.
std::string default_fold(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  bool pending_space = false;
  for (const char c : value) {
    if (c == ' ') {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) {
      out.push_back(' ');
      pending_space = false;
    }
    out.push_back(ascii_lower(c));
  }
  return out;
}

}  // namespace

std::string SchemaDnNormalizer::normalize_type(std::string_view type) const {
  const schema::AttributeType* attribute = schema_.attribute_type(type);
  if (attribute == nullptr) {
    return DnValueNormalizer::normalize_type(type);
  }
  std::string out(attribute->primary_name());
  for (char& c : out) {
    c = ascii_lower(c);
  }
  return out;
}

std::string SchemaDnNormalizer::normalize(std::string_view type, std::string_view value) const {
  const schema::AttributeType* attribute = schema_.attribute_type(type);
  if (attribute != nullptr && attribute->equality != nullptr) {
    std::string out;
    if (attribute->equality->normalize(value, out)) {
      return out;
    }
  }
  return default_fold(value);
}

std::string dn_key_from_normalized(std::string_view ndn) {
  // Split at unescaped ','; '\' escapes one character or starts a two-digit hex escape, and
  // neither a hex digit nor an escaped character is an unescaped ','.
  std::vector<std::size_t> starts;
  starts.push_back(0);
  for (std::size_t i = 0; i < ndn.size(); ++i) {
    if (ndn[i] == '\\') {
      ++i;
    } else if (ndn[i] == ',') {
      starts.push_back(i + 1);
    }
  }
  std::string key;
  key.reserve(ndn.size());
  for (std::size_t n = starts.size(); n-- > 0;) {
    const std::size_t begin = starts[n];
    const std::size_t end = n + 1 < starts.size() ? starts[n + 1] - 1 : ndn.size();
    if (n + 1 < starts.size()) {
      key.push_back(kDnKeySeparator);
    }
    key.append(ndn.substr(begin, end - begin));
  }
  return key;
}

std::string dn_key(const schema::Dn& dn, const schema::DnValueNormalizer& normalizer) {
  if (dn.is_root()) {
    return std::string();
  }
  return dn_key_from_normalized(dn.normalized(&normalizer));
}

Result<std::string> dn_key_of(std::string_view dn, const schema::DnValueNormalizer& normalizer) {
  Result<schema::Dn> parsed = schema::Dn::parse(dn);
  if (!parsed.ok()) {
    return Status(StatusCode::kInvalidDnSyntax, parsed.status().message());
  }
  return dn_key(*parsed, normalizer);
}

Result<EntryId> DnIndex::find(MDB_txn* txn, std::string_view key) const {
  if (key.size() > max_key_bytes_ || key.empty()) {
    return EntryId{0};  // Never stored (and LMDB would refuse the lookup).
  }
  std::string_view value;
  Result<bool> found = db_get(txn, dn2id_, key, &value);
  if (!found.ok()) {
    return found.status();
  }
  return *found ? load_id(value) : EntryId{0};
}

Result<std::string_view> DnIndex::longest_existing(MDB_txn* txn, std::string_view key,
                                                   EntryId* id) const {
  *id = 0;
  while (!key.empty()) {
    Result<EntryId> found = find(txn, key);
    if (!found.ok()) {
      return found.status();
    }
    if (*found != 0) {
      *id = *found;
      return key;
    }
    key = parent_key(key);
  }
  return std::string_view();
}

Status DnIndex::put_key(MDB_txn* txn, std::string_view key, EntryId id) const {
  if (key.size() > max_key_bytes_) {
    return Status(StatusCode::kUnwillingToPerform,
                  "DN too long: its normalized form has " + std::to_string(key.size()) +
                      " bytes, the limit is " + std::to_string(max_key_bytes_));
  }
  Result<bool> put = db_put(txn, dn2id_, key, id_bytes(id), MDB_NOOVERWRITE);
  if (!put.ok()) {
    return put.status();
  }
  if (!*put) {
    return Status(StatusCode::kEntryAlreadyExists, "entry already exists");
  }
  return Status();
}

Status DnIndex::remove_key(MDB_txn* txn, std::string_view key) const {
  Result<bool> removed = db_del(txn, dn2id_, key, nullptr);
  if (!removed.ok()) {
    return removed.status();
  }
  if (!*removed) {
    return internal_error("dn2id: key to remove is missing");
  }
  return Status();
}

Status DnIndex::add(MDB_txn* txn, std::string_view key, EntryId id, EntryId parent_id) const {
  NUMADIR_RETURN_IF_ERROR(put_key(txn, key, id));
  Result<bool> put = db_put(txn, children_, id_bytes(parent_id), id_bytes(id), MDB_NODUPDATA);
  if (!put.ok()) {
    return put.status();
  }
  if (!*put) {
    return internal_error("children: id already listed under its parent");
  }
  return Status();
}

Status DnIndex::remove(MDB_txn* txn, std::string_view key, EntryId id, EntryId parent_id) const {
  NUMADIR_RETURN_IF_ERROR(remove_key(txn, key));
  const std::string_view child = id_bytes(id);
  Result<bool> removed = db_del(txn, children_, id_bytes(parent_id), &child);
  if (!removed.ok()) {
    return removed.status();
  }
  if (!*removed) {
    return internal_error("children: id missing under its parent");
  }
  return Status();
}

Status DnIndex::move_child(MDB_txn* txn, EntryId id, EntryId old_parent, EntryId new_parent) const {
  if (old_parent == new_parent) {
    return Status();
  }
  const std::string_view child = id_bytes(id);
  Result<bool> removed = db_del(txn, children_, id_bytes(old_parent), &child);
  if (!removed.ok()) {
    return removed.status();
  }
  if (!*removed) {
    return internal_error("children: id missing under its old parent");
  }
  Result<bool> put = db_put(txn, children_, id_bytes(new_parent), child, MDB_NODUPDATA);
  if (!put.ok()) {
    return put.status();
  }
  if (!*put) {
    return internal_error("children: id already under its new parent");
  }
  return Status();
}

Result<std::uint64_t> DnIndex::child_count(Cursor& cursor, EntryId id) const {
  std::string_view key = id_bytes(id);
  Result<bool> found = cursor.get(MDB_SET, &key, nullptr);
  if (!found.ok()) {
    return found.status();
  }
  if (!*found) {
    return std::uint64_t{0};
  }
  return cursor.count();
}

SubtreeScan::SubtreeScan(Cursor& cursor, std::string_view base_key, bool include_base)
    : cursor_(cursor), base_(base_key), include_base_(include_base) {}

Result<bool> SubtreeScan::next(std::string_view* key, EntryId* id) {
  std::string_view value;
  Result<bool> found = false;
  if (!started_) {
    started_ = true;
    *key = base_;
    found = cursor_.get(MDB_SET_RANGE, key, &value);
  } else {
    found = cursor_.get(MDB_NEXT, key, &value);
  }
  while (found.ok() && *found) {
    if (*key == base_) {
      if (include_base_) {
        *id = load_id(value);
        return true;
      }
      found = cursor_.get(MDB_NEXT, key, &value);
      continue;
    }
    if (!key_is_below(*key, base_)) {
      return false;
    }
    *id = load_id(value);
    return true;
  }
  return found;
}

Result<bool> ChildScan::next(EntryId* id) {
  std::string_view key = id_bytes(parent_);
  std::string_view value;
  Result<bool> found =
      started_ ? cursor_.get(MDB_NEXT_DUP, &key, &value) : cursor_.get(MDB_SET_KEY, &key, &value);
  started_ = true;
  if (!found.ok() || !*found) {
    return found;
  }
  *id = load_id(value);
  return true;
}

}  // namespace numadir::backend
