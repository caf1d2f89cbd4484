// backend/dn_normalizer.cc: see dn_normalizer.h.
#include "backend/dn_normalizer.h"

#include "schema/ascii.h"

namespace numadir::backend {

std::string SchemaDnNormalizer::normalize_type(std::string_view type) const {
  const schema::AttributeType* attribute = schema_.attribute_type(type);
  if (attribute == nullptr) {
    return DnValueNormalizer::normalize_type(type);
  }
  return schema::ascii_lowered(attribute->primary_name());
}

std::string SchemaDnNormalizer::normalize(std::string_view type, std::string_view value) const {
  const schema::AttributeType* attribute = schema_.attribute_type(type);
  if (attribute != nullptr && attribute->equality != nullptr) {
    std::string out;
    if (attribute->equality->normalize(value, out)) {
      return out;
    }
  }
  return default_value(value);
}

void SchemaDnNormalizer::normalize_ava(std::string_view type, std::string_view value,
                                       std::string& type_out, std::string& value_out) const {
  const schema::AttributeType* attribute = schema_.attribute_type(type);
  if (attribute == nullptr) {
    // normalize() would look up the lower-cased name and miss again (the lookup ignores case).
    type_out = DnValueNormalizer::normalize_type(type);
    value_out = default_value(value);
    return;
  }
  type_out.assign(attribute->primary_name());
  schema::ascii_lower_in_place(type_out);
  if (attribute->equality != nullptr) {
    value_out.clear();
    if (attribute->equality->normalize(value, value_out)) {
      return;
    }
  }
  value_out = default_value(value);
}

}  // namespace numadir::backend
