// backend/attribute_index.h: attribute indexes: one LMDB database per indexed attribute and
// kind, named "ix.<attribute>.<kind>" (kind: eq, pres, sub, ord), mapping a key to the ids of
// the entries that produce it (MDB_DUPSORT | MDB_DUPFIXED | MDB_INTEGERDUP).
//
// Keys, from the values of the indexed attribute and of its subtypes (any options):
//   eq:   the equality rule's normalized value;
//   ord:  the ordering rule's normalized value (byte order = value order);
//   pres: the single key "+";
//   sub:  from the substrings rule's normalized value v: 'I' + the first 3 bytes of v, 'F' + the
//         last 3 bytes, and 'A' + every 3-byte window (a value shorter than 3 bytes gives 'I' + v
//         and 'F' + v only).
// Keys longer than kMaxIndexKeyBytes are cut: eq keys to a prefix plus an 8-byte hash of the
// whole key, ord keys to a prefix (a monotone cut keeps range scans supersets). Index lookups
// give candidates only; every candidate is checked by full filter evaluation.
//
// Thread contract: an IndexSet is configured at open and immutable afterwards (its DBIs open
// once); any thread may use it inside its own transaction.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/attribute_catalog.h"
#include "backend/entry_codec.h"
#include "backend/lmdb_env.h"
#include "base/status.h"
#include "schema/entry.h"

namespace numadir::backend {

struct IndexSpec;

enum class IndexKind : std::uint8_t { kEquality, kPresence, kSubstrings, kOrdering };

inline constexpr std::size_t kMaxIndexKeyBytes = 480;
inline constexpr std::size_t kSubstringGram = 3;
inline constexpr char kSubInitial = 'I';
inline constexpr char kSubAny = 'A';
inline constexpr char kSubFinal = 'F';
inline constexpr std::string_view kPresenceKey = "+";

std::string_view index_kind_name(IndexKind kind);

struct Index {
  const AttributeInfo* attribute = nullptr;
  IndexKind kind = IndexKind::kEquality;
  const schema::MatchingRule* rule = nullptr;  // nullptr for presence.
  std::string db_name;                         // "ix.uid.eq"
  MDB_dbi dbi = 0;
};

// Sorted, de-duplicated (index slot, key) pairs of one entry.
using IndexKeys = std::vector<std::pair<std::uint32_t, std::string>>;
// Sorted, de-duplicated entry ids.
using IdList = std::vector<EntryId>;

class IndexSet {
 public:
  IndexSet() = default;
  IndexSet(const IndexSet&) = delete;
  IndexSet& operator=(const IndexSet&) = delete;
  IndexSet(IndexSet&&) = default;
  IndexSet& operator=(IndexSet&&) = default;

  // Resolves the configured specs (DBIs not yet opened). Errors: kInvalidArgument for an
  // attribute the schema does not know or a kind its matching rules cannot support.
  static Result<IndexSet> configure(const AttributeCatalog& catalog,
                                    std::span<const IndexSpec> specs);

  std::span<Index> indexes() { return indexes_; }
  std::span<const Index> indexes() const { return indexes_; }
  const Index& index(std::uint32_t slot) const { return indexes_[slot]; }

  // Returns: the slot of an index of `kind` usable for a filter on `type` with `rule` (an index
  // on `type` or on a supertype, with the same rule) that is built in the snapshot of read
  // transaction `txn_id`, or -1.
  int find_usable(const AttributeInfo& type, IndexKind kind, const schema::MatchingRule* rule,
                  std::uint64_t txn_id) const;

  // An index is built (usable for candidates) in every snapshot from transaction id
  // `ready_since` on; kNever until then. Indexes are maintained by every update either way.
  // Any thread may call these (release / acquire: the flag follows the commit it names).
  static constexpr std::uint64_t kNever = ~std::uint64_t{0};
  void set_ready_since(std::uint32_t slot, std::uint64_t txn_id) const {
    ready_since_[slot].store(txn_id, std::memory_order_release);
  }
  bool ready_in(std::uint32_t slot, std::uint64_t txn_id) const {
    return txn_id >= ready_since_[slot].load(std::memory_order_acquire);
  }
  // Whether the index has been built at all (writers: an unbuilt index lacks the pairs of
  // entries older than it, so their absence is not an inconsistency).
  bool built(std::uint32_t slot) const {
    return ready_since_[slot].load(std::memory_order_acquire) != kNever;
  }

  // Adds the keys of every indexed value of `attributes` / of `view` to `out` and sorts and
  // de-duplicates it. Values a rule rejects produce no key. Errors (view): kStorage if corrupt.
  void entry_keys(const AttributeCatalog& catalog,
                  std::span<const schema::EntryAttribute> attributes, IndexKeys* out) const;
  Status entry_keys(const AttributeCatalog& catalog, const EntryView& view, IndexKeys* out) const;

  // Deletes the pairs in `before` but not `after` and puts those in `after` but not `before`,
  // all for entry `id`. With `append_ids` (an import, where every id is larger than any
  // stored one) puts use MDB_APPENDDUP. Errors: kStorage; kInternal when a pair to delete is
  // missing or one to put is already there (in a built index; see built()).
  Status apply(MDB_txn* txn, EntryId id, const IndexKeys& before, const IndexKeys& after,
               bool append_ids = false) const;
  // Returns: whether some index covers attributes of canonical type `type`.
  bool indexes_type(std::string_view type) const { return !covering(type).empty(); }

 private:
  // Adds the keys of one value for the index at `slot`.
  void value_keys(const AttributeCatalog& catalog, std::uint32_t slot, std::string_view value,
                  std::string& scratch, IndexKeys* out) const;
  // Slots of the indexes that cover attributes of canonical type `type`.
  std::span<const std::uint32_t> covering(std::string_view type) const;

  std::vector<Index> indexes_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> ready_since_;  // Per slot; see ready_in().
  std::unordered_map<std::string_view, std::vector<std::uint32_t>> covering_;
};

// Returns: `normalized` cut to an index key of `kind` (see the header comment).
std::string index_key(IndexKind kind, std::string_view normalized);

// Appends the sub index keys of a normalized value (see the header comment).
void substring_keys(std::string_view normalized, std::vector<std::string>* out);

// Candidate reads. Each appends ids and leaves `out` sorted and de-duplicated.
// `cursor` is open on the index's database. Errors: kStorage.
Status ids_for_key(Cursor& cursor, std::string_view key, IdList* out);
Status ids_for_prefix(Cursor& cursor, std::string_view prefix, IdList* out);
// Keys k with lower <= k (when has_lower) and k <= upper (when has_upper).
Status ids_for_range(Cursor& cursor, const std::string* lower, const std::string* upper,
                     IdList* out);

// Sorted-list set operations (results sorted, unique).
void intersect_ids(IdList& a, const IdList& b);
void union_ids(IdList& a, const IdList& b);

}  // namespace numadir::backend
