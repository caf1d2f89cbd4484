// server/operations/attribute_selection.cc: parsing the requested attribute list and matching entry
// attributes against it.
#include "server/operations/attribute_selection.h"

#include "schema/entry.h"
#include "schema/object_class.h"
#include "schema/schema.h"

namespace numadir::server {

AttributeSelection::AttributeSelection(std::span<const std::string_view> requested,
                                       const backend::AttributeCatalog& catalog)
    : catalog_(catalog) {
  if (requested.empty()) {
    all_user_ = true;
    return;
  }
  bool only_no_attrs = true;
  for (std::string_view name : requested) {
    if (name == "1.1") {
      continue;
    }
    only_no_attrs = false;
    if (name == "*") {
      all_user_ = true;
    } else if (name == "+") {
      all_operational_ = true;
    } else if (name.starts_with('@')) {
      const schema::ObjectClass* object_class = catalog.schema().object_class(name.substr(1));
      if (object_class == nullptr) {
        continue;
      }
      for (const auto* list : {&object_class->all_must, &object_class->all_may}) {
        for (const schema::AttributeType* type : *list) {
          if (const backend::AttributeInfo* info = catalog.by_type(type); info != nullptr) {
            named_.push_back(Named{info, std::string()});
          }
        }
      }
    } else {
      Result<std::string> canonical = catalog.canonical_description(name);
      if (!canonical.ok()) {
        continue;  // Unknown type or a bad option: ignored (RFC 4511 §4.5.1.8).
      }
      const auto [type, options] = schema::split_description(*canonical);
      if (const backend::AttributeInfo* info = catalog.by_canonical(type); info != nullptr) {
        named_.push_back(Named{info, std::string(options)});
      }
    }
  }
  nothing_ = only_no_attrs;
}

const schema::AttributeType* AttributeSelection::type_of(std::string_view description) const {
  const std::string_view type = schema::split_description(description).first;
  const backend::AttributeInfo* info = catalog_.by_canonical(type);
  if (info == nullptr) {
    info = catalog_.resolve(type);
  }
  return info != nullptr ? info->type : nullptr;
}

bool AttributeSelection::selects(std::string_view description,
                                 const schema::AttributeType* type) const {
  if (nothing_) {
    return false;
  }
  if (type == nullptr) {
    return all_user_;
  }
  if (type->operational() ? all_operational_ : all_user_) {
    return true;
  }
  const backend::AttributeInfo* info = catalog_.by_type(type);
  if (info == nullptr) {
    return false;
  }
  const std::string_view options = backend::description_options(description);
  for (const Named& named : named_) {
    if (named.info->covers(info->name) && backend::options_cover(options, named.options)) {
      return true;
    }
  }
  return false;
}

}  // namespace numadir::server
