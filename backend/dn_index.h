// backend/dn_index.h: the hierarchy databases: dn2id (dn key -> id) and children (parent id ->
// child ids), and the dn key layout.
//
// The dn key of a DN is its normalized RDNs (schema::Dn::normalized with the schema's equality
// rules) in reverse order, separated by one NUL byte:
//   "uid=jdoe,ou=people,dc=example,dc=com" -> "dc=com\0dc=example\0ou=people\0uid=jdoe"
// A normalized RDN never holds a raw NUL (RFC 4514 escaping writes \00), so the subtree below
// key B is exactly the keys that start with B + '\0': a key range, and dn2id's order is a
// preorder walk of the tree (parents before children).
//
// children: key = parent id (MDB_INTEGERKEY; 0 is the parent of the suffix entry), duplicates
// = child ids (MDB_DUPSORT | MDB_DUPFIXED | MDB_INTEGERDUP).
//
// Thread contract: a DnIndex holds only DBI handles (immutable after open); any thread may use
// it inside its own transaction. A DnKeyScratch belongs to the thread using it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "backend/dn_normalizer.h"
#include "backend/lmdb_env.h"
#include "base/status.h"
#include "schema/dn.h"
#include "schema/schema.h"

namespace numadir::backend {

inline constexpr char kDnKeySeparator = '\0';

// Returns: the dn key of `dn` ("" for the root DN).
std::string dn_key(const schema::Dn& dn, const schema::DnValueNormalizer& normalizer);
// Returns: the dn key of the normalized DN string `ndn` (Dn::normalized's output).
std::string dn_key_from_normalized(std::string_view ndn);
// As dn_key_from_normalized, writing the key to `key` (replacing its contents, reusing its
// capacity): allocates nothing once `key` has grown.
void dn_key_from_normalized_into(std::string_view ndn, std::string& key);
// Parses and keys `dn`. Errors: kInvalidDnSyntax (the parser's message).
Result<std::string> dn_key_of(std::string_view dn, const schema::DnValueNormalizer& normalizer);
// What dn_key_into parses and normalizes through; kept by its caller (a ReadTxn, an import
// worker) so that its buffers keep their capacity.
struct DnKeyScratch {
  schema::Dn parsed;
  std::string ndn;
};
// As dn_key_of, writing the key to `key` (replacing its contents, reusing its capacity): with a
// `key` and `scratch` kept per worker it allocates nothing once warm. Errors: as dn_key_of;
// `key` is then empty.
Status dn_key_into(std::string_view dn, const schema::DnValueNormalizer& normalizer,
                   std::string& key, DnKeyScratch& scratch);

// Writes the normalized DN whose dn key is `key` to `out` (replacing its contents): the key's
// RDNs in reverse order joined by ','. dn_key_from_normalized's inverse, without normalizing
// anything (a normalized RDN holds no raw NUL).
void normalized_dn_from_key(std::string_view key, std::string& out);

// Returns: the key of the parent ("" for a one-RDN key).
inline std::string_view parent_key(std::string_view key) {
  const std::size_t cut = key.rfind(kDnKeySeparator);
  return cut == std::string_view::npos ? std::string_view() : key.substr(0, cut);
}
// Returns: true if `key` lies strictly below `base`.
inline bool key_is_below(std::string_view key, std::string_view base) {
  return key.size() > base.size() && key[base.size()] == kDnKeySeparator && key.starts_with(base);
}
// Returns: true if `key` is `base` or lies below it.
inline bool key_in_subtree(std::string_view key, std::string_view base) {
  return key == base || key_is_below(key, base);
}

// dn2id and children.
class DnIndex {
 public:
  DnIndex() = default;
  // `max_key_bytes` is LMDB's key size limit (mdb_env_get_maxkeysize, 511 by default): a DN
  // whose key is longer cannot be stored.
  DnIndex(MDB_dbi dn2id, MDB_dbi children, std::size_t max_key_bytes)
      : dn2id_(dn2id), children_(children), max_key_bytes_(max_key_bytes) {}

  MDB_dbi dn2id() const { return dn2id_; }
  MDB_dbi children() const { return children_; }
  // The longest dn key that can be stored.
  std::size_t max_key_bytes() const { return max_key_bytes_; }

  // Returns: the id stored under `key`, or 0 if absent (also for a key too long to store).
  // Errors: kStorage.
  Result<EntryId> find(MDB_txn* txn, std::string_view key) const;
  // Returns: the dn key of the longest existing ancestor of `key` (possibly `key` itself), and
  // its id in *id (0 and "" when none exists). Errors: kStorage.
  Result<std::string_view> longest_existing(MDB_txn* txn, std::string_view key, EntryId* id) const;

  // Adds key -> id and parent -> id. Errors: kEntryAlreadyExists when the key is taken;
  // kUnwillingToPerform for a key longer than the limit (a DN of roughly 500 bytes and more);
  // kStorage.
  Status add(MDB_txn* txn, std::string_view key, EntryId id, EntryId parent_id) const;
  // Removes key and parent -> id. Errors: kInternal if they were not there; kStorage.
  Status remove(MDB_txn* txn, std::string_view key, EntryId id, EntryId parent_id) const;
  // Dn key only (subtree renames). Errors: kEntryAlreadyExists / kInternal / kStorage.
  Status put_key(MDB_txn* txn, std::string_view key, EntryId id) const;
  Status remove_key(MDB_txn* txn, std::string_view key) const;
  // Moves `id` from one parent's children to another's. Errors: kInternal / kStorage.
  Status move_child(MDB_txn* txn, EntryId id, EntryId old_parent, EntryId new_parent) const;

  // Returns: the number of children of `id`. `cursor` is an open cursor on children().
  Result<std::uint64_t> child_count(Cursor& cursor, EntryId id) const;

 private:
  MDB_dbi dn2id_ = 0;
  MDB_dbi children_ = 0;
  std::size_t max_key_bytes_ = 511;
};

// Walks dn2id over `base` and its subtree (or only below it), in key order.
class SubtreeScan {
 public:
  // Starts at `start_key` when it is not empty (a key in the subtree: the entries before it are
  // not walked), else at the base.
  // Requires: `cursor` is open on dn2id and outlives the scan.
  SubtreeScan(Cursor& cursor, std::string_view base_key, bool include_base,
              std::string_view start_key = {});
  // Returns: false past the subtree. *key views LMDB memory. Errors: kStorage.
  Result<bool> next(std::string_view* key, EntryId* id);

 private:
  Cursor& cursor_;
  std::string base_;
  bool include_base_;
  std::string start_;
  bool started_ = false;
};

// Walks the children of one entry, in id order.
class ChildScan {
 public:
  // Starts at the first child whose id is at least `start` (0: the first child).
  // Requires: `cursor` is open on children and outlives the scan.
  ChildScan(Cursor& cursor, EntryId parent, EntryId start = 0)
      : cursor_(cursor), parent_(parent), start_(start) {}
  // Returns: false after the last child. Errors: kStorage.
  Result<bool> next(EntryId* id);

 private:
  Cursor& cursor_;
  EntryId parent_;
  EntryId start_;
  bool started_ = false;
};

}  // namespace numadir::backend
