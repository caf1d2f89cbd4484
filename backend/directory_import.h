// backend/directory_import.h: the bulk loads of an empty directory (Importer, BulkImporter, their
// options and how one fails): part of directory.h's face, apart so that the files behind a
// Directory (import.cc and detail/directory_core.h) take them without the Directory class.
//
// Thread contract: an Importer belongs to the thread that began it; a BulkImporter's contract is
// on the class. The options and an ImportFailure are plain values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "schema/entry.h"

namespace numadir::backend {

// A bulk load in one write transaction (Directory::begin_import): nothing is committed unless
// finish() succeeds.
class Importer {
 public:
  virtual ~Importer() = default;
  // Adds `entry` (schema-checked; operational attributes added unless present, as slapadd
  // does). Errors as Directory::add() (with the messages of ImportFailure::status); after an error
  // the import must be abandoned.
  virtual Status add(const schema::Entry& entry) = 0;
  // Commits everything. Errors: kStorage.
  virtual Status finish() = 0;
};

// The bounds of a BulkImporter (Directory::begin_bulk_import).
struct BulkImportOptions {
  std::uint32_t workers = 0;           // Threads that prepare entries; 0: one per CPU.
  std::size_t batch_entries = 256;     // Entries handed between threads at a time.
  std::size_t batches_per_worker = 4;  // Bounds the entries in flight (and so the memory).
};
// Which entry stopped an import, and why.
struct ImportFailure {
  std::uint64_t tag = 0;  // As given to add().
  std::string dn;         // The entry's DN as given.
  // As Directory::add() would have returned it, except the messages: kEntryAlreadyExists "an entry
  // with this DN is already stored" (with its spelling when it differs), kNoSuchObject "parent
  // entry P is missing" or "not under the suffix S".
  Status status;
  // kEntryAlreadyExists: the tag and DN (as given) of the earlier entry of this import with
  // the same DN.
  std::optional<std::uint64_t> earlier_tag;
  std::string earlier_dn;
  // kNoSuchObject: the DN of the missing parent (`dn` less its first RDN); empty for an entry
  // outside the suffix.
  std::string missing_parent;
};
// A pipelined bulk load (Directory::begin_bulk_import) with the guarantees of Importer (one write
// transaction, nothing committed unless finish() succeeds, indexes built in the same pass): worker
// threads check, stamp, encode and key the entries while one writer thread stores them in input
// order.
//
// Thread contract: one thread (the caller's) calls add() and finish() and destroys the
// BulkImporter; the importer's own threads (the workers and the writer, which owns the write
// transaction from begin to commit or abort) are joined by finish() or the destructor.
class BulkImporter {
 public:
  virtual ~BulkImporter() = default;
  // Queues `entry` with `tag` (the caller's reference for it, e.g. its line number), taking
  // its contents: `entry` is left holding storage of an earlier entry, for reuse. May wait
  // while the entries in flight are at their bound.
  // Returns: false when an entry has failed (failure() says which); stop adding then.
  virtual bool add(schema::Entry& entry, std::uint64_t tag) = 0;
  // Stores what is queued and commits. Errors: the failed entry's status (failure() says
  // which), kStorage; nothing is committed then. Call finish() or abort() at most once.
  virtual Status finish() = 0;
  // Commits nothing, after checking what is queued as finish() would (so that an entry that
  // failed before a later problem, e.g. a bad LDIF record, is the one reported).
  // Returns: failure(), the first of those entries that failed, or nullptr.
  virtual const ImportFailure* abort() = 0;
  // The first entry, in input order, that failed; nullptr when none did. Call after add()
  // returned false or finish() failed.
  virtual const ImportFailure* failure() const = 0;
};

}  // namespace numadir::backend
