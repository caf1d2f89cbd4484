// server/operations/attribute_selection.h: which attributes of an entry a search returns, from the
// SearchRequest's attribute list (RFC 4511 §4.5.1.8): none listed or "*" = every user
// attribute, "+" = every operational attribute (RFC 3673), "1.1" alone = none, "@class" =
// the attributes of that object class (RFC 4529), and names or OIDs with options ("cn;lang-de"
// selects values tagged lang-de of cn and its subtypes). Names the schema does not know are
// ignored, as RFC 4511 asks.
//
// Thread contract: built and used by the worker running one search; the catalog it refers to
// is immutable and must outlive it.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backend/attribute_catalog.h"
#include "schema/attribute_type.h"

namespace numadir::server {

class AttributeSelection {
 public:
  // Requires: `catalog` outlives the selection.
  AttributeSelection(std::span<const std::string_view> requested,
                     const backend::AttributeCatalog& catalog);

  // Returns: true when no attribute can be selected ("1.1" alone): the entry's DN is all a
  //   result needs, and the entry need not be decoded.
  bool selects_nothing() const { return nothing_; }

  // Returns: the schema type of entry attribute description `description` (a canonical one
  //   such as "cn;lang-en", or any spelling), or nullptr when the schema does not know it.
  const schema::AttributeType* type_of(std::string_view description) const;

  // Returns: whether an entry attribute with description `description` of type `type` (from
  //   type_of) is selected. An unknown type is returned only for "*" (never for "+").
  bool selects(std::string_view description, const schema::AttributeType* type) const;

 private:
  struct Named {
    const backend::AttributeInfo* info;
    std::string options;  // Canonical: ";a;b", or empty.
  };

  const backend::AttributeCatalog& catalog_;
  bool nothing_ = false;
  bool all_user_ = false;
  bool all_operational_ = false;
  std::vector<Named> named_;
};

}  // namespace numadir::server
