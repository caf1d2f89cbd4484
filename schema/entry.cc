// schema/entry.cc: Entry attribute lookup and attribute description splitting.
#include "schema/entry.h"

#include <cstddef>

namespace numadir::schema {
namespace {

char to_lower_ascii(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool equals_ignore_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (to_lower_ascii(a[i]) != to_lower_ascii(b[i])) {
      return false;
    }
  }
  return true;
}

}  // namespace

const EntryAttribute* Entry::find(std::string_view description) const {
  for (const EntryAttribute& attribute : attributes) {
    if (equals_ignore_case(attribute.description, description)) {
      return &attribute;
    }
  }
  return nullptr;
}

EntryAttribute* Entry::find(std::string_view description) {
  for (EntryAttribute& attribute : attributes) {
    if (equals_ignore_case(attribute.description, description)) {
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
