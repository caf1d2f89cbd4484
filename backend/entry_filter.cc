// backend/entry_filter.cc: encodes the entry as id2entry would and runs the search evaluator.
#include "backend/entry_filter.h"

#include <string>
#include <vector>

#include "backend/entry_codec.h"
#include "backend/filter_eval.h"
#include "backend/operational.h"

namespace numadir::backend {

EntryFilter::EntryFilter(const schema::Filter& filter, const AttributeCatalog& catalog)
    : catalog_(catalog), types_(std::make_unique<OperationalTypes>(catalog)) {
  auto compiled = std::make_unique<CompiledFilter>();
  compiled->compile(filter, catalog_, *types_);
  compiled_ = std::move(compiled);
}

EntryFilter::~EntryFilter() = default;

bool EntryFilter::matches(const schema::Entry& entry, EntryFilterScratch& scratch) const {
  std::vector<schema::EntryAttribute>& attributes = scratch.attributes;
  std::string& encoded = scratch.encoded;
  attributes.clear();
  for (const schema::EntryAttribute& attribute : entry.attributes) {
    Result<std::string> description = catalog_.canonical_description(attribute.description);
    if (!description.ok()) {
      continue;
    }
    attributes.push_back(schema::EntryAttribute{std::move(*description), attribute.values});
  }
  encode_entry(EntryHeader{0, entry.dn, std::string_view()}, attributes, encoded);
  Result<EntryView> view = EntryView::parse(encoded);
  if (!view.ok()) {
    return false;
  }
  FilterEvaluator evaluator;
  Status error;
  return evaluator.evaluate(*compiled_, *view, nullptr, &error) == Tri::kTrue;
}

}  // namespace numadir::backend
