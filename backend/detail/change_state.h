// backend/detail/change_state.h: what a replication provider reads of the directory's history,
// kept in LMDB beside the data and written in the transaction of each change:
//   - the contextCSN (meta key "context_csn"): the greatest CSN committed;
//   - the session log (database "session_log", DirectoryOptions::session_log_entries): one
//     record per committed change, keyed by a 64-bit number that grows in commit order, holding
//     the change's kind, the entry's entryUUID and the contextCSN the change left (its own CSN,
//     or a greater one committed before it: so the records' CSNs never decrease in commit order,
//     even for replicated changes whose upstream CSNs come in another order). The oldest records
//     beyond the bound are trimmed (a few dozen at a time, so the log holds from the bound less
//     min(bound / 16, 64) up to the bound); meta "session_log:covered_from" is the CSN from which
//     the log is complete: the greatest CSN trimmed, or the contextCSN when the log began (turned
//     on over a database, or after an import). meta "session_log:entries" is the bound it was kept
//     with.
//
// Thread contract: as detail/update_util.h for the writes (the thread holding write_mu, in its
// write transaction); the reads in any transaction of the calling thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "backend/detail/directory_core.h"

namespace numadir::backend::detail {

inline constexpr std::string_view kMetaContextCsn = "context_csn";
inline constexpr std::string_view kMetaSessionLogEntries = "session_log:entries";
inline constexpr std::string_view kMetaSessionLogCoveredFrom = "session_log:covered_from";

// One session log record, as stored: kind (1 byte: ChangeKind), the CSN's length (1 byte), the
// CSN, then the entryUUID (the rest).
struct SessionLogRecord {
  ChangeKind kind = ChangeKind::kAdd;
  std::string_view csn;   // The contextCSN after the change.
  std::string_view uuid;  // Empty when the entry had none.
};
// Writes the record to `out` (replacing it). Requires: csn.size() <= 255.
void encode_session_log_record(ChangeKind kind, std::string_view csn, std::string_view uuid,
                               std::string& out);
// Returns: the record `bytes` holds, viewing them. Errors: kStorage "corrupt session log
// record" when they are not one (too short, an unknown kind, a CSN longer than the rest).
Result<SessionLogRecord> decode_session_log_record(std::string_view bytes);

// At open, in open()'s write transaction: the contextCSN of a database that has none stored yet
// (made before it was kept) is computed from the greatest entryCSN, in one scan, and stored; the
// session log is begun, trimmed to a smaller bound, or cleared (turned off), as
// options.session_log_entries asks; with OpenMode::kMustExist (a command that only reads, or
// rebuilds indexes) the log is kept as stored, with the bound it was kept with. Sets
// core.session_log and core.session_log_entries. Errors: kStorage.
Status open_change_state(DirectoryCore& core, MDB_txn* txn, OpenMode mode);

// Returns: the stored contextCSN ("" when none). Errors: kStorage.
Result<std::string> load_context_csn(const DirectoryCore& core, MDB_txn* txn);

// The change state of the records of one job, in its transaction `txn`, after its change was
// applied: advances the contextCSN past each record's CSN (but with `refresh`, a replication
// batch of a refresh phase, past its deletes' only) and past `batch_csn` (a replication batch's
// cookie CSN, "" for none), and appends each record to the session log (trimming it to its
// bound). A record without a CSN (a replicated delete whose batch has no cookie CSN) is given the
// contextCSN as it stands; when a delete does not advance the contextCSN, the log stops covering
// that CSN (a consumer at it could not tell the delete from those before it).
// Errors: kStorage; the transaction must then be aborted.
Status record_changes(DirectoryCore& core, MDB_txn* txn, std::span<ChangeRecord> changes,
                      std::string_view batch_csn, bool refresh = false);

// After an import into `txn`: stores `context_csn` as the contextCSN and begins the session log
// afresh from it (an import writes no records). Errors: kStorage.
Status reset_change_state(const DirectoryCore& core, MDB_txn* txn, std::string_view context_csn);

// Directory::session_log_since, in `txn`. Errors: kStorage.
Result<SessionLogChanges> read_session_log(const DirectoryCore& core, MDB_txn* txn,
                                           std::string_view csn);

// Returns: the entryCSN / the entryUUID of `attributes` (canonical descriptions), "" when it
// has none. Views into `attributes`.
std::string_view entry_csn_of(const DirectoryCore& core,
                              std::span<const schema::EntryAttribute> attributes);
std::string_view entry_uuid_of(const DirectoryCore& core,
                               std::span<const schema::EntryAttribute> attributes);
// Returns: the stored entryUUID of `view` ("" when it has none), a view into it.
// Errors: kStorage when the entry is corrupt.
Result<std::string_view> stored_entry_uuid(const DirectoryCore& core, const EntryView& view);

}  // namespace numadir::backend::detail
