// backend/attribute_index.cc: index keys, maintenance and candidate reads.
#include "backend/attribute_index.h"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "backend/directory_options.h"
#include "schema/ascii.h"

namespace numadir::backend {
namespace {

std::uint64_t fnv1a64(std::string_view bytes) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (const char c : bytes) {
    hash ^= static_cast<std::uint8_t>(c);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

void sort_unique(IdList* ids) {
  std::sort(ids->begin(), ids->end());
  ids->erase(std::unique(ids->begin(), ids->end()), ids->end());
}

// Appends every duplicate of the cursor's current key; `first` is the value the positioning
// call returned. A key with a single value has no duplicate page (LMDB keeps it inline and
// MDB_GET_MULTIPLE then returns nothing), so that one is taken from `first`.
Status append_duplicates(Cursor& cursor, std::string_view first, IdList* out) {
  std::string_view key;
  std::string_view page;
  Result<bool> got = cursor.get(MDB_GET_MULTIPLE, &key, &page);
  if (got.ok() && *got && page.empty()) {
    out->push_back(load_id(first));
    return Status();
  }
  while (got.ok() && *got) {
    const std::size_t n = page.size() / sizeof(EntryId);
    if (n == 0) {
      break;
    }
    const std::size_t old = out->size();
    out->resize(old + n);
    std::memcpy(out->data() + old, page.data(), n * sizeof(EntryId));
    page = std::string_view();
    got = cursor.get(MDB_NEXT_MULTIPLE, &key, &page);
  }
  return got.status();
}

}  // namespace

std::string_view index_kind_name(IndexKind kind) {
  switch (kind) {
    case IndexKind::kEquality:
      return "eq";
    case IndexKind::kPresence:
      return "pres";
    case IndexKind::kSubstrings:
      return "sub";
    case IndexKind::kOrdering:
      return "ord";
  }
  return "?";
}

Result<IndexSet> IndexSet::configure(const AttributeCatalog& catalog,
                                     std::span<const IndexSpec> specs) {
  IndexSet set;
  for (const IndexSpec& spec : specs) {
    const AttributeInfo* info = catalog.resolve(spec.attribute);
    if (info == nullptr) {
      return invalid_argument("index on " + spec.attribute + ": attribute type unknown");
    }
    const std::pair<bool, IndexKind> kinds[] = {{spec.equality, IndexKind::kEquality},
                                                {spec.presence, IndexKind::kPresence},
                                                {spec.substrings, IndexKind::kSubstrings},
                                                {spec.ordering, IndexKind::kOrdering}};
    for (const auto& [wanted, kind] : kinds) {
      if (!wanted) {
        continue;
      }
      const schema::MatchingRule* rule = nullptr;
      switch (kind) {
        case IndexKind::kEquality:
          rule = info->type->equality;
          break;
        case IndexKind::kSubstrings:
          rule = info->type->substrings;
          break;
        case IndexKind::kOrdering:
          rule = info->type->ordering;
          break;
        case IndexKind::kPresence:
          break;
      }
      if (kind != IndexKind::kPresence && rule == nullptr) {
        return invalid_argument("index on " + spec.attribute + ": " +
                                std::string(index_kind_name(kind)) +
                                " needs a matching rule the attribute type does not have");
      }
      std::string db_name = "ix." + schema::ascii_lowered(info->name) + '.';
      db_name += index_kind_name(kind);
      const bool duplicate = std::any_of(set.indexes_.begin(), set.indexes_.end(),
                                         [&](const Index& i) { return i.db_name == db_name; });
      if (duplicate) {
        continue;
      }
      Index& index = set.indexes_.emplace_back();
      index.attribute = info;
      index.kind = kind;
      index.rule = rule;
      index.db_name = std::move(db_name);
    }
  }
  set.ready_since_ = std::make_unique<std::atomic<std::uint64_t>[]>(set.indexes_.size());
  for (std::uint32_t slot = 0; slot < set.indexes_.size(); ++slot) {
    set.ready_since_[slot].store(kNever, std::memory_order_relaxed);
    for (std::string_view name : set.indexes_[slot].attribute->subtype_names) {
      set.covering_[name].push_back(slot);
    }
  }
  return set;
}

int IndexSet::find_usable(const AttributeInfo& type, IndexKind kind,
                          const schema::MatchingRule* rule, std::uint64_t txn_id) const {
  for (std::uint32_t slot = 0; slot < indexes_.size(); ++slot) {
    const Index& index = indexes_[slot];
    if (index.kind == kind && index.rule == rule && ready_in(slot, txn_id) &&
        type.type->is_subtype_of(*index.attribute->type)) {
      return static_cast<int>(slot);
    }
  }
  return -1;
}

std::span<const std::uint32_t> IndexSet::covering(std::string_view type) const {
  auto it = covering_.find(type);
  if (it == covering_.end()) {
    return {};
  }
  return it->second;
}

std::string index_key(IndexKind kind, std::string_view normalized) {
  if (normalized.size() <= kMaxIndexKeyBytes) {
    return std::string(normalized);
  }
  if (kind == IndexKind::kOrdering) {
    return std::string(normalized.substr(0, kMaxIndexKeyBytes));
  }
  const std::uint64_t hash = fnv1a64(normalized);
  std::string key(normalized.substr(0, kMaxIndexKeyBytes - sizeof hash));
  key.append(reinterpret_cast<const char*>(&hash), sizeof hash);
  return key;
}

void substring_keys(std::string_view v, std::vector<std::string>* out) {
  const std::size_t n = std::min(v.size(), kSubstringGram);
  out->push_back(kSubInitial + std::string(v.substr(0, n)));
  out->push_back(kSubFinal + std::string(v.substr(v.size() - n)));
  for (std::size_t i = 0; i + kSubstringGram <= v.size(); ++i) {
    out->push_back(kSubAny + std::string(v.substr(i, kSubstringGram)));
  }
}

void IndexSet::value_keys(const AttributeCatalog& catalog, std::uint32_t slot,
                          std::string_view value, std::string& scratch, IndexKeys* out) const {
  const Index& index = indexes_[slot];
  if (index.kind == IndexKind::kPresence) {
    out->emplace_back(slot, std::string(kPresenceKey));
    return;
  }
  if (!catalog.normalize(*index.rule, value, scratch)) {
    return;
  }
  if (index.kind != IndexKind::kSubstrings) {
    out->emplace_back(slot, index_key(index.kind, scratch));
    return;
  }
  const std::size_t n = std::min(scratch.size(), kSubstringGram);
  std::string_view v = scratch;
  out->emplace_back(slot, kSubInitial + std::string(v.substr(0, n)));
  out->emplace_back(slot, kSubFinal + std::string(v.substr(v.size() - n)));
  for (std::size_t i = 0; i + kSubstringGram <= v.size(); ++i) {
    out->emplace_back(slot, kSubAny + std::string(v.substr(i, kSubstringGram)));
  }
}

void IndexSet::entry_keys(const AttributeCatalog& catalog,
                          std::span<const schema::EntryAttribute> attributes,
                          IndexKeys* out) const {
  std::string scratch;
  for (const schema::EntryAttribute& attribute : attributes) {
    for (const std::uint32_t slot : covering(description_type(attribute.description))) {
      for (const std::string& value : attribute.values) {
        value_keys(catalog, slot, value, scratch, out);
        if (indexes_[slot].kind == IndexKind::kPresence) {
          break;
        }
      }
    }
  }
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
}

Status IndexSet::entry_keys(const AttributeCatalog& catalog, const EntryView& view,
                            IndexKeys* out) const {
  std::string scratch;
  AttributeReader reader = view.attributes();
  AttributeView attribute;
  while (reader.next(&attribute)) {
    for (const std::uint32_t slot : covering(attribute.type)) {
      ValueReader values = attribute.values;
      std::string_view value;
      while (values.next(&value)) {
        value_keys(catalog, slot, value, scratch, out);
        if (indexes_[slot].kind == IndexKind::kPresence) {
          break;
        }
      }
      if (values.corrupt()) {
        return Status(StatusCode::kStorage, "corrupt entry: bad value");
      }
    }
  }
  if (reader.corrupt()) {
    return Status(StatusCode::kStorage, "corrupt entry: bad attribute");
  }
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
  return Status();
}

Status IndexSet::apply(MDB_txn* txn, EntryId id, const IndexKeys& before, const IndexKeys& after,
                       bool append_ids) const {
  const unsigned put_flags = append_ids ? MDB_APPENDDUP : MDB_NODUPDATA;
  const std::string_view id_value = id_bytes(id);
  auto b = before.begin();
  auto a = after.begin();
  while (b != before.end() || a != after.end()) {
    if (a == after.end() || (b != before.end() && *b < *a)) {
      Result<bool> removed = db_del(txn, indexes_[b->first].dbi, b->second, &id_value);
      if (!removed.ok()) {
        return removed.status();
      }
      if (!*removed && built(b->first)) {
        return internal_error(indexes_[b->first].db_name + ": key/id pair to remove is missing");
      }
      ++b;
    } else if (b == before.end() || *a < *b) {
      Result<bool> put = db_put(txn, indexes_[a->first].dbi, a->second, id_value, put_flags);
      if (!put.ok()) {
        return put.status();
      }
      if (!*put && built(a->first)) {
        return internal_error(indexes_[a->first].db_name + ": key/id pair already present");
      }
      ++a;
    } else {
      ++a;
      ++b;
    }
  }
  return Status();
}

Status ids_for_key(Cursor& cursor, std::string_view key, IdList* out) {
  const bool was_empty = out->empty();
  std::string_view found_key = key;
  std::string_view value;
  Result<bool> found = cursor.get(MDB_SET_KEY, &found_key, &value);
  if (!found.ok()) {
    return found.status();
  }
  if (!*found) {
    return Status();
  }
  NUMADIR_RETURN_IF_ERROR(append_duplicates(cursor, value, out));
  if (!was_empty) {
    sort_unique(out);
  }
  return Status();
}

Status ids_for_prefix(Cursor& cursor, std::string_view prefix, IdList* out) {
  std::string_view key = prefix;
  std::string_view value;
  Result<bool> found = cursor.get(MDB_SET_RANGE, &key, &value);
  while (found.ok() && *found && key.starts_with(prefix)) {
    NUMADIR_RETURN_IF_ERROR(append_duplicates(cursor, value, out));
    found = cursor.get(MDB_NEXT_NODUP, &key, &value);
  }
  NUMADIR_RETURN_IF_ERROR(found.status());
  sort_unique(out);
  return Status();
}

Status ids_for_range(Cursor& cursor, const std::string* lower, const std::string* upper,
                     IdList* out) {
  std::string_view key;
  std::string_view value;
  Result<bool> found = false;
  if (lower != nullptr) {
    key = *lower;
    found = cursor.get(MDB_SET_RANGE, &key, &value);
  } else {
    found = cursor.get(MDB_FIRST, &key, &value);
  }
  while (found.ok() && *found) {
    if (upper != nullptr && key > std::string_view(*upper)) {
      break;
    }
    NUMADIR_RETURN_IF_ERROR(append_duplicates(cursor, value, out));
    found = cursor.get(MDB_NEXT_NODUP, &key, &value);
  }
  NUMADIR_RETURN_IF_ERROR(found.status());
  sort_unique(out);
  return Status();
}

void intersect_ids(IdList& a, const IdList& b) {
  auto out = a.begin();
  auto i = a.begin();
  auto j = b.begin();
  while (i != a.end() && j != b.end()) {
    if (*i < *j) {
      ++i;
    } else if (*j < *i) {
      ++j;
    } else {
      *out++ = *i++;
      ++j;
    }
  }
  a.erase(out, a.end());
}

void union_ids(IdList& a, const IdList& b) {
  IdList merged;
  merged.reserve(a.size() + b.size());
  std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(merged));
  a.swap(merged);
}

}  // namespace numadir::backend
