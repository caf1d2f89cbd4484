// backend/detail/import_stages.h: the two stages of an import, shared by Directory::Importer
// (both on one thread) and BulkImporter (prepare on worker threads, store on the
// writer thread):
//   prepare: parse and key the DN, canonicalize the attribute descriptions, check the schema,
//            add the operational attributes, encode the entry and compute its index keys. It
//            needs no transaction.
//   store:   find the parent, assign the id and write id2entry, dn2id, children and every
//            index, in the import's write transaction.
// The checks and their order per entry are those of Directory::add, so an import reports the
// same result codes.
//
// Thread contract: prepare_import_item may run on any number of threads at once, each with its
// own ImportItem and PrepareScratch. An ImportWriter belongs to the thread that owns the write
// transaction; it must be destroyed (closing its cursors) before that transaction ends.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backend/detail/directory_core.h"

namespace numadir::backend::detail {

// One entry on its way through an import.
struct ImportItem {
  schema::Entry entry;    // As given; prepare canonicalizes and stamps its attributes in place.
  std::uint64_t tag = 0;  // The caller's reference (BulkImporter::add).
  // Its entryCSN: assigned in input order, and once prepared the one stored (the entry's own,
  // where it had one).
  std::string csn;
  std::string context_csn;  // Prepared: the greatest contextCSN value of the suffix entry.
  Status status;            // prepare's verdict: store refuses an item that failed.
  std::string key;          // Its dn key.
  std::string encoded;      // encode_entry() with parent id 0 (store sets the parent).
  IndexKeys keys;
};

// canonicalize_attributes (update_util.h), in place: for a caller that owns its entries (an
// import, a replication batch), so values are not copied. Errors: as canonicalize_attributes.
Status canonicalize_in_place(const AttributeCatalog& catalog,
                             std::vector<schema::EntryAttribute>& attributes);

// prepare's second half, shared with a replication batch's (replica.cc): for `entry`, whose
// attributes are canonical, under dn key `key`: the schema check, the operational attributes
// stamped where the entry lacks them, the encoding (parent id 0) into `encoded` and the index
// keys into `keys`. Errors: the schema's check_entry codes.
// `check`: the schema check's storage, reused from the entries this thread checked before;
// `uuids`: this thread's, for an entry without an entryUUID.
Status check_and_encode(const DirectoryCore& core, const Stamp& stamp, schema::Entry& entry,
                        std::string_view key, std::string& encoded, IndexKeys& keys,
                        schema::EntryCheckScratch& check, UuidGenerator& uuids);
// check_and_encode without the schema check, for an entry taken as its provider checked it:
// the structural object class is the entry's own structuralObjectClass, or found from its
// objectClass values where it has none. Errors: kConstraintViolation for an attribute without
// values.
Status encode_unchecked(const DirectoryCore& core, const Stamp& stamp, schema::Entry& entry,
                        std::string_view key, std::string& encoded, IndexKeys& keys,
                        UuidGenerator& uuids);

// Per-thread state of prepare_import_item (and of a replica batch's preparation).
struct PrepareScratch {
  Stamp stamp;  // actor_dn and timestamp of the import; csn set per item.
  DnKeyScratch dn;
  schema::EntryCheckScratch check;
  UuidGenerator uuids;  // This thread's entryUUIDs.
};

// Prepares `item` (see the file comment), setting item.status: kInvalidDnSyntax,
// kNoSuchObject (outside the suffix), kUndefinedAttributeType, kAttributeOrValueExists,
// kInvalidAttributeSyntax, the schema's check_entry codes.
void prepare_import_item(const DirectoryCore& core, ImportItem& item, PrepareScratch& scratch);

// Stores prepared items, in input order, in one write transaction.
class ImportWriter {
 public:
  // Requires: `txn` is a write transaction of the calling thread on core.env; every id stored
  // is at least `next_id` and larger than any stored before (ids only grow during an import).
  ImportWriter(const DirectoryCore& core, MDB_txn* txn, EntryId next_id)
      : core_(core), txn_(txn), next_id_(next_id) {}
  ImportWriter(const ImportWriter&) = delete;
  ImportWriter& operator=(const ImportWriter&) = delete;

  // Opens a cursor per database written. Errors: kStorage.
  Status open();
  // Stores `item` and keeps item.tag, to name it should a later entry have its DN.
  // Returns: ok; or the error, with `failure` filled (item.tag, the DN, the status and, for the
  //   two errors an LDIF's author fixes most, the entries involved: see ImportFailure).
  // Errors: item.status when prepare failed; kEntryAlreadyExists (message: "an entry with this
  //   DN is already stored", adding its spelling when it differs); kNoSuchObject (message:
  //   "parent entry P is missing") when the parent is missing; kUnwillingToPerform for a dn key
  //   over LMDB's key size; kStorage; kInternal. After an error the transaction must be aborted.
  Status store(const ImportItem& item, ImportFailure& failure);
  // Stores an entry prepared as prepare_import_item does: its dn key, its encoding (parent id 0)
  // and its index keys. Keeps no tag.
  // Errors: as above, but kEntryAlreadyExists says only "entry already exists" and
  //   kNoSuchObject's message is the matched DN (as Directory::add's).
  Status store(std::string_view key, std::string_view encoded_entry, const IndexKeys& keys);
  // Forgets the parent found last: for a caller that also deletes or renames entries in the
  // transaction (a replication batch), after which that key may name another entry or none.
  void forget_parent() { last_parent_id_ = 0; }
  EntryId next_id() const { return next_id_; }
  // Returns: the greatest entryCSN and contextCSN of the items store(item) stored ("" if none).
  const std::string& greatest_csn() const { return greatest_csn_; }

 private:
  const DirectoryCore& core_;
  MDB_txn* const txn_;
  EntryId next_id_;
  Cursor id2entry_;
  Cursor dn2id_;
  Cursor children_;
  std::vector<Cursor> indexes_;  // Per index slot.
  // Consecutive entries mostly share a parent: its key and id, once found, skip a lookup.
  std::string last_parent_key_;
  EntryId last_parent_id_ = 0;
  std::string with_parent_;  // The encoded entry with its parent id.
  std::string greatest_csn_;
  // The tags of the entries store(item) stored, in id order: an import's ids are consecutive
  // from first_id_. Kept as varints of zigzagged differences, about a byte an entry for the
  // line numbers of an LDIF file (a vector of tags would take 8), and read only to name the
  // earlier of two entries with one DN.
  const EntryId first_id_ = next_id_;
  std::string tags_;
  std::uint64_t tags_kept_ = 0;
  std::uint64_t last_tag_ = 0;

  void keep_tag(std::uint64_t tag);
  // Returns: the tag kept for entry `id`; nullopt when none was (an entry not stored by
  //   store(item) in this import).
  std::optional<std::uint64_t> tag_of(EntryId id) const;
  // Fills failure's details for `status`, store(item)'s error, and rewrites its message.
  void describe_failure(const ImportItem& item, Status status, ImportFailure& failure);
};

}  // namespace numadir::backend::detail
