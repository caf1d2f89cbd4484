// backend/directory.h: the directory store: schema-checked entries in one LMDB environment,
// with dn2id, children and attribute indexes kept consistent by every update.
//
// Thread contract: a Directory is opened once at startup and shared. Reads: any number of
// threads, each with its own ReadTxn (one read transaction per operation, reused across
// operations with reset/renew; LMDB is opened MDB_NOTLS). Updates (add / remove / modify /
// rename) are jobs (directory_update.h) of the directory's single writer (detail/writer.h), one
// thread that owns the write transaction and commits batches of them; any thread but the
// writer's may call the synchronous methods here, which queue a job and wait for it. Imports and
// rebuild_indexes hold the writer mutex for their whole run instead (the Writer waits meanwhile).
// Every committed change is published on the change feed (change_feed.h). Destroy the Directory
// only after every ReadTxn, Importer and ChangeSubscription is gone and no thread submits updates.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/change_feed.h"
#include "backend/directory_import.h"
#include "backend/directory_options.h"
#include "backend/directory_read.h"
#include "backend/directory_update.h"
#include "backend/dn_normalizer.h"
#include "backend/fault_injection.h"
#include "base/status.h"
#include "schema/entry.h"
#include "schema/filter.h"
#include "schema/schema.h"

namespace numadir::backend {

class Directory;

// Copies the LMDB environment of a directory (its database.path) into `destination`, an
// existing directory without a data file, compacted, as one consistent snapshot: a copy to
// experiment on (numadir tune). The source is opened read-only, never as a Directory: nothing
// in it is created or written (LMDB only takes a reader slot in its lock file), so it may be
// copied while a server serves it.
// Errors: kNotFound when `source` holds no data.mdb; kStorage with LMDB's text.
Status copy_directory_snapshot(const std::filesystem::path& source,
                               const std::filesystem::path& destination);

// A read transaction owned by one thread (a worker keeps one in its worker state), reused
// across operations. It also holds the scratch buffers the reads made with it reuse.
class ReadTxn {
 public:
  ReadTxn(const ReadTxn&) = delete;
  ReadTxn& operator=(const ReadTxn&) = delete;
  ~ReadTxn();

 private:
  friend class Directory;
  ReadTxn() = default;
  struct State;
  std::unique_ptr<State> state_;
};

class Directory {
 public:
  // The bulk loads' and the session log's types, declared apart (directory_import.h,
  // directory_read.h) so that the files behind a Directory take them without this class.
  using BulkImportOptions = backend::BulkImportOptions;
  using BulkImporter = backend::BulkImporter;
  using ImportFailure = backend::ImportFailure;
  using Importer = backend::Importer;
  using SessionLogChanges = backend::SessionLogChanges;

  // Opens the environment at options.path and its databases; with OpenMode::kCreate, creates
  // the directory and an empty database first where there is none (created() says so).
  // Errors: kNotFound "no database in PATH" with OpenMode::kMustExist when options.path is not a
  //   directory holding data.mdb (nothing is created then); kStorage with LMDB's text, or
  //   naming the path when it cannot be created; kInvalidArgument for a bad suffix, a server_id
  //   above 4095, or an index on an attribute the schema does not know or a kind its matching
  //   rules cannot support.
  static Result<std::unique_ptr<Directory>> open(const schema::Schema& schema,
                                                 const DirectoryOptions& options, OpenMode mode);
  ~Directory();

  // Returns: whether open() made a new, empty database (OpenMode::kCreate where options.path
  //   held no data.mdb), for a command that says so.
  bool created() const;

  const schema::Schema& schema() const;
  const DirectoryOptions& options() const;
  // Returns: the normalizer the directory keys DNs with (valid for the directory's life). A DN
  //   it normalized (schema::Dn::normalized) may be looked up with lookup_normalized.
  const SchemaDnNormalizer& dn_normalizer() const;
  // Sends the directory's notices while it serves (a search that scans its scope for want of an
  //   index, once per attribute and index kind) to `sink`, from whichever thread reads; an
  //   empty sink (the default) prints them to standard error with a UTC timestamp. Thread-safe.
  void set_notices(std::function<void(std::string_view)> sink);

  // Returns: a read transaction for the calling thread (begin once, reuse for every operation:
  // each get/search renews it and resets it after).
  std::unique_ptr<ReadTxn> begin_read() const;
  // Keeps `txn`'s snapshot: called during a read with it (in a search's callback), it makes
  // that read leave the transaction live, and every later read with `txn` reads the same
  // snapshot, until `txn` is destroyed. For an operation that pauses and goes on later (a
  // search waiting for its client to read) and must not see entries move meanwhile. A pinned
  // snapshot holds an LMDB reader slot and keeps the pages it sees from reuse: hold it briefly.
  // Requires: a read with `txn` is under way on this thread.
  void pin_snapshot(ReadTxn& txn) const;

  // Errors: kNoSuchObject if absent (message = the matched DN); kInvalidDnSyntax; kStorage.
  Result<schema::Entry> get(ReadTxn& txn, std::string_view dn) const;
  // Passes the entry named `dn` to `on_entry` without decoding it (one dn2id lookup and one
  // id2entry read: the bind path reads EntryRef::values("userPassword") in place).
  // Errors: as get().
  Status lookup(ReadTxn& txn, std::string_view dn,
                const std::function<void(const EntryRef&)>& on_entry) const;
  // As lookup, for the entry whose normalized DN is `ndn` (a caller that has normalized the DN
  // already, as a bind has for its identity, saves the second normalization).
  // Requires: `ndn` is schema::Dn::normalized with dn_normalizer() ("" names the root DN).
  // Errors: kNoSuchObject (message = the matched DN); kStorage.
  Status lookup_normalized(ReadTxn& txn, std::string_view ndn,
                           const std::function<void(const EntryRef&)>& on_entry) const;
  // As lookup, for the entry with id `id` (ChangeRecord::entry_id): a change's entry wherever it
  // is now, however it was renamed since. Errors: kNoSuchObject (empty message) when no entry
  // has that id (deleted since); kStorage.
  Status lookup_id(ReadTxn& txn, std::uint64_t id,
                   const std::function<void(const EntryRef&)>& on_entry) const;
  // Streams the entries in scope that match the filter to `on_entry`, which returns false to
  // stop. Errors: kNoSuchObject (message = the matched DN, the longest existing ancestor) when
  //   the base does not exist; kSizeLimitExceeded / kTimeLimitExceeded after streaming what the
  //   limits allowed; kStorage.
  Status search(ReadTxn& txn, const SearchSpec& spec,
                const std::function<bool(const EntryRef&)>& on_entry) const;

  // Updates: each queued to the writer as a job, committed (possibly in one transaction with
  // other jobs) and durable per options.durability when it returns.
  // Errors: kEntryAlreadyExists, kNoSuchObject (parent or entry missing), kNotAllowedOnNonLeaf,
  //   kNotAllowedOnRdn, kNamingViolation, the schema's check_entry codes, kConstraintViolation
  //   for user changes to NO-USER-MODIFICATION attributes, kStorage.
  // Requires: not called on the writer thread (from a check, completion or change callback).
  Status add(const schema::Entry& entry, const UpdateContext& context);
  Status remove(std::string_view dn, const UpdateContext& context);
  Status modify(std::string_view dn, std::span<const Modification> modifications,
                const UpdateContext& context);
  Status rename(std::string_view dn, std::string_view new_rdn, bool delete_old_rdn,
                std::optional<std::string_view> new_superior, const UpdateContext& context);

  // The single writer's queue: an update that must not hold the calling thread (or that checks
  // something inside the write transaction) is an UpdateJob queued here (directory_update.h says
  // what its check and completion may do on the writer thread).
  // Queues `job` without waiting. Returns: true, having taken it (`job` is left empty); false
  // when options().writer_queue_jobs jobs are already waiting (`job` stays with the caller:
  // backpressure, try again once a completion has run). Requires: `job` is non-null.
  [[nodiscard]] bool try_submit_update(std::unique_ptr<UpdateJob>& job);
  // Queues `job`, waiting while the queue is full. Requires: not on the writer thread.
  void submit_update(std::unique_ptr<UpdateJob> job);
  // Queues `job` (which must have no completion), waits for its outcome and returns it.
  // Requires: not on the writer thread (aborts with a message there).
  Status run_update(std::unique_ptr<UpdateJob> job);
  // Returns: a snapshot of the writer's counters (each read relaxed: they may be mid-batch).
  WriterStats writer_stats() const;
  // Returns: whether the calling thread is the writer thread (where checks, completions and
  //   change callbacks run).
  bool on_writer_thread() const;
  // Returns: the feed every committed change is published on (valid for the directory's life;
  //   subscribe_changes subscribes to it).
  ChangeFeed& change_feed();
  // Prepares every upsert of `change` (a replication consumer's batch, directory_update.h) for the
  // writer: canonicalizes and checks its entry against the schema, encodes it and computes its
  // index keys (ReplicaItem::prepared), on the calling thread; `change` is then queued as an
  // UpdateJob. Errors: those that would refuse the whole job (ReplicaChange's list) for an
  // entry: kInvalidDnSyntax, kNoSuchObject (outside the suffix), kUndefinedAttributeType naming
  // the type, the schema's codes. Thread contract: any thread, at any time (reads only what
  // does not change while the directory is open).
  Status prepare_replica(ReplicaChange& change) const;
  // Returns: the cookie a replication consumer stored with its last batch (ReplicaChange,
  //   directory_update.h) for replica id `rid`, or nullopt when it stored none. Errors: kStorage.
  Result<std::optional<std::string>> replica_cookie(std::uint32_t rid) const;
  // Returns: the directory's contextCSN in `txn`'s snapshot: the greatest CSN of a change
  //   committed (local updates, replicated batches, imports: stored in the transaction of each),
  //   or "" when there is none yet. A local change's CSN is its stamp's; a replicated batch's are
  //   the entries' entryCSNs as the provider sent them and its cookie's CSN (so a replica has
  //   its provider's CSNs); an import's the greatest entryCSN imported and the suffix entry's
  //   contextCSN value in the LDIF. The suffix entry shows it as its contextCSN attribute
  //   (computed on read, never stored in the entry) and export_entries writes it there.
  //   May be called during another read with `txn` (from its callback): it then reads that
  //   read's snapshot, as after pin_snapshot. Errors: kStorage.
  Result<std::string> context_csn(ReadTxn& txn) const;

  // Returns: what changed after `csn` (an entryCSN-form CSN) in `txn`'s snapshot. Costs a read
  //   of the log records after `csn` (the log is ordered by commit). Not covered: the log is
  //   off, or `csn` is below the CSN from which it is complete (the greatest it trimmed, or the
  //   contextCSN when it began: turned on over a database, after an import), or a replicated
  //   delete committed without advancing the contextCSN at `csn`. A `csn` above the contextCSN
  //   is covered with nothing changed (the caller judges a CSN from the future). May be called
  //   during another read with `txn`, as context_csn. Errors: kStorage.
  Result<SessionLogChanges> session_log_since(ReadTxn& txn, std::string_view csn) const;

  // Subscribes `callback` to every change committed from now on (see change_feed.h for the
  // thread it runs on and what it may do). Returns: the subscription; destroying it
  // unsubscribes.
  std::unique_ptr<ChangeSubscription> subscribe_changes(ChangeCallback callback);

  // Begins a bulk load in one write transaction (Importer, directory_import.h).
  // Errors: kStorage; kInvalidArgument if the directory is not empty (as begin_bulk_import).
  Result<std::unique_ptr<Importer>> begin_import(const UpdateContext& context);

  // Begins a pipelined bulk load (BulkImporter, directory_import.h).
  // Errors: kStorage; kInvalidArgument ("the directory holds N entries: an import loads only
  //   into an empty one") if the directory is not empty.
  Result<std::unique_ptr<BulkImporter>> begin_bulk_import(const UpdateContext& context,
                                                          const BulkImportOptions& options);

  // Streams every entry (parents before children) to `on_entry`; false stops.
  Status export_entries(const std::function<bool(const schema::Entry&)>& on_entry) const;

  // Rebuilds every configured index from id2entry, or checks them. verify_indexes returns
  // kInternal describing the first inconsistency found (missing or extra key/id pairs).
  Status rebuild_indexes();
  Status verify_indexes() const;

  // Entries stored.
  Result<std::uint64_t> entry_count() const;

  // For tests only (backend/fault_injection.h): from now on the reads `faults` names fail with
  // kStorage; an empty FaultInjection ends them. Any thread may call it, also while others
  // read: each read sees either the previous faults or these.
  // Errors: kInvalidDnSyntax for a DN of `faults` that does not parse (nothing changes then).
  Status inject_faults_for_test(const FaultInjection& faults);

 private:
  struct Impl;
  explicit Directory(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace numadir::backend
