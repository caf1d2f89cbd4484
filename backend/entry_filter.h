// backend/entry_filter.h: a filter evaluated on a decoded schema::Entry with the schema's
// matching rules, exactly as searches evaluate stored entries (backend/filter_eval.h): for
// the server's uses outside a search, such as the `filter` of an access rule's target.
//
// Thread contract: immutable after construction; matches() may run on any thread at once.
#pragma once

#include <memory>

#include "backend/attribute_catalog.h"
#include "schema/entry.h"
#include "schema/filter.h"

namespace numadir::backend {

class CompiledFilter;
struct OperationalTypes;

class EntryFilter {
 public:
  // Compiles `filter` once. Requires: `filter` is not empty; `catalog` outlives this object.
  EntryFilter(const schema::Filter& filter, const AttributeCatalog& catalog);
  ~EntryFilter();
  EntryFilter(const EntryFilter&) = delete;
  EntryFilter& operator=(const EntryFilter&) = delete;

  // Returns: true if the filter evaluates to TRUE on `entry`. Attributes whose type the schema
  //   does not know are ignored; computed attributes (hasSubordinates, ...) count only if the
  //   entry holds them.
  bool matches(const schema::Entry& entry) const;

 private:
  const AttributeCatalog& catalog_;
  std::unique_ptr<const OperationalTypes> types_;
  std::unique_ptr<const CompiledFilter> compiled_;
};

}  // namespace numadir::backend
