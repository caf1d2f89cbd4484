// schema/attribute_type.h: an attribute type (RFC 4512 §4.1.2), as loaded into a Schema.
//
// Thread contract: immutable once its Schema is loaded; any thread may read it. Pointers to
// other schema elements point into the same Schema and live as long as it does.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "schema/matching_rule.h"
#include "schema/syntax.h"

namespace numadir::schema {

enum class AttributeUsage : std::uint8_t {
  kUserApplications,
  kDirectoryOperation,
  kDistributedOperation,
  kDsaOperation,
};

struct AttributeType {
  std::string oid;
  std::vector<std::string> names;  // As written; names[0] is the primary name. May be empty.
  std::string description;
  bool obsolete = false;
  const AttributeType* superior = nullptr;
  // Resolved rules and syntax; inherited from the superior chain when not given.
  const MatchingRule* equality = nullptr;
  const MatchingRule* ordering = nullptr;
  const MatchingRule* substrings = nullptr;
  const Syntax* syntax = nullptr;
  std::uint32_t syntax_length = 0;  // The {len} bound; 0 = none.
  bool single_value = false;
  bool collective = false;
  bool no_user_modification = false;
  AttributeUsage usage = AttributeUsage::kUserApplications;
  // The definition as published in the subschema subentry (attributeTypes value).
  std::string definition;
  // Where it was defined: "file:line".
  std::string source;

  // Returns: names[0], or the OID when the type has no name.
  std::string_view primary_name() const { return names.empty() ? oid : names.front(); }
  bool operational() const { return usage != AttributeUsage::kUserApplications; }
  // Returns: true if this type is `other` or a subtype of it.
  bool is_subtype_of(const AttributeType& other) const {
    for (const AttributeType* t = this; t != nullptr; t = t->superior) {
      if (t == &other) {
        return true;
      }
    }
    return false;
  }
};

}  // namespace numadir::schema
