// backend/detail/directory_core.h: the state behind a Directory (environment, DBIs, indexes,
// schema tables) and the per-thread read state behind a ReadTxn, shared by the files that
// implement directory.h (directory.cc, search.cc, update.cc, modify.cc, rename.cc, admin.cc,
// import.cc).
//
// Thread contract: a DirectoryCore is built by Directory::open and immutable afterwards except
// for write_mu (held by the Writer for each batch, and by an Importer for its whole life), the
// logged-unindexed memo (log_mu) and the test-only read faults (see `faults`). A ReadState is
// owned by the thread that uses its ReadTxn.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/attribute_catalog.h"
#include "backend/attribute_index.h"
#include "backend/candidates.h"
#include "backend/change_feed.h"
#include "backend/directory_import.h"
#include "backend/directory_options.h"
#include "backend/directory_read.h"
#include "backend/directory_update.h"
#include "backend/dn_hints.h"
#include "backend/dn_index.h"
#include "backend/dn_normalizer.h"
#include "backend/entry_codec.h"
#include "backend/filter_eval.h"
#include "backend/lmdb_env.h"
#include "backend/operational.h"
#include "base/thread_annotations.h"

namespace numadir::backend::detail {

// Meta database keys.
inline constexpr std::string_view kMetaFormat = "format";
inline constexpr std::string_view kMetaNextId = "next_id";
inline constexpr std::string_view kMetaSuffix = "suffix";
inline constexpr std::string_view kMetaIndexPrefix = "index:";  // + db name: built.
inline constexpr std::uint32_t kFormatVersion = 1;

// The reads that fail (FaultInjection, made into dn keys by Directory::inject_faults_for_test).
struct FaultSet {
  std::vector<std::string> keys;
  std::string message;

  // Returns: kStorage `message` when `key` is one of `keys`; ok otherwise.
  Status on_read(std::string_view key) const {
    for (const std::string& failing : keys) {
      if (failing == key) {
        return Status(StatusCode::kStorage, message);
      }
    }
    return Status();
  }
};

struct DirectoryCore {
  DirectoryCore(const schema::Schema& schema_in, DirectoryOptions options_in)
      : schema(schema_in),
        options(std::move(options_in)),
        catalog(schema_in),
        op_types(catalog),
        normalizer(schema_in) {}
  DirectoryCore(const DirectoryCore&) = delete;
  DirectoryCore& operator=(const DirectoryCore&) = delete;

  const schema::Schema& schema;
  const DirectoryOptions options;
  const AttributeCatalog catalog;
  const OperationalTypes op_types;
  const SchemaDnNormalizer normalizer;
  IndexSet indexes;  // Configured in open(); then immutable.
  std::unique_ptr<Env> env;
  MDB_dbi id2entry = 0;  // id (MDB_INTEGERKEY) -> encoded entry
  MDB_dbi meta = 0;
  // The session log (detail/change_state.h) and its bound (0: off), set by open().
  MDB_dbi session_log = 0;
  std::uint64_t session_log_entries = 0;
  DnIndex dns;
  std::string suffix_key;
  // Where searches last found entries, for the binds that follow them (see dn_hints.h): 8,192
  // slots (64 KiB), far more than the auths in flight at once. Internally synchronized.
  mutable DnHints dn_hints{8192};
  // Serializes writers: LMDB has one write transaction at a time, and the writer mutex keeps
  // that wait out of LMDB's lock. The Writer holds it from a batch's begin to its commit; an
  // Importer, a BulkImporter and rebuild_indexes for their whole run.
  mutable Mutex write_mu;
  // Where notices go (Directory::set_notices), and the unindexed filter items already noted,
  // as "<attribute> <kind>" (see note_unindexed).
  mutable Mutex log_mu;
  std::function<void(std::string_view)> notices NUMADIR_GUARDED_BY(log_mu);
  mutable std::vector<std::string> logged_unindexed NUMADIR_GUARDED_BY(log_mu);
  // Test-only read faults (Directory::inject_faults_for_test); nullptr unless a test set some,
  // so that a read pays one predictable branch. Stored with release by the setter and loaded
  // with acquire by every read that consults it, which then sees a whole FaultSet. Every set
  // ever stored stays in fault_sets until the directory closes: a read that loaded an older one
  // never sees it freed.
  std::atomic<const FaultSet*> faults{nullptr};
  Mutex faults_mu;
  std::vector<std::unique_ptr<const FaultSet>> fault_sets NUMADIR_GUARDED_BY(faults_mu);
};

// Returns: whether a test injected read faults (one acquire load: a plain load on x86).
inline bool faults_injected(const DirectoryCore& core) {
  return core.faults.load(std::memory_order_acquire) != nullptr;
}
// Returns: the injected fault for a read of the entry with dn key `key`; ok when there is none.
// The slow half of the seam: reads call it only when faults_injected().
inline Status fault_for_read(const DirectoryCore& core, std::string_view key) {
  const FaultSet* faults = core.faults.load(std::memory_order_acquire);
  return faults == nullptr ? Status() : faults->on_read(key);
}

// The state of one ReadTxn: an MDB_NOTLS read transaction renewed per operation, its cursors,
// and scratch space reused across operations (a worker's ReadTxn is its backend scratch: no
// read path keeps anything in per-thread globals).
struct ReadState {
  ReadState() = default;
  ReadState(const ReadState&) = delete;
  ReadState& operator=(const ReadState&) = delete;
  ~ReadState() {
    cursors.close_all();
    if (txn != nullptr) {
      abort_txn(txn);
    }
  }

  MDB_txn* txn = nullptr;  // Reset between operations, unless pinned.
  // Directory::pin_snapshot: the transaction stays live between operations (one snapshot).
  bool pinned = false;
  // A ReadScope is open on it (an operation is under way): a read made from its callback (a
  // context_csn inside a search's) reads the same snapshot.
  bool in_read = false;
  CursorCache cursors;
  // Scratch of the lookups by name: the dn key and what keying a DN goes through.
  std::string key;
  DnKeyScratch dn_scratch;
  CompiledFilter filter;
  FilterEvaluator evaluator;
  IdList candidates;
  // The last search base and its dn key: a worker serving auth searches sees the same base
  // again and again, and normalizing it is most of a search's CPU otherwise.
  std::string last_base;
  std::string last_base_key;
  // Its id, as found in the snapshot of transaction last_base_txn (0: not looked up yet). A
  // read transaction's id changes only when a write commits, so the same id means the same
  // snapshot and the same answer.
  EntryId last_base_id = 0;
  std::uint64_t last_base_txn = 0;
};

// Begins one read operation on `state` (begin or renew) and resets the transaction when it
// goes out of scope, so LMDB views do not outlive the operation. A pinned transaction is
// neither renewed nor reset: its operations all read its one snapshot. Nor is one whose
// operation is under way (a scope opened inside another's): only reads that use none of the
// state's scratch (context_csn, session_log_since) may open one so.
class ReadScope {
 public:
  ReadScope(const DirectoryCore& core, ReadState& state);
  ~ReadScope();
  ReadScope(const ReadScope&) = delete;
  ReadScope& operator=(const ReadScope&) = delete;
  const Status& status() const { return status_; }

 private:
  ReadState& state_;
  Status status_;
  bool outer_ = false;  // This scope began the operation (and ends it).
};

// Reads entry `id`. Returns: false when absent. Errors: kStorage (also for a corrupt record).
Result<bool> read_entry(const DirectoryCore& core, MDB_txn* txn, EntryId id, EntryView* view);

// Returns: the stored DN of the longest existing ancestor of `key` (or of `key`), "" if none.
// Errors: kStorage.
Result<std::string> matched_dn(const DirectoryCore& core, MDB_txn* txn, std::string_view key);

// CursorCache purposes.
inline constexpr int kChildCountCursor = 1;
inline constexpr int kMetaCursor = 2;

// Computed attribute values of one stored entry (child counts through `cursors`).
class StoredComputed : public ComputedSource {
 public:
  StoredComputed(const DirectoryCore& core, CursorCache& cursors, EntryId id, const EntryView& view)
      : core_(core), cursors_(cursors), id_(id), view_(view) {}
  Status computed_values(ComputedAttribute which, std::vector<std::string>* out) const override;

 private:
  const DirectoryCore& core_;
  CursorCache& cursors_;
  EntryId id_;
  const EntryView& view_;
};

// Decodes `view` with its computed operational attributes into `out`. Errors: kStorage.
Status materialize_entry(const DirectoryCore& core, CursorCache& cursors, EntryId id,
                         const EntryView& view, schema::Entry* out);

// Says (once per attribute and kind, through core.notices) that a search item on `item`'s
// attribute found no usable index of its kind and so scanned its scope.
void note_unindexed(const DirectoryCore& core, const UnindexedItem& item);

// The operations behind Directory's public methods.
Status run_search(const DirectoryCore& core, ReadState& state, const SearchSpec& spec,
                  const std::function<bool(const EntryRef&)>& on_entry);
Result<schema::Entry> run_get(const DirectoryCore& core, ReadState& state, std::string_view dn);
Status run_lookup(const DirectoryCore& core, ReadState& state, std::string_view dn,
                  const std::function<void(const EntryRef&)>& on_entry);
Status run_lookup_id(const DirectoryCore& core, ReadState& state, EntryId id,
                     const std::function<void(const EntryRef&)>& on_entry);
Status run_lookup_normalized(const DirectoryCore& core, ReadState& state, std::string_view ndn,
                             const std::function<void(const EntryRef&)>& on_entry);

// Passes entry `id`, read as `view` in the transaction `cursors` is bound to, to `on_entry` as
// an EntryRef (search results' kind: values() in place, materialize() in full).
void deliver_entry(const DirectoryCore& core, CursorCache& cursors, EntryId id,
                   const EntryView& view, const std::function<void(const EntryRef&)>& on_entry);

// The changes behind the updates, each inside `txn`, a write transaction of the writer thread
// (which holds write_mu): every check and every write of the change, without committing. On
// success `change` has everything of the change record but its sequence number.
// Errors: as Directory::add / remove / modify / rename; after an error the transaction holds
// partial writes and must be aborted.
// apply_add draws the entry's entryUUID from `uuids` (the writer's).
Status apply_add(DirectoryCore& core, MDB_txn* txn, const schema::Entry& entry,
                 std::span<const std::string> internal_attributes, const Stamp& stamp,
                 UuidGenerator& uuids, ChangeRecord* change);
Status apply_remove(DirectoryCore& core, MDB_txn* txn, std::string_view dn, const Stamp& stamp,
                    ChangeRecord* change);
Status apply_modify(DirectoryCore& core, MDB_txn* txn, std::string_view dn,
                    std::span<const Modification> modifications, const Stamp& stamp,
                    ChangeRecord* change);
Status apply_rename(DirectoryCore& core, MDB_txn* txn, std::string_view dn,
                    std::string_view new_rdn, bool delete_old_rdn,
                    std::optional<std::string_view> new_superior, const Stamp& stamp,
                    ChangeRecord* change);

// A replication consumer's batch (backend/replica.cc), in `txn` as the changes above; one
// record per entry added, modified, renamed or deleted is appended to `changes`.
Status apply_replica(DirectoryCore& core, MDB_txn* txn, const ReplicaChange& change,
                     const Stamp& stamp, std::vector<ChangeRecord>& changes);
// Directory::prepare_replica.
Status run_prepare_replica(const DirectoryCore& core, ReplicaChange& change);
// Returns: the cookie stored for consumer `rid`, or nullopt. Errors: kStorage.
Result<std::optional<std::string>> run_replica_cookie(const DirectoryCore& core, std::uint32_t rid);
// The meta key a consumer's cookie is stored under.
std::string replica_cookie_key(std::uint32_t rid);

Result<std::unique_ptr<Importer>> run_begin_import(DirectoryCore& core,
                                                   const UpdateContext& context);
Result<std::unique_ptr<BulkImporter>> run_begin_bulk_import(DirectoryCore& core,
                                                            const UpdateContext& context,
                                                            const BulkImportOptions& options);
Status run_export(const DirectoryCore& core,
                  const std::function<bool(const schema::Entry&)>& on_entry);
Status run_rebuild_indexes(DirectoryCore& core);
Status run_verify_indexes(const DirectoryCore& core);
Result<std::uint64_t> run_entry_count(const DirectoryCore& core);

// Directory::add: checks and stores a new entry in `txn`. (An import runs the stages of
// detail/import_stages.h instead.)
struct AddOptions {
  bool import = false;     // Keep provided operational values; no NO-USER-MODIFICATION check.
  bool append_id = false;  // MDB_APPEND into id2entry (when ids only grow).
  // Attribute descriptions the server itself provides (AddChange::internal_attributes): written
  // although NO-USER-MODIFICATION.
  std::span<const std::string> internal_attributes;
};
// Scratch buffers reused across entries.
struct AddScratch {
  std::string encoded;
  IndexKeys keys;
  IndexKeys none;
  std::string entry_uuid;  // Out: the entryUUID the entry was stored with ("" if none).
};
Status add_in_txn(DirectoryCore& core, MDB_txn* txn, const schema::Entry& entry, const Stamp& stamp,
                  const AddOptions& options, AddScratch& scratch, UuidGenerator& uuids,
                  EntryId* next_id);
Result<EntryId> load_next_id(const DirectoryCore& core, MDB_txn* txn);
Status store_next_id(const DirectoryCore& core, MDB_txn* txn, EntryId next_id);
// The stamp of one update: its actor, its time (context.now or the clock) and the next CSN,
// carrying the directory's server id.
Stamp make_stamp(const DirectoryCore& core, const UpdateContext& context);

}  // namespace numadir::backend::detail
