// backend/attribute_catalog.h: what the backend needs to know about the schema's attribute
// types, precomputed once: canonical descriptions, the canonical names of every subtype (so a
// filter on `name` matches `cn` with byte comparisons), and lookups by canonical name.
//
// A canonical description is the type's primary name followed by its options lower-cased,
// sorted and without duplicates: "CN;Lang-EN" and "2.5.4.3;lang-en" are both "cn;lang-en".
// Entries are stored with canonical descriptions.
//
// Thread contract: built once by Directory::open; immutable afterwards, any thread may read.
#pragma once

#include <algorithm>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "schema/attribute_type.h"
#include "schema/matching_rule.h"
#include "schema/schema.h"

namespace numadir::backend {

struct AttributeInfo {
  const schema::AttributeType* type = nullptr;
  std::string_view name;  // The primary name: the canonical type.
  // The canonical names of this type and of every type below it.
  std::vector<std::string_view> subtype_names;

  bool covers(std::string_view canonical_type) const {
    for (std::string_view n : subtype_names) {
      if (n == canonical_type) {
        return true;
      }
    }
    return false;
  }
};

class AttributeCatalog {
 public:
  // Requires: `schema` outlives the catalog.
  explicit AttributeCatalog(const schema::Schema& schema);
  AttributeCatalog(const AttributeCatalog&) = delete;
  AttributeCatalog& operator=(const AttributeCatalog&) = delete;

  const schema::Schema& schema() const { return schema_; }

  // Returns: the info for a type name or OID in any case, or nullptr when the schema does not
  // know it.
  const AttributeInfo* resolve(std::string_view name_or_oid) const;
  // Returns: the info for a canonical (primary) name, by exact comparison; nullptr if unknown.
  const AttributeInfo* by_canonical(std::string_view canonical_type) const;
  const AttributeInfo* by_type(const schema::AttributeType* type) const;

  // Writes the normalized form of `value` under `rule` to `out`, as the schema's entry check
  // compares: objectIdentifierMatch maps a known class or attribute name to its numeric OID
  // ("person" equals "2.5.6.6"). Returns: false if the rule rejects the value.
  bool normalize(const schema::MatchingRule& rule, std::string_view value, std::string& out) const;

  // Returns: the objectClass type's info, or nullptr when the schema lacks it.
  const AttributeInfo* object_class() const { return object_class_; }
  // Returns: the numeric OIDs of the object classes below the class whose numeric OID is
  // `class_oid` (the class itself not included), sorted; empty for a class without subclasses
  // or an unknown OID. An entry belongs to the superclasses of its classes (RFC 4512 §2.4.1),
  // so an objectClass equality assertion of a class also matches these values, as slapd's
  // objectSubClassMatch does. The views live as long as the catalog.
  std::span<const std::string_view> object_subclass_oids(std::string_view class_oid) const;

  // Returns: the canonical form of `description`. Errors: kUndefinedAttributeType naming it;
  // kInvalidAttributeSyntax for an empty option.
  Result<std::string> canonical_description(std::string_view description) const;

 private:
  const schema::Schema& schema_;
  std::unordered_map<const schema::AttributeType*, AttributeInfo> by_type_;
  std::unordered_map<std::string_view, const AttributeInfo*> by_name_;
  const AttributeInfo* object_class_ = nullptr;
  // Key: a class's numeric OID; value: its subclasses' numeric OIDs, sorted. Views into schema_.
  std::unordered_map<std::string_view, std::vector<std::string_view>> subclass_oids_;
};

// Returns: whether normalized objectClass value `value` is `assertion` (a normalized class
// OID) or one of `subclasses`, the OIDs object_subclass_oids() gives for it.
inline bool object_class_value_matches(std::string_view value, std::string_view assertion,
                                       std::span<const std::string_view> subclasses) {
  return value == assertion || std::binary_search(subclasses.begin(), subclasses.end(), value);
}

// Returns: the options part of a canonical description (";lang-en" or "").
inline std::string_view description_options(std::string_view description) {
  const std::size_t semi = description.find(';');
  return semi == std::string_view::npos ? std::string_view() : description.substr(semi);
}

// Returns: true if every option of `wanted` (canonical, ";a;b") is among `have`'s.
bool options_cover(std::string_view have, std::string_view wanted);

}  // namespace numadir::backend
