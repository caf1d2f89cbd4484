// server/operations/entry_match.cc: three-valued filter evaluation on decoded entries.
#include "server/operations/entry_match.h"

#include <span>
#include <string>

namespace numadir::server {
namespace {

enum class Tri { kFalse, kTrue, kUndefined };

// Returns: whether entry attribute `description` holds values of `info`'s type (or a subtype).
bool holds_type(std::string_view description, const backend::AttributeInfo& info,
                const backend::AttributeCatalog& catalog) {
  const backend::AttributeInfo* have =
      catalog.resolve(schema::split_description(description).first);
  return have != nullptr && info.covers(have->name);
}

Tri evaluate(const schema::Filter& filter, std::uint32_t index, const schema::Entry& entry,
             const backend::AttributeCatalog& catalog) {
  const schema::FilterNode& node = filter.node(index);
  switch (node.kind) {
    case schema::FilterKind::kAnd:
    case schema::FilterKind::kOr: {
      const bool is_and = node.kind == schema::FilterKind::kAnd;
      bool undefined = false;
      for (std::uint32_t child = index + 1; child < node.end; child = filter.node(child).end) {
        const Tri value = evaluate(filter, child, entry, catalog);
        if (value == (is_and ? Tri::kFalse : Tri::kTrue)) {
          return value;
        }
        undefined = undefined || value == Tri::kUndefined;
      }
      if (undefined) {
        return Tri::kUndefined;
      }
      return is_and ? Tri::kTrue : Tri::kFalse;
    }
    case schema::FilterKind::kNot: {
      const Tri value = evaluate(filter, index + 1, entry, catalog);
      if (value == Tri::kUndefined) {
        return value;
      }
      return value == Tri::kTrue ? Tri::kFalse : Tri::kTrue;
    }
    case schema::FilterKind::kPresent: {
      const backend::AttributeInfo* info =
          catalog.resolve(schema::split_description(node.attribute).first);
      if (info == nullptr) {
        return Tri::kFalse;
      }
      for (const schema::EntryAttribute& attribute : entry.attributes) {
        if (holds_type(attribute.description, *info, catalog)) {
          return Tri::kTrue;
        }
      }
      return Tri::kFalse;
    }
    case schema::FilterKind::kEquality: {
      const backend::AttributeInfo* info =
          catalog.resolve(schema::split_description(node.attribute).first);
      if (info == nullptr || info->type->equality == nullptr) {
        return Tri::kUndefined;
      }
      const schema::MatchingRule& rule = *info->type->equality;
      std::string assertion;
      if (!catalog.normalize(rule, node.value, assertion)) {
        return Tri::kUndefined;
      }
      // objectClass matches the subclasses of the asserted class too (RFC 4512 §2.4.1).
      const std::span<const std::string_view> subclasses =
          info == catalog.object_class() ? catalog.object_subclass_oids(assertion)
                                         : std::span<const std::string_view>();
      std::string normalized;
      for (const schema::EntryAttribute& attribute : entry.attributes) {
        if (!holds_type(attribute.description, *info, catalog)) {
          continue;
        }
        for (const std::string& value : attribute.values) {
          if (catalog.normalize(rule, value, normalized) &&
              backend::object_class_value_matches(normalized, assertion, subclasses)) {
            return Tri::kTrue;
          }
        }
      }
      return Tri::kFalse;
    }
    default:
      return Tri::kUndefined;
  }
}

}  // namespace

bool entry_matches(const schema::Filter& filter, const schema::Entry& entry,
                   const backend::AttributeCatalog& catalog) {
  return evaluate(filter, 0, entry, catalog) == Tri::kTrue;
}

}  // namespace numadir::server
