// backend/detail/update_util.h: helpers shared by the update paths (update.cc, modify.cc,
// rename.cc, admin.cc). Each runs inside the caller's write transaction, with the writer mutex
// held.
//
// Thread contract: called only by the thread holding DirectoryCore::write_mu (the writer
// thread, or an import's or rebuild's thread).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/detail/directory_core.h"
#include "schema/object_class.h"

namespace numadir::backend::detail {

// Canonicalizes every description of `in` into `out` (replacing it).
// Errors: kUndefinedAttributeType; kAttributeOrValueExists when two descriptions name the same
// attribute ("attribute 'cn' provided more than once", as slapd).
Status canonicalize_attributes(const AttributeCatalog& catalog,
                               std::span<const schema::EntryAttribute> in,
                               std::vector<schema::EntryAttribute>* out);

// Errors: kConstraintViolation when the description's type is NO-USER-MODIFICATION.
Status check_user_modifiable(const AttributeCatalog& catalog, std::string_view description);

// Runs the schema's check_entry and returns the structural class (nullptr if none).
Status check_entry_schema(const DirectoryCore& core, const schema::Entry& entry,
                          const schema::ObjectClass** structural);

// Encodes and writes entry `id` to id2entry with `flags` (MDB_APPEND, MDB_NOOVERWRITE or 0).
// Errors: kStorage; kInternal when NOOVERWRITE finds the id taken.
Status put_entry(const DirectoryCore& core, MDB_txn* txn, EntryId id, const EntryHeader& header,
                 std::span<const schema::EntryAttribute> attributes, unsigned flags,
                 std::string& scratch);

// Finds and reads the entry under dn key `key`.
// Errors: kNoSuchObject (message: the matched DN); kStorage.
Result<EntryId> find_entry(const DirectoryCore& core, MDB_txn* txn, std::string_view key,
                           EntryView* view);

Result<bool> has_children(const DirectoryCore& core, MDB_txn* txn, EntryId id);

}  // namespace numadir::backend::detail
