// backend/filter_eval.h: RFC 4511 filter evaluation on stored entries, with the schema's
// matching rules. A schema::Filter is first compiled (types resolved, assertion values
// normalized once per search), then evaluated per candidate entry on its lazy EntryView.
//
// Three-valued logic (RFC 4511 §4.5.1.7): an item whose attribute type the schema does not
// know, whose type has no rule for the match, whose assertion value the rule rejects, or whose
// extensible rule is unknown or unusable with the type evaluates to Undefined; a presence item
// on an unknown type is FALSE (as slapd). NOT of Undefined is Undefined; AND is FALSE if any
// child is FALSE, else Undefined if any is; OR is TRUE if any child is TRUE, else Undefined if
// any is. Entries match only on TRUE. Approximate match is equality. An objectClass equality
// item also matches the asserted class's subclasses (RFC 4512 §2.4.1; slapd's
// objectSubClassMatch): (objectClass=person) matches an entry listing only inetOrgPerson.
// Extensible match: rule and type, type only (its equality rule), rule only (every attribute the
// rule can apply to), and :dn (the RDN AVAs of the entry's DN too); a match is equality of the
// rule's normalized forms (as slapd does for ordering rules).
//
// Thread contract: a CompiledFilter and a FilterEvaluator belong to the thread running one
// search; the catalog they refer to is immutable.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/attribute_catalog.h"
#include "backend/entry_codec.h"
#include "backend/operational.h"
#include "base/status.h"
#include "schema/filter.h"

namespace numadir::backend {

enum class Tri : std::uint8_t { kFalse, kTrue, kUndefined };

struct CompiledNode {
  schema::FilterKind kind = schema::FilterKind::kAnd;
  std::uint32_t end = 0;
  bool constant = false;  // The item's value is `constant_value` whatever the entry.
  Tri constant_value = Tri::kUndefined;
  const AttributeInfo* attribute = nullptr;  // Resolved type; nullptr for a typeless :rule:.
  std::string options;                       // Canonical options of the description.
  const schema::MatchingRule* rule = nullptr;
  ComputedAttribute computed = ComputedAttribute::kNone;
  bool dn_attributes = false;
  std::string assertion;  // Normalized (equality, approx, ordering, extensible).
  // For an objectClass equality or approx item: the OIDs of the asserted class's subclasses,
  // which match too (AttributeCatalog::object_subclass_oids). Empty otherwise.
  std::span<const std::string_view> subclasses;
  bool has_initial = false;
  bool has_final = false;
  std::string initial;
  std::string final_piece;
  std::vector<std::string> any;
};

class CompiledFilter {
 public:
  // Compiles `filter` (replacing this one's contents, reusing capacity).
  // Requires: `filter` is not empty; `catalog` and `types` outlive this object.
  void compile(const schema::Filter& filter, const AttributeCatalog& catalog,
               const OperationalTypes& types);

  const std::vector<CompiledNode>& nodes() const { return nodes_; }
  const CompiledNode& node(std::uint32_t i) const { return nodes_[i]; }
  const AttributeCatalog& catalog() const { return *catalog_; }

 private:
  void compile_item(const schema::Filter& filter, std::uint32_t index, CompiledNode& node,
                    const OperationalTypes& types);

  std::vector<CompiledNode> nodes_;
  const AttributeCatalog* catalog_ = nullptr;
};

// Where the values of computed attributes come from (child counts need the transaction).
class ComputedSource {
 public:
  virtual ~ComputedSource() = default;
  // Appends the values of `which` for the entry being evaluated. Errors: kStorage.
  virtual Status computed_values(ComputedAttribute which, std::vector<std::string>* out) const = 0;
};

class FilterEvaluator {
 public:
  // Returns: the filter's value on the entry. A storage or corruption error makes the result
  // Undefined and sets *error (left untouched otherwise).
  Tri evaluate(const CompiledFilter& filter, const EntryView& entry, const ComputedSource* computed,
               Status* error);

 private:
  Tri eval(std::uint32_t index);
  Tri eval_item(const CompiledNode& node);
  Tri eval_typed(const CompiledNode& node);
  Tri eval_typeless(const CompiledNode& node);
  Tri eval_dn_attributes(const CompiledNode& node);
  // Returns: whether normalized `value` satisfies `node` (equality / ordering / substrings).
  bool value_matches(const CompiledNode& node, std::string_view value);

  const CompiledFilter* filter_ = nullptr;
  const EntryView* entry_ = nullptr;
  const ComputedSource* computed_ = nullptr;
  Status* error_ = nullptr;
  std::string scratch_;
  std::vector<std::string> computed_values_;
};

}  // namespace numadir::backend
