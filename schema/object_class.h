// schema/object_class.h: an object class (RFC 4512 §4.1.1), as loaded into a Schema.
//
// Thread contract: immutable once its Schema is loaded; any thread may read it. Pointers point
// into the same Schema and live as long as it does.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "schema/attribute_type.h"

namespace numadir::schema {

enum class ObjectClassKind : std::uint8_t { kAbstract, kStructural, kAuxiliary };

// 'top' (RFC 4512 §2.4.1), the class every class is a subclass of.
inline constexpr std::string_view kTopOid = "2.5.6.0";

struct ObjectClass {
  std::string oid;
  std::vector<std::string> names;
  std::string description;
  bool obsolete = false;
  std::vector<const ObjectClass*> superiors;
  ObjectClassKind kind = ObjectClassKind::kStructural;
  std::vector<const AttributeType*> must;  // As declared.
  std::vector<const AttributeType*> may;   // As declared.
  // The closure over all superiors (no duplicates): what an entry of this class must / may hold.
  std::vector<const AttributeType*> all_must;
  std::vector<const AttributeType*> all_may;
  // all_must and all_may together, sorted by address: allows() looks a type up in it.
  std::vector<const AttributeType*> allowed;
  std::string definition;  // As published (objectClasses value).
  std::string source;      // "file:line"

  std::string_view primary_name() const { return names.empty() ? oid : names.front(); }
  // Returns: whether an entry of this class may hold `type` (in all_must or all_may).
  bool allows(const AttributeType* type) const {
    return std::binary_search(allowed.begin(), allowed.end(), type,
                              std::less<const AttributeType*>());
  }
  // Returns: true if this class is `other` or inherits from it.
  bool is_subclass_of(const ObjectClass& other) const;
};

}  // namespace numadir::schema
