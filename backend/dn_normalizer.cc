// backend/dn_normalizer.cc: see dn_normalizer.h.
#include "backend/dn_normalizer.h"

namespace numadir::backend {
namespace {

char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

// Dn's default value rule: spaces trimmed and collapsed, ASCII case folded.
std::string default_fold(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  bool pending_space = false;
  for (const char c : value) {
    if (c == ' ') {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) {
      out.push_back(' ');
      pending_space = false;
    }
    out.push_back(ascii_lower(c));
  }
  return out;
}

}  // namespace

std::string SchemaDnNormalizer::normalize_type(std::string_view type) const {
  const schema::AttributeType* attribute = schema_.attribute_type(type);
  if (attribute == nullptr) {
    return DnValueNormalizer::normalize_type(type);
  }
  std::string out(attribute->primary_name());
  for (char& c : out) {
    c = ascii_lower(c);
  }
  return out;
}

std::string SchemaDnNormalizer::normalize(std::string_view type, std::string_view value) const {
  const schema::AttributeType* attribute = schema_.attribute_type(type);
  if (attribute != nullptr && attribute->equality != nullptr) {
    std::string out;
    if (attribute->equality->normalize(value, out)) {
      return out;
    }
  }
  return default_fold(value);
}

void SchemaDnNormalizer::normalize_ava(std::string_view type, std::string_view value,
                                       std::string& type_out, std::string& value_out) const {
  const schema::AttributeType* attribute = schema_.attribute_type(type);
  if (attribute == nullptr) {
    // normalize() would look up the lower-cased name and miss again (the lookup ignores case).
    type_out = DnValueNormalizer::normalize_type(type);
    value_out = default_fold(value);
    return;
  }
  type_out.assign(attribute->primary_name());
  for (char& c : type_out) {
    c = ascii_lower(c);
  }
  if (attribute->equality != nullptr) {
    value_out.clear();
    if (attribute->equality->normalize(value, value_out)) {
      return;
    }
  }
  value_out = default_fold(value);
}

}  // namespace numadir::backend
