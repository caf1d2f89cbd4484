// backend/directory.h: the directory store: schema-checked entries in one LMDB environment,
// with dn2id, children and attribute indexes kept consistent by every update.
//
// Thread contract: a Directory is opened once at startup and shared. Reads: any number of
// threads, each with its own ReadTxn (one read transaction per operation, reused across
// operations with reset/renew; LMDB is opened MDB_NOTLS). Updates (add / remove / modify /
// rename) are jobs of the directory's Writer (writer.h), one thread that owns the write
// transaction and commits batches of them; any thread but the writer's may call the
// synchronous methods here, which queue a job and wait for it. Imports and rebuild_indexes
// hold the writer mutex for their whole run instead (the Writer waits meanwhile). Every
// committed change is published on the change feed (change_feed.h). Destroy the Directory only
// after every ReadTxn, Importer and ChangeSubscription is gone and no thread submits updates.
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
#include "backend/dn_normalizer.h"
#include "backend/fault_injection.h"
#include "base/status.h"
#include "schema/entry.h"
#include "schema/filter.h"
#include "schema/schema.h"

namespace numadir::backend {

// Which index kinds an attribute has (slapd's `index cn eq,sub`).
struct IndexSpec {
  std::string attribute;  // A name or OID the schema knows.
  bool equality = false;
  bool presence = false;
  bool substrings = false;
  bool ordering = false;
};

enum class Durability {
  // Default: every committed write is fsync'ed before it is acknowledged; survives kill -9 and
  // power loss.
  kSync,
  // MDB_NOSYNC: commits are not flushed; a process crash loses nothing, an OS crash or power
  // loss may lose the last writes (the database stays consistent). Opt-in, for bulk loads.
  kNoSync,
};

// Whether Directory::open may make a database where there is none. Only the commands that
// write a directory (serve, import) create one: a command that reads a database (export, index)
// must not turn a misspelt path into an empty directory that looks like an empty database.
enum class OpenMode : std::uint8_t {
  // Creates options.path (and its parents) and an empty database in it when missing.
  kCreate,
  // Opens only a database that is there (options.path holding data.mdb); creates nothing, not
  // even the directory or LMDB's lock file, when it is not.
  kMustExist,
};

struct DirectoryOptions {
  std::filesystem::path path;  // A directory; see OpenMode for who creates it.
  std::uint64_t map_size_bytes = std::uint64_t{8} << 30;
  std::string suffix;  // The naming context, e.g. "dc=example,dc=com".
  std::vector<IndexSpec> indexes;
  Durability durability = Durability::kSync;
  // LMDB reader slots. Every thread that reads keeps one while it lives (its ReadTxn is reset,
  // not aborted, between operations): each worker and each listener that helps its pool, so a
  // large machine's auto plan (a worker per PU) needs hundreds. A slot is 64 bytes of lock
  // file; LMDB scans only the slots ever used.
  std::uint32_t max_readers = 4096;
  // LMDB's MDB_WRITEMAP, for a process that bulk-loads (numadir import): faster large write
  // transactions; commits stay as durable. Other processes may open the same directory without
  // it meanwhile.
  bool write_map = false;
  // The server id written into every CSN (entryCSN, change records), 0..4095 (kMaxServerId),
  // as OpenLDAP's serverID: replicas of one directory need distinct ids.
  std::uint32_t server_id = 0;
  // The writer's bounds: jobs waiting (Writer::try_submit refuses and submit waits past it),
  // and the jobs and approximate bytes of one batch (one commit).
  std::size_t writer_queue_jobs = 4096;
  std::size_t writer_batch_jobs = 256;
  std::size_t writer_batch_bytes = std::size_t{16} << 20;
  // The session log (slapd's syncprov-sessionlog): the last this many changes (their CSN,
  // kind and entryUUID), kept in LMDB in the transaction of each change, for a replication
  // consumer to catch up on deletes without a present phase (session_log_since). 0: none (and
  // a log kept before is cleared: turned on again, it begins afresh). A smaller bound than the
  // log was kept with trims it at open. Applied by an open with OpenMode::kCreate; an open with
  // kMustExist (export, index) keeps the log as stored, with its stored bound.
  std::uint64_t session_log_entries = 0;
};

// Who does an update and when: fills creatorsName / modifiersName and the timestamps.
struct UpdateContext {
  std::string actor_dn;  // The bound DN; empty for anonymous / internal.
  std::optional<std::chrono::system_clock::time_point> now;  // Defaults to the clock.
  // The server's own bookkeeping (the password policy's failure state), not a client's update:
  // its ChangeRecord says so (ChangeRecord::internal), for subscribers that skip their own writes.
  bool internal = false;
};

enum class ModificationKind : std::uint8_t { kAdd, kDelete, kReplace, kIncrement };

struct Modification {
  ModificationKind kind = ModificationKind::kReplace;
  std::string description;          // Attribute description (type and options).
  std::vector<std::string> values;  // Empty: delete all / replace with none.
  // Made by the server itself (the password policy's pwdChangedTime, pwdHistory, ...): a
  // NO-USER-MODIFICATION type may be written. Never set from a client's request.
  bool internal = false;
};

enum class Scope : std::uint8_t { kBase, kOneLevel, kSubtree, kChildren };

struct SearchSpec {
  std::string base;  // A DN (any spelling; normalized by the Directory).
  Scope scope = Scope::kSubtree;
  const schema::Filter* filter = nullptr;  // Required.
  std::uint64_t size_limit = 0;            // 0 = none.
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

// One search result, valid only during the callback (it may point into LMDB memory).
class EntryRef {
 public:
  virtual ~EntryRef() = default;
  virtual std::string_view dn() const = 0;  // As stored (the spelling it was added with).
  // Writes the normalized DN (schema::Dn::normalized with the directory's DN normalizer) to
  // `out` and returns true; false when this reference cannot tell it without normalizing dn()
  // (the default, for test fakes). The backend's references take it from the stored dn key.
  virtual bool normalized_dn(std::string& /*out*/) const { return false; }
  // Decodes the whole entry, operational attributes (stored and computed: hasSubordinates,
  // numSubordinates, subschemaSubentry, entryDN) included.
  virtual schema::Entry materialize() const = 0;
  // Returns: the stored values of `description` (a type name or OID, optionally with options;
  // values of its subtypes included), in place: views valid only during the callback. Empty
  // for an unknown type or an absent attribute. (Added by the backend for bind: reading
  // userPassword this way decodes nothing else. The default is for test fakes.)
  // values_into() writes them to `out` (replacing its contents, keeping its capacity).
  std::vector<std::string_view> values(std::string_view description) const {
    std::vector<std::string_view> out;
    values_into(description, out);
    return out;
  }
  virtual void values_into(std::string_view description, std::vector<std::string_view>& out) const {
    (void)description;
    out.clear();
  }
  // As values_into for each of `types` (attribute type names or OIDs, without options) into the
  // vector of `out` at the same position, in one pass over the entry. Requires: `out` has at
  // least as many vectors as `types`. (The default calls values_into for each.)
  virtual void values_of_types(std::span<const std::string_view> types,
                               std::span<std::vector<std::string_view>> out) const {
    for (std::size_t i = 0; i < types.size(); ++i) {
      values_into(types[i], out[i]);
    }
  }
};

class Directory;
class Writer;
struct ReplicaChange;  // update_job.h

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

  // The single writer: submit UpdateJobs to it for updates that must not hold the calling
  // thread (and for checks inside the write transaction).
  Writer& writer();
  // Prepares every upsert of `change` (a replication consumer's batch, update_job.h) for the
  // writer: canonicalizes and checks its entry against the schema, encodes it and computes its
  // index keys (ReplicaItem::prepared), on the calling thread; `change` is then queued as an
  // UpdateJob. Errors: those that would refuse the whole job (ReplicaChange's list) for an
  // entry: kInvalidDnSyntax, kNoSuchObject (outside the suffix), kUndefinedAttributeType naming
  // the type, the schema's codes. Thread contract: any thread, at any time (reads only what
  // does not change while the directory is open).
  Status prepare_replica(ReplicaChange& change) const;
  // Returns: the cookie a replication consumer stored with its last batch (ReplicaChange,
  //   update_job.h) for replica id `rid`, or nullopt when it stored none. Errors: kStorage.
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

  // What the session log knows of the changes committed after a CSN.
  struct SessionLogChanges {
    // True when the log holds a record of every change committed after the CSN asked for:
    // then every entry added, modified or renamed since carries a greater entryCSN, and
    // `deleted` lists every entry deleted since. False when the log is off, or some of those
    // changes were trimmed from it (or happened before it began).
    bool covered = false;
    // Covered only: the entryUUIDs (string form) of the entries deleted after the CSN, in
    // commit order (an entry added and deleted since is listed too).
    std::vector<std::string> deleted;
    // Covered only: the entryUUIDs of the entries added, modified or renamed after the CSN and
    // not deleted after that, each once, in the order of its last such change (an entry can
    // be found by them, through an eq index on entryUUID, without a scan for entryCSN).
    std::vector<std::string> changed;
  };
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

  // Bulk load in one write transaction: nothing is committed unless finish() succeeds.
  class Importer {
   public:
    virtual ~Importer() = default;
    // Adds `entry` (schema-checked; operational attributes added unless present, as slapadd
    // does). Errors as add() (with the messages of ImportFailure::status); after an error the
    // import must be abandoned.
    virtual Status add(const schema::Entry& entry) = 0;
    // Commits everything. Errors: kStorage.
    virtual Status finish() = 0;
  };
  // Errors: kStorage; kInvalidArgument if the directory is not empty (as begin_bulk_import).
  Result<std::unique_ptr<Importer>> begin_import(const UpdateContext& context);

  // A pipelined bulk load with the guarantees of Importer (one write transaction, nothing
  // committed unless finish() succeeds, indexes built in the same pass): worker threads check,
  // stamp, encode and key the entries while one writer thread stores them in input order.
  //
  // Thread contract: one thread (the caller's) calls add() and finish() and destroys the
  // BulkImporter; the importer's own threads (the workers and the writer, which owns the write
  // transaction from begin to commit or abort) are joined by finish() or the destructor.
  struct BulkImportOptions {
    std::uint32_t workers = 0;           // Threads that prepare entries; 0: one per CPU.
    std::size_t batch_entries = 256;     // Entries handed between threads at a time.
    std::size_t batches_per_worker = 4;  // Bounds the entries in flight (and so the memory).
  };
  // Which entry stopped an import, and why.
  struct ImportFailure {
    std::uint64_t tag = 0;  // As given to add().
    std::string dn;         // The entry's DN as given.
    // As add() would have returned it, except the messages: kEntryAlreadyExists "an entry with
    // this DN is already stored" (with its spelling when it differs), kNoSuchObject "parent
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
