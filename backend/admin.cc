// backend/admin.cc: export, index rebuild and verification, entry count, the snapshot copy
// (import: import.cc).
#include <algorithm>
#include <chrono>

#include "backend/detail/change_state.h"
#include "backend/detail/directory_core.h"
#include "backend/detail/update_util.h"

namespace numadir::backend::detail {
namespace {

// Calls `on_entry(id, view, keys)` for each entry of id2entry, in id order, with the index keys
// (slot, key) the entry implies. Returns: the first error of the scan or of on_entry.
template <typename OnEntry>
Status for_each_entry_keys(const DirectoryCore& core, MDB_txn* txn, OnEntry on_entry) {
  Result<Cursor> cursor = Cursor::open(txn, core.id2entry);
  NUMADIR_RETURN_IF_ERROR(cursor.status());
  std::string_view key;
  std::string_view value;
  IndexKeys keys;
  Result<bool> at = cursor->get(MDB_FIRST, &key, &value);
  while (at.ok() && *at) {
    Result<EntryView> view = EntryView::parse(value);
    NUMADIR_RETURN_IF_ERROR(view.status());
    keys.clear();
    NUMADIR_RETURN_IF_ERROR(core.indexes.entry_keys(core.catalog, *view, &keys));
    NUMADIR_RETURN_IF_ERROR(on_entry(load_id(key), *view, keys));
    at = cursor->get(MDB_NEXT, &key, &value);
  }
  return at.status();
}

// Finds, for an error message, a pair of `index` that no entry produces (the slow path, taken
// only when the index holds more pairs than the entries imply).
Status find_extra_pair(const DirectoryCore& core, MDB_txn* txn, std::uint32_t slot) {
  const Index& index = core.indexes.index(slot);
  Result<Cursor> cursor = Cursor::open(txn, index.dbi);
  NUMADIR_RETURN_IF_ERROR(cursor.status());
  std::string_view key;
  std::string_view value;
  IndexKeys keys;
  Result<bool> at = cursor->get(MDB_FIRST, &key, &value);
  while (at.ok() && *at) {
    const EntryId id = load_id(value);
    EntryView view;
    Result<bool> found = read_entry(core, txn, id, &view);
    NUMADIR_RETURN_IF_ERROR(found.status());
    keys.clear();
    if (*found) {
      NUMADIR_RETURN_IF_ERROR(core.indexes.entry_keys(core.catalog, view, &keys));
    }
    const std::pair<std::uint32_t, std::string> pair(slot, std::string(key));
    if (!std::binary_search(keys.begin(), keys.end(), pair)) {
      return internal_error(index.db_name + ": extra key '" + std::string(key) + "' id " +
                            std::to_string(id));
    }
    at = cursor->get(MDB_NEXT, &key, &value);
  }
  NUMADIR_RETURN_IF_ERROR(at.status());
  return internal_error(index.db_name + ": holds more pairs than the entries produce");
}

// Checks dn2id, children and id2entry against each other.
Status verify_hierarchy(const DirectoryCore& core, MDB_txn* txn, std::uint64_t* entries) {
  Result<Cursor> cursor = Cursor::open(txn, core.id2entry);
  NUMADIR_RETURN_IF_ERROR(cursor.status());
  std::string_view key;
  std::string_view value;
  Result<Cursor> children = Cursor::open(txn, core.dns.children());
  NUMADIR_RETURN_IF_ERROR(children.status());
  Result<bool> at = cursor->get(MDB_FIRST, &key, &value);
  EntryId max_id = 0;
  *entries = 0;
  while (at.ok() && *at) {
    const EntryId id = load_id(key);
    max_id = std::max(max_id, id);
    ++*entries;
    Result<EntryView> view = EntryView::parse(value);
    NUMADIR_RETURN_IF_ERROR(view.status());
    const std::string where = "entry " + std::to_string(id) + " (" + std::string(view->dn()) + ")";
    Result<EntryId> indexed = core.dns.find(txn, view->dn_key());
    NUMADIR_RETURN_IF_ERROR(indexed.status());
    if (*indexed != id) {
      return internal_error(where + ": dn2id maps its key to " + std::to_string(*indexed));
    }
    const EntryId parent = view->parent_id();
    std::string_view parent_bytes = id_bytes(parent);
    std::string_view child_bytes = id_bytes(id);
    Result<bool> listed = children->get(MDB_GET_BOTH, &parent_bytes, &child_bytes);
    NUMADIR_RETURN_IF_ERROR(listed.status());
    if (!*listed) {
      return internal_error(where + ": not among its parent's children");
    }
    if (parent == 0) {
      if (view->dn_key() != core.suffix_key) {
        return internal_error(where + ": no parent but not the suffix");
      }
    } else {
      Result<EntryId> parent_id = core.dns.find(txn, parent_key(view->dn_key()));
      NUMADIR_RETURN_IF_ERROR(parent_id.status());
      if (*parent_id != parent) {
        return internal_error(where + ": parent id does not match the parent's DN");
      }
    }
    at = cursor->get(MDB_NEXT, &key, &value);
  }
  NUMADIR_RETURN_IF_ERROR(at.status());
  Result<std::uint64_t> dn_count = db_entries(txn, core.dns.dn2id());
  Result<std::uint64_t> child_count = db_entries(txn, core.dns.children());
  NUMADIR_RETURN_IF_ERROR(dn_count.status());
  NUMADIR_RETURN_IF_ERROR(child_count.status());
  if (*dn_count != *entries || *child_count != *entries) {
    return internal_error("dn2id holds " + std::to_string(*dn_count) + " keys and children " +
                          std::to_string(*child_count) + " ids for " + std::to_string(*entries) +
                          " entries");
  }
  Result<EntryId> next_id = load_next_id(core, txn);
  NUMADIR_RETURN_IF_ERROR(next_id.status());
  if (*next_id <= max_id) {
    return internal_error("next_id " + std::to_string(*next_id) + " is not above the largest id");
  }
  return Status();
}

}  // namespace

Status run_export(const DirectoryCore& core,
                  const std::function<bool(const schema::Entry&)>& on_entry) {
  Result<Txn> txn = Txn::begin(*core.env, true);
  NUMADIR_RETURN_IF_ERROR(txn.status());
  // dn2id's key order is a preorder walk of the tree: parents first, whatever the ids.
  Result<Cursor> cursor = Cursor::open(txn->raw(), core.dns.dn2id());
  NUMADIR_RETURN_IF_ERROR(cursor.status());
  std::string_view key;
  std::string_view value;
  schema::Entry entry;
  // The suffix entry carries the contextCSN, as slapcat writes it, for an import to take up.
  Result<std::string> context_csn = load_context_csn(core, txn->raw());
  NUMADIR_RETURN_IF_ERROR(context_csn.status());
  Result<bool> at = cursor->get(MDB_FIRST, &key, &value);
  while (at.ok() && *at) {
    EntryView view;
    Result<bool> found = read_entry(core, txn->raw(), load_id(value), &view);
    NUMADIR_RETURN_IF_ERROR(found.status());
    if (!*found) {
      return internal_error("dn2id names a missing id");
    }
    NUMADIR_RETURN_IF_ERROR(view.decode(&entry));
    if (key == core.suffix_key && core.op_types.context_csn != nullptr && !context_csn->empty()) {
      entry.attributes.push_back(
          schema::EntryAttribute{std::string(core.op_types.context_csn->name), {*context_csn}});
    }
    if (!on_entry(entry)) {
      return Status();
    }
    at = cursor->get(MDB_NEXT, &key, &value);
  }
  return at.status();
}

Status run_rebuild_indexes(DirectoryCore& core) {
  MutexLock lock(core.write_mu);
  Result<Txn> txn = Txn::begin(*core.env, false);
  NUMADIR_RETURN_IF_ERROR(txn.status());
  MDB_txn* t = txn->raw();
  const std::span<const Index> indexes = core.indexes.indexes();
  for (const Index& index : indexes) {
    NUMADIR_RETURN_IF_ERROR(db_drop(t, index.dbi, false));
  }
  NUMADIR_RETURN_IF_ERROR(for_each_entry_keys(
      core, t, [&](EntryId id, const EntryView&, const IndexKeys& keys) -> Status {
        for (const auto& [slot, index_key] : keys) {
          NUMADIR_RETURN_IF_ERROR(
              db_put(t, indexes[slot].dbi, index_key, id_bytes(id), MDB_NODUPDATA).status());
        }
        return Status();
      }));
  for (const Index& index : indexes) {
    const std::string marker = std::string(kMetaIndexPrefix) + index.db_name;
    NUMADIR_RETURN_IF_ERROR(db_put(t, core.meta, marker, "1", 0).status());
  }
  const std::uint64_t built_in = txn_id(t);
  NUMADIR_RETURN_IF_ERROR(txn->commit());
  for (std::uint32_t slot = 0; slot < indexes.size(); ++slot) {
    if (!core.indexes.ready_in(slot, built_in)) {
      core.indexes.set_ready_since(slot, built_in);
    }
  }
  return Status();
}

Status run_verify_indexes(const DirectoryCore& core) {
  Result<Txn> txn = Txn::begin(*core.env, true);
  NUMADIR_RETURN_IF_ERROR(txn.status());
  MDB_txn* t = txn->raw();
  std::uint64_t entries = 0;
  NUMADIR_RETURN_IF_ERROR(verify_hierarchy(core, t, &entries));
  // Every pair an entry implies must be in its index (a GET_BOTH lookup each), and each index
  // must hold exactly as many pairs as the entries imply: then nothing is extra. Memory stays
  // constant whatever the directory's size.
  const std::span<const Index> indexes = core.indexes.indexes();
  std::vector<std::uint64_t> expected(indexes.size(), 0);
  {
    std::vector<Cursor> index_cursors;
    for (const Index& index : indexes) {
      Result<Cursor> cursor = Cursor::open(t, index.dbi);
      NUMADIR_RETURN_IF_ERROR(cursor.status());
      index_cursors.push_back(std::move(*cursor));
    }
    NUMADIR_RETURN_IF_ERROR(for_each_entry_keys(
        core, t, [&](EntryId id, const EntryView& view, const IndexKeys& keys) -> Status {
          for (const auto& [slot, index_key] : keys) {
            ++expected[slot];
            std::string_view k = index_key;
            std::string_view v = id_bytes(id);
            Result<bool> present = index_cursors[slot].get(MDB_GET_BOTH, &k, &v);
            NUMADIR_RETURN_IF_ERROR(present.status());
            if (!*present) {
              return internal_error(indexes[slot].db_name + ": missing key '" + index_key +
                                    "' id " + std::to_string(id) + " (" + std::string(view.dn()) +
                                    ")");
            }
          }
          return Status();
        }));
  }
  for (std::uint32_t slot = 0; slot < indexes.size(); ++slot) {
    Result<std::uint64_t> held = db_entries(t, indexes[slot].dbi);
    NUMADIR_RETURN_IF_ERROR(held.status());
    if (*held != expected[slot]) {
      return find_extra_pair(core, t, slot);
    }
  }
  return Status();
}

Result<std::uint64_t> run_entry_count(const DirectoryCore& core) {
  Result<Txn> txn = Txn::begin(*core.env, true);
  if (!txn.ok()) {
    return txn.status();
  }
  return db_entries(txn->raw(), core.id2entry);
}

}  // namespace numadir::backend::detail

namespace numadir::backend {

Status copy_directory_snapshot(const std::filesystem::path& source,
                               const std::filesystem::path& destination) {
  return copy_env_compacted(source, destination);
}

}  // namespace numadir::backend
