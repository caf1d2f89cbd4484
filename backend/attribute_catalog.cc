// backend/attribute_catalog.cc: the precomputed attribute-type tables.
#include "backend/attribute_catalog.h"

#include <algorithm>

#include "schema/ascii.h"
#include "schema/object_class.h"

namespace numadir::backend {

AttributeCatalog::AttributeCatalog(const schema::Schema& schema) : schema_(schema) {
  const std::span<const schema::AttributeType* const> types = schema.attribute_types();
  by_type_.reserve(types.size());
  for (const schema::AttributeType* type : types) {
    AttributeInfo& info = by_type_[type];
    info.type = type;
    info.name = type->primary_name();
  }
  for (const schema::AttributeType* type : types) {
    for (const schema::AttributeType* up = type; up != nullptr; up = up->superior) {
      auto it = by_type_.find(up);
      if (it != by_type_.end()) {
        it->second.subtype_names.push_back(type->primary_name());
      }
    }
  }
  by_name_.reserve(by_type_.size());
  for (const auto& [type, info] : by_type_) {
    by_name_.emplace(info.name, &info);
  }
  object_class_ = by_type(schema.attribute_type("objectClass"));
  const std::span<const schema::ObjectClass* const> classes = schema.object_classes();
  for (const schema::ObjectClass* below : classes) {
    for (const schema::ObjectClass* above : classes) {
      if (above != below && below->is_subclass_of(*above)) {
        subclass_oids_[above->oid].push_back(below->oid);
      }
    }
  }
  for (auto& [oid, subclasses] : subclass_oids_) {
    std::sort(subclasses.begin(), subclasses.end());
  }
}

const AttributeInfo* AttributeCatalog::resolve(std::string_view name_or_oid) const {
  // The common case: the canonical spelling, found without case folding.
  if (const AttributeInfo* info = by_canonical(name_or_oid); info != nullptr) {
    return info;
  }
  return by_type(schema_.attribute_type(name_or_oid));
}

const AttributeInfo* AttributeCatalog::by_canonical(std::string_view canonical_type) const {
  auto it = by_name_.find(canonical_type);
  return it == by_name_.end() ? nullptr : it->second;
}

const AttributeInfo* AttributeCatalog::by_type(const schema::AttributeType* type) const {
  if (type == nullptr) {
    return nullptr;
  }
  auto it = by_type_.find(type);
  return it == by_type_.end() ? nullptr : &it->second;
}

std::span<const std::string_view> AttributeCatalog::object_subclass_oids(
    std::string_view class_oid) const {
  auto it = subclass_oids_.find(class_oid);
  return it == subclass_oids_.end() ? std::span<const std::string_view>() : it->second;
}

bool AttributeCatalog::normalize(const schema::MatchingRule& rule, std::string_view value,
                                 std::string& out) const {
  static constexpr std::string_view kObjectIdentifierMatchOid = "2.5.13.0";
  if (rule.oid == kObjectIdentifierMatchOid) {
    if (const schema::ObjectClass* object_class = schema_.object_class(value)) {
      out = object_class->oid;
      return true;
    }
    if (const schema::AttributeType* type = schema_.attribute_type(value)) {
      out = type->oid;
      return true;
    }
  }
  return rule.normalize(value, out);
}

Result<std::string> AttributeCatalog::canonical_description(std::string_view description) const {
  const std::size_t semi = description.find(';');
  const std::string_view type = description.substr(0, semi);
  const AttributeInfo* info = resolve(type);
  if (info == nullptr) {
    return Status(StatusCode::kUndefinedAttributeType,
                  std::string(type) + ": attribute type undefined");
  }
  std::string out(info->name);
  if (semi == std::string_view::npos) {
    return out;
  }
  std::vector<std::string> options;
  std::string_view rest = description.substr(semi + 1);
  while (true) {
    const std::size_t next = rest.find(';');
    std::string option(rest.substr(0, next));
    if (option.empty()) {
      return Status(StatusCode::kInvalidAttributeSyntax,
                    std::string(description) + ": empty attribute option");
    }
    schema::ascii_lower_in_place(option);
    options.push_back(std::move(option));
    if (next == std::string_view::npos) {
      break;
    }
    rest.remove_prefix(next + 1);
  }
  std::sort(options.begin(), options.end());
  options.erase(std::unique(options.begin(), options.end()), options.end());
  for (const std::string& option : options) {
    out += ';';
    out += option;
  }
  return out;
}

bool options_cover(std::string_view have, std::string_view wanted) {
  while (!wanted.empty()) {
    wanted.remove_prefix(1);  // ';'
    const std::size_t next = wanted.find(';');
    const std::string_view option = wanted.substr(0, next);
    bool found = false;
    std::string_view scan = have;
    while (!scan.empty() && !found) {
      scan.remove_prefix(1);
      const std::size_t end = scan.find(';');
      found = scan.substr(0, end) == option;
      scan = end == std::string_view::npos ? std::string_view() : scan.substr(end);
    }
    if (!found) {
      return false;
    }
    wanted = next == std::string_view::npos ? std::string_view() : wanted.substr(next);
  }
  return true;
}

}  // namespace numadir::backend
