// backend/change_state.cc: the contextCSN and the session log (detail/change_state.h).
#include "backend/detail/change_state.h"

#include <algorithm>
#include <cstring>
#include <unordered_set>
#include <vector>

namespace numadir::backend::detail {
namespace {

Status corrupt_record() { return Status(StatusCode::kStorage, "corrupt session log record"); }

Result<std::uint64_t> load_bound(const DirectoryCore& core, MDB_txn* txn) {
  std::string_view value;
  Result<bool> found = db_get(txn, core.meta, kMetaSessionLogEntries, &value);
  if (!found.ok()) {
    return found.status();
  }
  if (!*found) {
    return std::uint64_t{0};
  }
  if (value.size() != sizeof(std::uint64_t)) {
    return Status(StatusCode::kStorage, "meta: session_log:entries is corrupt");
  }
  std::uint64_t bound = 0;
  std::memcpy(&bound, value.data(), sizeof bound);
  return bound;
}

Status store_bound(const DirectoryCore& core, MDB_txn* txn, std::uint64_t bound) {
  const std::string_view bytes(reinterpret_cast<const char*>(&bound), sizeof bound);
  return db_put(txn, core.meta, kMetaSessionLogEntries, bytes, 0).status();
}

Result<std::string> load_covered_from(const DirectoryCore& core, MDB_txn* txn) {
  std::string_view value;
  Result<bool> found = db_get(txn, core.meta, kMetaSessionLogCoveredFrom, &value);
  if (!found.ok()) {
    return found.status();
  }
  if (!*found) {
    return Status(StatusCode::kStorage, "meta: session_log:covered_from is missing");
  }
  return std::string(value);
}

// Records a full log drops at once beyond the one it must: trimming one record a change would
// touch (copy, in a job's nested transaction) the log's first pages at every change; a few dozen
// at a time cost that once for all of them. The log then holds between bound - slack and bound.
std::uint64_t trim_slack(std::uint64_t bound) { return std::min<std::uint64_t>(bound / 16, 64); }

// Removes the oldest records while the log holds more than `bound`, through `cursor` (on the
// log); `count` is what it holds and is updated. Returns: the greatest CSN removed ("" if none).
Result<std::string> trim(Cursor& cursor, std::uint64_t bound, std::uint64_t& count) {
  std::string greatest;
  while (count > bound) {
    std::string_view key;
    std::string_view value;
    Result<bool> at = cursor.get(MDB_FIRST, &key, &value);
    if (!at.ok()) {
      return at.status();
    }
    if (!*at) {
      count = 0;
      break;
    }
    Result<SessionLogRecord> record = decode_session_log_record(value);
    if (!record.ok()) {
      return record.status();
    }
    if (record->csn > greatest) {
      greatest.assign(record->csn);
    }
    NUMADIR_RETURN_IF_ERROR(cursor.del(0));
    --count;
  }
  return greatest;
}

// Raises the stored covered_from to `csn` when it is greater.
Status raise_covered_from(const DirectoryCore& core, MDB_txn* txn, std::string_view csn) {
  Result<std::string> stored = load_covered_from(core, txn);
  if (!stored.ok()) {
    return stored.status();
  }
  if (csn <= *stored) {
    return Status();
  }
  return db_put(txn, core.meta, kMetaSessionLogCoveredFrom, csn, 0).status();
}

// Returns: the greatest entryCSN of the stored entries ("" if none has one): one scan of
// id2entry, for a database made before the contextCSN was kept.
Result<std::string> greatest_entry_csn(const DirectoryCore& core, MDB_txn* txn) {
  std::string greatest;
  if (core.op_types.entry_csn == nullptr) {
    return greatest;
  }
  Result<Cursor> cursor = Cursor::open(txn, core.id2entry);
  if (!cursor.ok()) {
    return cursor.status();
  }
  std::string_view key;
  std::string_view value;
  Result<bool> at = cursor->get(MDB_FIRST, &key, &value);
  for (; at.ok() && *at; at = cursor->get(MDB_NEXT, &key, &value)) {
    Result<EntryView> view = EntryView::parse(value);
    if (!view.ok()) {
      return Status(StatusCode::kStorage,
                    "id2entry " + std::to_string(load_id(key)) + ": " + view.status().message());
    }
    AttributeView attribute;
    Result<bool> found = view->find(core.op_types.entry_csn->name, &attribute);
    if (!found.ok()) {
      return found.status();
    }
    std::string_view csn;
    while (*found && attribute.values.next(&csn)) {
      if (csn > greatest) {
        greatest.assign(csn);
      }
    }
  }
  if (!at.ok()) {
    return at.status();
  }
  return greatest;
}

}  // namespace

void encode_session_log_record(ChangeKind kind, std::string_view csn, std::string_view uuid,
                               std::string& out) {
  out.clear();
  out.push_back(static_cast<char>(kind));
  out.push_back(static_cast<char>(static_cast<unsigned char>(csn.size())));
  out.append(csn);
  out.append(uuid);
}

Result<SessionLogRecord> decode_session_log_record(std::string_view bytes) {
  if (bytes.size() < 2) {
    return corrupt_record();
  }
  const auto kind = static_cast<unsigned char>(bytes[0]);
  if (kind > static_cast<unsigned char>(ChangeKind::kRename)) {
    return corrupt_record();
  }
  const std::size_t csn_size = static_cast<unsigned char>(bytes[1]);
  if (csn_size > bytes.size() - 2) {
    return corrupt_record();
  }
  SessionLogRecord record;
  record.kind = static_cast<ChangeKind>(kind);
  record.csn = bytes.substr(2, csn_size);
  record.uuid = bytes.substr(2 + csn_size);
  return record;
}

Result<std::string> load_context_csn(const DirectoryCore& core, MDB_txn* txn) {
  std::string_view value;
  Result<bool> found = db_get(txn, core.meta, kMetaContextCsn, &value);
  if (!found.ok()) {
    return found.status();
  }
  return *found ? std::string(value) : std::string();
}

namespace {

std::string_view first_value(const AttributeInfo* info,
                             std::span<const schema::EntryAttribute> attributes) {
  if (info == nullptr) {
    return {};
  }
  for (const schema::EntryAttribute& attribute : attributes) {
    if (attribute.description == info->name && !attribute.values.empty()) {
      return attribute.values.front();
    }
  }
  return {};
}

}  // namespace

std::string_view entry_csn_of(const DirectoryCore& core,
                              std::span<const schema::EntryAttribute> attributes) {
  return first_value(core.op_types.entry_csn, attributes);
}

std::string_view entry_uuid_of(const DirectoryCore& core,
                               std::span<const schema::EntryAttribute> attributes) {
  return first_value(core.op_types.entry_uuid, attributes);
}

Result<std::string_view> stored_entry_uuid(const DirectoryCore& core, const EntryView& view) {
  if (core.op_types.entry_uuid == nullptr) {
    return std::string_view();
  }
  AttributeView attribute;
  Result<bool> found = view.find(core.op_types.entry_uuid->name, &attribute);
  if (!found.ok()) {
    return found.status();
  }
  std::string_view value;
  if (!*found || !attribute.values.next(&value)) {
    return std::string_view();
  }
  return value;
}

Status open_change_state(DirectoryCore& core, MDB_txn* txn, OpenMode mode) {
  std::string_view stored;
  Result<bool> found = db_get(txn, core.meta, kMetaContextCsn, &stored);
  NUMADIR_RETURN_IF_ERROR(found.status());
  std::string context_csn(*found ? stored : std::string_view());
  if (!*found) {
    Result<std::string> greatest = greatest_entry_csn(core, txn);
    NUMADIR_RETURN_IF_ERROR(greatest.status());
    context_csn = std::move(*greatest);
    NUMADIR_RETURN_IF_ERROR(db_put(txn, core.meta, kMetaContextCsn, context_csn, 0).status());
  }
  // This process's own changes sort after everything committed, even if the clock went back.
  observe_csn(context_csn);

  Result<MDB_dbi> log = open_dbi(txn, "session_log", MDB_CREATE | MDB_INTEGERKEY);
  NUMADIR_RETURN_IF_ERROR(log.status());
  core.session_log = *log;
  Result<std::uint64_t> stored_bound = load_bound(core, txn);
  NUMADIR_RETURN_IF_ERROR(stored_bound.status());
  const std::uint64_t bound =
      mode == OpenMode::kCreate ? core.options.session_log_entries : *stored_bound;
  core.session_log_entries = bound;
  if (bound == *stored_bound) {
    return Status();  // Kept as it was (off: turning it off cleared it).
  }
  if (bound == 0) {
    // Off: nothing of it stays to be taken for a complete log when it is turned on again.
    NUMADIR_RETURN_IF_ERROR(db_drop(txn, core.session_log, false));
    NUMADIR_RETURN_IF_ERROR(db_del(txn, core.meta, kMetaSessionLogEntries, nullptr).status());
    return db_del(txn, core.meta, kMetaSessionLogCoveredFrom, nullptr).status();
  }
  if (*stored_bound == 0) {
    // Begins now: the changes before it are not in it.
    NUMADIR_RETURN_IF_ERROR(db_drop(txn, core.session_log, false));
    NUMADIR_RETURN_IF_ERROR(
        db_put(txn, core.meta, kMetaSessionLogCoveredFrom, context_csn, 0).status());
    return store_bound(core, txn, bound);
  }
  if (bound < *stored_bound) {
    Result<std::uint64_t> count = db_entries(txn, core.session_log);
    NUMADIR_RETURN_IF_ERROR(count.status());
    std::uint64_t left = *count;
    Result<Cursor> cursor = Cursor::open(txn, core.session_log);
    NUMADIR_RETURN_IF_ERROR(cursor.status());
    Result<std::string> trimmed = trim(*cursor, bound, left);
    NUMADIR_RETURN_IF_ERROR(trimmed.status());
    cursor->close();
    NUMADIR_RETURN_IF_ERROR(raise_covered_from(core, txn, *trimmed));
  }
  return store_bound(core, txn, bound);
}

Status record_changes(DirectoryCore& core, MDB_txn* txn, std::span<ChangeRecord> changes,
                      std::string_view batch_csn, bool refresh) {
  if (changes.empty() && batch_csn.empty()) {
    return Status();
  }
  Result<std::string> loaded = load_context_csn(core, txn);
  NUMADIR_RETURN_IF_ERROR(loaded.status());
  std::string context_csn = std::move(*loaded);
  const std::string before = context_csn;
  const std::uint64_t bound = core.session_log_entries;
  Cursor log;
  std::uint64_t last_key = 0;
  std::uint64_t count = 0;
  std::string raise;  // What covered_from must be raised to.
  std::string encoded;
  for (ChangeRecord& change : changes) {
    if (change.csn.empty()) {
      change.csn = context_csn;
    }
    // A refresh's entries come in tree order, not commit order, and until its cookie the
    // replica holds only part of them: their entryCSNs say nothing of what it is up to date with.
    const bool advances =
        change.csn > context_csn && (!refresh || change.kind == ChangeKind::kDelete);
    if (advances) {
      context_csn = change.csn;
    }
    if (bound == 0) {
      continue;
    }
    if (!log.is_open()) {
      Result<Cursor> cursor = Cursor::open(txn, core.session_log);
      NUMADIR_RETURN_IF_ERROR(cursor.status());
      log = std::move(*cursor);
      std::string_view key;
      std::string_view value;
      Result<bool> at = log.get(MDB_LAST, &key, &value);
      NUMADIR_RETURN_IF_ERROR(at.status());
      last_key = *at ? load_id(key) : 0;
      Result<std::uint64_t> held = db_entries(txn, core.session_log);
      NUMADIR_RETURN_IF_ERROR(held.status());
      count = *held;
    }
    if (change.kind == ChangeKind::kDelete && !advances && !context_csn.empty()) {
      // A consumer whose cookie carries this CSN may have seen the state before this delete
      // or after it: only a greater CSN is covered from here. (CSNs have a fixed width, so
      // the CSN with one octet appended sorts after it and before every greater one.)
      raise = context_csn + '+';
    }
    encode_session_log_record(change.kind, context_csn, change.entry_uuid, encoded);
    ++last_key;
    NUMADIR_RETURN_IF_ERROR(log.put(id_bytes(last_key), encoded, MDB_APPEND).status());
    ++count;
    if (count > bound) {
      Result<std::string> trimmed = trim(log, bound - trim_slack(bound), count);
      NUMADIR_RETURN_IF_ERROR(trimmed.status());
      if (*trimmed > raise) {
        raise = std::move(*trimmed);
      }
    }
  }
  if (batch_csn > context_csn) {
    context_csn.assign(batch_csn);
  }
  if (!raise.empty()) {
    NUMADIR_RETURN_IF_ERROR(raise_covered_from(core, txn, raise));
  }
  if (context_csn != before) {
    NUMADIR_RETURN_IF_ERROR(db_put(txn, core.meta, kMetaContextCsn, context_csn, 0).status());
    // A replicated CSN may be ahead of this server's clock: its own next changes sort after it.
    observe_csn(context_csn);
  }
  return Status();
}

Status reset_change_state(const DirectoryCore& core, MDB_txn* txn, std::string_view context_csn) {
  NUMADIR_RETURN_IF_ERROR(db_put(txn, core.meta, kMetaContextCsn, context_csn, 0).status());
  if (core.session_log_entries == 0) {
    return Status();
  }
  NUMADIR_RETURN_IF_ERROR(db_drop(txn, core.session_log, false));
  return db_put(txn, core.meta, kMetaSessionLogCoveredFrom, context_csn, 0).status();
}

Result<SessionLogChanges> read_session_log(const DirectoryCore& core, MDB_txn* txn,
                                           std::string_view csn) {
  SessionLogChanges changes;
  if (core.session_log_entries == 0) {
    return changes;
  }
  Result<std::string> covered_from = load_covered_from(core, txn);
  if (!covered_from.ok()) {
    return covered_from.status();
  }
  if (csn < *covered_from) {
    return changes;
  }
  Result<Cursor> cursor = Cursor::open(txn, core.session_log);
  if (!cursor.ok()) {
    return cursor.status();
  }
  // From the newest back to the first record at or before `csn`: the records' CSNs never
  // decrease in commit order, so every earlier one is at or before it too.
  std::unordered_set<std::string_view> seen;  // Views into the transaction's pages.
  std::string_view key;
  std::string_view value;
  Result<bool> at = cursor->get(MDB_LAST, &key, &value);
  for (; at.ok() && *at; at = cursor->get(MDB_PREV, &key, &value)) {
    Result<SessionLogRecord> record = decode_session_log_record(value);
    if (!record.ok()) {
      return record.status();
    }
    if (record->csn <= csn) {
      break;
    }
    if (record->uuid.empty()) {
      continue;  // An entry without entryUUID (a schema that lacks it): nothing to name it by.
    }
    if (record->kind == ChangeKind::kDelete) {
      changes.deleted.emplace_back(record->uuid);
      seen.insert(record->uuid);
    } else if (seen.insert(record->uuid).second) {
      changes.changed.emplace_back(record->uuid);  // Its last change, and no delete after it.
    }
  }
  if (!at.ok()) {
    return at.status();
  }
  std::reverse(changes.deleted.begin(), changes.deleted.end());
  std::reverse(changes.changed.begin(), changes.changed.end());
  changes.covered = true;
  return changes;
}

}  // namespace numadir::backend::detail
