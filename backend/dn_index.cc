// backend/dn_index.cc: dn keys, dn2id and children.
#include "backend/dn_index.h"

#include <vector>

#include "schema/ascii.h"

namespace numadir::backend {

namespace {

// Appends the dn key of normalized DN `ndn` to `key`.
void append_key_from_normalized(std::string_view ndn, std::string& key) {
  // Split at unescaped ','; '\' escapes one character or starts a two-digit hex escape, and
  // neither a hex digit nor an escaped character is an unescaped ','. RDN starts go to a small
  // array first: real DNs stay far below its size, so the common case allocates nothing.
  constexpr std::size_t kInline = 32;
  std::size_t inline_starts[kInline];
  std::vector<std::size_t> more;  // Used only past kInline RDNs.
  std::size_t count = 0;
  const auto push = [&](std::size_t start) {
    if (count < kInline) {
      inline_starts[count] = start;
    } else {
      if (more.empty()) {
        more.assign(inline_starts, inline_starts + kInline);
      }
      more.push_back(start);
    }
    ++count;
  };
  push(0);
  for (std::size_t i = 0; i < ndn.size(); ++i) {
    if (ndn[i] == '\\') {
      ++i;
    } else if (ndn[i] == ',') {
      push(i + 1);
    }
  }
  const std::size_t* starts = count <= kInline ? inline_starts : more.data();
  key.reserve(key.size() + ndn.size());
  for (std::size_t n = count; n-- > 0;) {
    const std::size_t begin = starts[n];
    const std::size_t end = n + 1 < count ? starts[n + 1] - 1 : ndn.size();
    if (n + 1 < count) {
      key.push_back(kDnKeySeparator);
    }
    key.append(ndn.substr(begin, end - begin));
  }
}

}  // namespace

std::string dn_key_from_normalized(std::string_view ndn) {
  std::string key;
  append_key_from_normalized(ndn, key);
  return key;
}

void dn_key_from_normalized_into(std::string_view ndn, std::string& key) {
  key.clear();
  append_key_from_normalized(ndn, key);
}

void normalized_dn_from_key(std::string_view key, std::string& out) {
  out.clear();
  out.reserve(key.size());
  std::size_t end = key.size();
  while (end > 0) {
    const std::size_t cut = key.rfind(kDnKeySeparator, end - 1);
    const std::size_t start = cut == std::string_view::npos ? 0 : cut + 1;
    if (!out.empty()) {
      out += ',';
    }
    out.append(key.substr(start, end - start));
    end = cut == std::string_view::npos ? 0 : cut;
  }
}

std::string dn_key(const schema::Dn& dn, const schema::DnValueNormalizer& normalizer) {
  if (dn.is_root()) {
    return std::string();
  }
  return dn_key_from_normalized(dn.normalized(&normalizer));
}

Result<std::string> dn_key_of(std::string_view dn, const schema::DnValueNormalizer& normalizer) {
  std::string key;
  DnKeyScratch scratch;
  NUMADIR_RETURN_IF_ERROR(dn_key_into(dn, normalizer, key, scratch));
  return key;
}

Status dn_key_into(std::string_view dn, const schema::DnValueNormalizer& normalizer,
                   std::string& key, DnKeyScratch& scratch) {
  // The parsed DN and its normalized string are only steps to the key.
  key.clear();
  if (Status status = schema::Dn::parse_into(dn, scratch.parsed); !status.ok()) {
    return Status(StatusCode::kInvalidDnSyntax, status.message());
  }
  if (scratch.parsed.is_root()) {
    return Status();
  }
  scratch.ndn.clear();
  scratch.parsed.append_normalized(scratch.ndn, &normalizer);
  append_key_from_normalized(scratch.ndn, key);
  return Status();
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

SubtreeScan::SubtreeScan(Cursor& cursor, std::string_view base_key, bool include_base,
                         std::string_view start_key)
    : cursor_(cursor), base_(base_key), include_base_(include_base), start_(start_key) {}

Result<bool> SubtreeScan::next(std::string_view* key, EntryId* id) {
  std::string_view value;
  Result<bool> found = false;
  if (!started_) {
    started_ = true;
    *key = start_.empty() ? std::string_view(base_) : std::string_view(start_);
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
  Result<bool> found = false;
  if (started_) {
    found = cursor_.get(MDB_NEXT_DUP, &key, &value);
  } else if (start_ != 0) {
    value = id_bytes(start_);
    found = cursor_.get(MDB_GET_BOTH_RANGE, &key, &value);
  } else {
    found = cursor_.get(MDB_SET_KEY, &key, &value);
  }
  started_ = true;
  if (!found.ok() || !*found) {
    return found;
  }
  *id = load_id(value);
  return true;
}

}  // namespace numadir::backend
