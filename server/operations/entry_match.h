// server/operations/entry_match.h: filter evaluation on a decoded schema::Entry, for the entries
// the server makes up rather than stores (the root DSE, cn=Subschema). Stored entries are filtered
// by the backend (backend/filter_eval.h); this covers what clients send to these two: and, or,
// not, presence and equality (with the attribute's equality rule; objectClass equality also
// matches the class's subclasses, RFC 4512 §2.4.1), with RFC 4511's three-valued logic. Other
// items (substrings, ordering, approximate, extensible) are Undefined.
//
// Thread contract: a function of its arguments; the catalog is immutable.
#pragma once

#include "backend/attribute_catalog.h"
#include "schema/entry.h"
#include "schema/filter.h"

namespace numadir::server {

// Returns: true if `filter` evaluates to TRUE on `entry`.
// Requires: `filter` is not empty.
bool entry_matches(const schema::Filter& filter, const schema::Entry& entry,
                   const backend::AttributeCatalog& catalog);

}  // namespace numadir::server
