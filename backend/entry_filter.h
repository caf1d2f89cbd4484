// backend/entry_filter.h: a filter evaluated on a decoded schema::Entry with the schema's
// matching rules, exactly as searches evaluate stored entries (backend/filter_eval.h: every
// filter item, substrings, ordering, approximate and extensible included, with RFC 4511's
// three-valued logic): the one evaluator for what the server holds outside the directory (the
// root DSE, cn=Subschema, cn=Monitor) and for its checks of entries it already decoded (the
// `filter` of an access rule's target, a search's per-entry restrictions).
//
// Thread contract: an EntryFilter is immutable after construction; matches() may run on any
// thread at once. An EntryFilterScratch belongs to the thread using it (a worker keeps one).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/attribute_catalog.h"
#include "schema/entry.h"
#include "schema/filter.h"

namespace numadir::backend {

class CompiledFilter;
struct OperationalTypes;

// The buffers matches() goes through (the entry's canonical attributes and their encoding).
// Kept by the caller, they keep their capacity from one entry to the next.
struct EntryFilterScratch {
  std::vector<schema::EntryAttribute> attributes;
  std::string encoded;
};

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
  bool matches(const schema::Entry& entry, EntryFilterScratch& scratch) const;
  // As above, with buffers of its own (allocated per call).
  bool matches(const schema::Entry& entry) const {
    EntryFilterScratch scratch;
    return matches(entry, scratch);
  }

 private:
  const AttributeCatalog& catalog_;
  std::unique_ptr<const OperationalTypes> types_;
  std::unique_ptr<const CompiledFilter> compiled_;
};

}  // namespace numadir::backend
