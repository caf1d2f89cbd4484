// schema/entry.cc: Entry attribute lookup and attribute description splitting.
#include "schema/entry.h"

#include <cstddef>

#include "schema/ascii.h"

namespace numadir::schema {
const EntryAttribute* Entry::find(std::string_view description) const {
  for (const EntryAttribute& attribute : attributes) {
    if (ascii_iequals(attribute.description, description)) {
      return &attribute;
    }
  }
  return nullptr;
}

EntryAttribute* Entry::find(std::string_view description) {
  for (EntryAttribute& attribute : attributes) {
    if (ascii_iequals(attribute.description, description)) {
      return &attribute;
    }
  }
  return nullptr;
}

std::pair<std::string_view, std::string_view> split_description(std::string_view description) {
  const std::size_t semicolon = description.find(';');
  if (semicolon == std::string_view::npos) {
    return {description, {}};
  }
  return {description.substr(0, semicolon), description.substr(semicolon)};
}

}  // namespace numadir::schema
