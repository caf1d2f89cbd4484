// backend/directory_update.h: the updates of a directory: who makes one (UpdateContext), the
// modifications of a modify, and UpdateJob, one update queued to the directory's single writer
// (an add, remove, modify, rename or replicated batch with its UpdateContext, an optional check
// and a completion), with WriteView, the read-only view of the write transaction that a check is
// given, and WriterStats, what the writer has done. Part of directory.h's face (Directory's
// try_submit_update, submit_update and run_update queue the jobs), apart so that the writer and
// the files behind a Directory take them without the Directory class.
//
// Thread contract: a job is built by the submitting thread and handed over whole (the writer
// takes the unique_ptr); from then on only the writer thread touches it. Its check and its
// completion run on the writer thread, as change subscribers do (change_feed.h): each must be
// cheap, must not block, and must not call Directory::submit_update, run_update or the
// Directory's synchronous updates (they would wait for the thread they run on, and abort with a
// message instead; try_submit_update, which never waits, is allowed). A completion may send a
// response: the design is for a server worker to hand the writer a job whose completion answers
// the client, and return at once. A WriteView is valid only during the check it is passed to.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "backend/attribute_index.h"
#include "backend/directory_read.h"
#include "base/status.h"
#include "schema/entry.h"

namespace numadir::backend {

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

// Reads in the write transaction, as it stands before the checked job's change (so it sees
// every earlier job of the same batch): the reads access control and existence checks need
// (the target entry, its parent, group entries).
class WriteView {
 public:
  virtual ~WriteView() = default;
  // Returns: the entry named `dn`, decoded in full (computed operational attributes included).
  // Errors: kNoSuchObject (message: the matched DN); kInvalidDnSyntax; kStorage.
  virtual Result<schema::Entry> get(std::string_view dn) const = 0;
  // Passes the entry named `dn` to `on_entry` without decoding it; the EntryRef is valid only
  // during the call. Errors: as get().
  virtual Status lookup(std::string_view dn,
                        const std::function<void(const EntryRef&)>& on_entry) const = 0;
  // Returns: whether an entry named `dn` exists. Errors: kInvalidDnSyntax; kStorage.
  virtual Result<bool> exists(std::string_view dn) const = 0;
};

struct AddChange {
  schema::Entry entry;
  // Attributes of `entry` the server itself provides (the password policy's pwdChangedTime):
  // written although NO-USER-MODIFICATION. Never taken from a client's request.
  std::vector<std::string> internal_attributes;
};
struct RemoveChange {
  std::string dn;
};
struct ModifyChange {
  std::string dn;
  std::vector<Modification> modifications;
};
struct RenameChange {
  std::string dn;
  std::string new_rdn;
  bool delete_old_rdn = false;
  std::optional<std::string> new_superior;
};

// One change a replication consumer received from its provider (server/replication), for the
// entry identified by its entryUUID.
struct ReplicaItem {
  enum class Kind : std::uint8_t {
    // Store `entry` as sent (its operational attributes, entryCSN and the timestamps included,
    // kept; those it lacks stamped as an import does): added if no entry has `uuid`, replacing
    // the one that has it otherwise, moved first (with its subtree) when its DN changed. An
    // entry of another entryUUID holding the DN is replaced (a leaf that cannot stay is
    // removed).
    kUpsert,
    kDelete,  // Remove the entry that has `uuid` (a leaf).
  };
  // kUpsert: what the writer stores, made from `entry` ahead of the writer (by
  // Directory::prepare_replica, on the consumer's thread), so that the writer thread only looks
  // entries up and writes: the dn key, the entry encoded (parent id 0) with its attributes
  // canonical and checked, and its index keys. Absent: the writer prepares the item itself.
  struct Prepared {
    std::string key;
    std::string encoded;
    IndexKeys keys;
    std::string csn;  // The entry's entryCSN as stored: the provider's, or stamped if it had none.
  };

  Kind kind = Kind::kUpsert;
  std::string uuid;  // The entryUUID, lower-case 8-4-4-4-12 hex (RFC 4530).
  // kUpsert only: the DN, and the attributes unless `packed` holds them.
  schema::Entry entry;
  // kUpsert: the attributes in one buffer (pack_replica_attribute), as a consumer fills them
  // from what it received: one allocation per entry where entry.attributes takes about one per
  // value, made on the consumer's thread and freed on another. Empty: entry.attributes holds
  // them. Unpacked where the item is prepared, into storage that thread reuses.
  std::string packed;
  std::optional<Prepared> prepared;
};
// Appends one attribute, its description and values, to `packed` (ReplicaItem::packed).
void pack_replica_attribute(std::string& packed, std::string_view description,
                            std::span<const std::string_view> values);
// Returns: the bytes pack_replica_attribute appends for that attribute (to reserve them first).
std::size_t packed_replica_attribute_size(std::string_view description,
                                          std::span<const std::string_view> values);
// Unpacks `packed` (a whole packing) into `out`, reusing the storage of the strings and
// vectors `out` already holds.
void unpack_replica_attributes(std::string_view packed, std::vector<schema::EntryAttribute>& out);
// The end of a refresh's present phase (RFC 4533 §3.4.1.1): entries in scope that the
// provider did not name are gone from it.
struct ReplicaPrune {
  std::string base;
  Scope scope = Scope::kSubtree;
  std::vector<std::string> keep;  // entryUUIDs as ReplicaItem::uuid, sorted, unique.
};
// A batch of a consumer's changes, applied in order in one job (all of it or nothing), with the
// cookie that covers them stored in the same transaction (Directory::replica_cookie reads it).
struct ReplicaChange {
  std::uint32_t rid = 0;  // The consumer's replica id, 1..999.
  std::vector<ReplicaItem> items;
  std::optional<ReplicaPrune> prune;  // After the items.
  std::optional<std::string> cookie;  // Stored for `rid` when present.
  // The greatest CSN `cookie` carries ("" for none), parsed by the consumer: the directory's
  // contextCSN advances to it, and the batch's deletes take it as their CSN (where it is empty
  // they take the contextCSN as it stands).
  std::string cookie_csn;
  // A delete of an entryUUID no entry has is skipped rather than refused: in a refresh, where a
  // consumer that stopped mid-refresh is sent again what it applied without its cookie.
  bool skip_missing_deletes = false;
  // The items came in a refresh phase: their entryCSNs do not advance the contextCSN, only
  // cookie_csn (and the CSN of a delete) does. A refresh sends entries in tree order, not commit
  // order (numadir's provider sends an import's last entries, its groups, first), so until the
  // cookie that ends it the replica must not show the provider's contextCSN: a consumer of the
  // replica would take it for a state the replica does not hold yet, and so would anyone who
  // compares the two contextCSNs to tell whether the replica has caught up.
  bool refresh = false;
  // Whether each entry is checked against this directory's schema (Schema::check_entry) before
  // it is stored. false: the provider's entries are taken as the provider checked them, as
  // slapd's consumers take them by default (syncrepl schemachecking=off); their attribute types
  // must still be known here, and an attribute without values is still refused.
  bool check_schema = true;
  // Errors refusing the whole job: kNoSuchObject for a delete of an entryUUID no entry has (or
  //   an upsert whose parent is missing); kUnsupported when database.indexes lacks an eq index
  //   on entryUUID; kEntryAlreadyExists when a moved entry's new DN is held by a non-leaf of
  //   another entryUUID; the schema's codes for an entry it refuses (kUndefinedAttributeType
  //   naming the type, ...); kNotAllowedOnNonLeaf for a delete of an entry with children.
};

// Runs inside the write transaction before the change; a non-ok Status refuses the job with
// nothing written, and becomes the job's completion status.
using WriteCheck = std::function<Status(const WriteView&)>;
// Called once with the job's outcome: ok only once its change is committed and durable (per
// Durability); otherwise the job's error (as Directory::add / remove / modify / rename
// document them, or the check's Status), and nothing of it was written.
using WriteCompletion = std::function<void(Status)>;

struct UpdateJob {
  std::variant<AddChange, RemoveChange, ModifyChange, RenameChange, ReplicaChange> change;
  UpdateContext context;
  WriteCheck check;      // Optional.
  WriteCompletion done;  // Optional (nothing is told of the outcome without one).

  // Returns: roughly the bytes the change writes (DNs and values), for the batch bound.
  std::size_t approximate_bytes() const;
};

// Upper bounds (inclusive) of the commit-duration buckets, in nanoseconds: 10 µs ... 1 s, then
// +Inf (the metrics endpoint's buckets for every duration).
inline constexpr std::array<std::uint64_t, 16> kCommitBoundsNs = {
    10'000,      25'000,      50'000,      100'000,      250'000,    500'000,
    1'000'000,   2'500'000,   5'000'000,   10'000'000,   25'000'000, 50'000'000,
    100'000'000, 250'000'000, 500'000'000, 1'000'000'000};
inline constexpr std::size_t kCommitBuckets = kCommitBoundsNs.size() + 1;
// Upper bounds (inclusive) of the batch-size buckets, in jobs: 1 2 4 ... 256, then +Inf.
inline constexpr std::array<std::uint64_t, 9> kBatchSizeBounds = {1, 2, 4, 8, 16, 32, 64, 128, 256};
inline constexpr std::size_t kBatchSizeBuckets = kBatchSizeBounds.size() + 1;

// Returns: the index of the first bucket whose bound is >= `value` (bounds.size() past the last).
template <std::size_t N>
constexpr std::size_t bucket_index(const std::array<std::uint64_t, N>& bounds,
                                   std::uint64_t value) {
  std::size_t index = 0;
  for (const std::uint64_t bound : bounds) {
    index += value > bound ? 1 : 0;
  }
  return index;
}

// What the writer has done since the directory was opened (for tests and monitoring).
struct WriterStats {
  std::uint64_t jobs = 0;           // Jobs completed, committed or failed.
  std::uint64_t failed = 0;         // Of those, the jobs whose completion got an error.
  std::uint64_t commits = 0;        // Write transactions committed (one fsync each under kSync).
  std::uint64_t batches = 0;        // Batches run (commits plus those whose commit failed or
                                    // that had nothing to commit).
  std::uint64_t largest_batch = 0;  // The most jobs in one batch.
  // Each mdb_txn_commit of a write transaction (fsync included), committed or failed, by
  // duration (kCommitBoundsNs; not cumulative), and their total in nanoseconds.
  std::array<std::uint64_t, kCommitBuckets> commit_buckets{};
  std::uint64_t commit_ns = 0;
  // Each batch of at least one job by its jobs (kBatchSizeBounds; not cumulative), and the jobs.
  std::array<std::uint64_t, kBatchSizeBuckets> batch_size_buckets{};
  std::uint64_t batched_jobs = 0;
};

}  // namespace numadir::backend
