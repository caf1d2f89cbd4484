// schema/detail/schema_data.h: what a Schema holds (its impl_), shared by the loader
// (schema/schema.cc) and the entry checks (schema/schema_check.cc).
//
// Thread contract: filled once while Schema::load runs; immutable afterwards, so any thread
// may read it. Element pointers point into its own storage and live as long as it does.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "schema/ascii.h"
#include "schema/attribute_type.h"
#include "schema/object_class.h"
#include "schema/syntax.h"

namespace numadir::schema::detail {

inline constexpr std::string_view kExtensibleObjectOid = "1.3.6.1.4.1.1466.101.120.111";
inline constexpr std::string_view kObjectClassOid = "2.5.4.0";

// Case-insensitive (ASCII) hashing and comparison, transparent so that lookups by
// string_view do not allocate.
struct CaseInsensitiveHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const {
    std::size_t hash = 14695981039346656037ull;  // FNV-1a.
    for (const char c : text) {
      hash ^= static_cast<unsigned char>(ascii_lower(c));
      hash *= 1099511628211ull;
    }
    return hash;
  }
};

struct CaseInsensitiveEqual {
  using is_transparent = void;
  bool operator()(std::string_view a, std::string_view b) const { return ascii_iequals(a, b); }
};

template <typename T>
using NameIndex = std::unordered_map<std::string, T, CaseInsensitiveHash, CaseInsensitiveEqual>;

// Everything a Schema holds, behind its impl_ (schema/schema.h declares the type only).
struct SchemaData {
  std::vector<std::unique_ptr<AttributeType>> attribute_type_storage;
  std::vector<const AttributeType*> attribute_types;
  NameIndex<const AttributeType*> attribute_type_index;  // Names and OIDs.
  std::vector<std::unique_ptr<ObjectClass>> object_class_storage;
  std::vector<const ObjectClass*> object_classes;
  NameIndex<const ObjectClass*> object_class_index;
  // Syntaxes the files define as X-SUBST aliases of built-in ones: the Syntax views point into
  // the alias's own strings, which never move (each alias is heap-allocated once).
  struct SyntaxAlias {
    std::string oid;
    std::string description;
    Syntax syntax;
  };
  std::vector<std::unique_ptr<SyntaxAlias>> syntax_aliases;
  const AttributeType* object_class_type = nullptr;
  const ObjectClass* top = nullptr;
  const ObjectClass* extensible_object = nullptr;

  const Syntax* find_syntax_any(std::string_view oid) const {
    if (const Syntax* builtin = find_syntax(oid)) {
      return builtin;
    }
    for (const auto& alias : syntax_aliases) {
      if (alias->oid == oid) {
        return &alias->syntax;
      }
    }
    return nullptr;
  }
};

}  // namespace numadir::schema::detail
