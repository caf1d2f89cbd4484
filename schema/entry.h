// schema/entry.h: a directory entry in decoded, editable form: its DN and its attributes with
// their values, as an LDIF record or an Add request carries them. The backend stores entries in
// a compact binary form and converts to and from this one.
//
// Thread contract: a plain value owned by one thread at a time.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace numadir::schema {

struct EntryAttribute {
  // The attribute description as written: a type name or OID plus options ("cn;lang-en").
  std::string description;
  std::vector<std::string> values;

  friend bool operator==(const EntryAttribute&, const EntryAttribute&) = default;
};

struct Entry {
  std::string dn;  // RFC 4514 string form, as given.
  std::vector<EntryAttribute> attributes;

  // Returns: the attribute whose description equals `description` case-insensitively (options
  // included), or nullptr.
  const EntryAttribute* find(std::string_view description) const;
  EntryAttribute* find(std::string_view description);

  friend bool operator==(const Entry&, const Entry&) = default;
};

// Splits an attribute description into its type ("cn") and its options (";lang-en;binary").
// Returns: {type, options including the leading ';' or empty}.
std::pair<std::string_view, std::string_view> split_description(std::string_view description);

}  // namespace numadir::schema
