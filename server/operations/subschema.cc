// server/operations/subschema.cc: the subschema subentry's contents.
#include "server/operations/subschema.h"

#include <string>
#include <utility>
#include <vector>

#include "backend/operational.h"
#include "schema/matching_rule.h"
#include "schema/schema_parser.h"
#include "schema/syntax.h"
#include "server/operations/root_dse.h"

namespace numadir::server {
namespace {

void add_attribute(schema::Entry& entry, std::string description, std::vector<std::string> values) {
  entry.attributes.push_back(schema::EntryAttribute{std::move(description), std::move(values)});
}

std::vector<std::string> syntax_descriptions() {
  std::vector<std::string> out;
  for (const schema::Syntax& syntax : schema::all_syntaxes()) {
    schema::SyntaxDescription description;
    description.oid = std::string(syntax.oid);
    description.description = std::string(syntax.description);
    if (!syntax.human_readable) {
      description.extensions.push_back(schema::SchemaExtension{"X-NOT-HUMAN-READABLE", {"TRUE"}});
    }
    out.push_back(description.to_string());
  }
  return out;
}

std::vector<std::string> matching_rule_descriptions() {
  std::vector<std::string> out;
  for (const schema::MatchingRule& rule : schema::all_matching_rules()) {
    schema::MatchingRuleDescription description;
    description.oid = std::string(rule.oid);
    description.names.emplace_back(rule.name);
    description.syntax = std::string(rule.syntax_oid);
    out.push_back(description.to_string());
  }
  return out;
}

bool uses_rule(const schema::AttributeType& type, const schema::MatchingRule& rule) {
  // Rules are compared by OID: the schema resolves them to the built-in table's elements, but
  // an OID comparison does not depend on that.
  for (const schema::MatchingRule* used : {type.equality, type.ordering, type.substrings}) {
    if (used != nullptr && used->oid == rule.oid) {
      return true;
    }
  }
  return false;
}

// RFC 4512 §4.1.4: ( oid NAME 'name' APPLIES oids ).
std::vector<std::string> matching_rule_uses(const schema::Schema& schema) {
  std::vector<std::string> out;
  for (const schema::MatchingRule& rule : schema::all_matching_rules()) {
    std::vector<std::string_view> applies;
    for (const schema::AttributeType* type : schema.attribute_types()) {
      if (uses_rule(*type, rule)) {
        applies.push_back(type->primary_name());
      }
    }
    if (applies.empty()) {
      continue;
    }
    std::string use = "( ";
    use += rule.oid;
    use += " NAME '";
    use += rule.name;
    use += "' APPLIES ";
    if (applies.size() == 1) {
      use += applies.front();
    } else {
      use += "( ";
      for (std::size_t i = 0; i < applies.size(); ++i) {
        if (i > 0) {
          use += " $ ";
        }
        use += applies[i];
      }
      use += " )";
    }
    use += " )";
    out.push_back(std::move(use));
  }
  return out;
}

}  // namespace

schema::Entry make_subschema_entry(const schema::Schema& schema,
                                   std::chrono::system_clock::time_point loaded_at) {
  schema::Entry entry;
  entry.dn = std::string(kSubschemaEntryDn);
  add_attribute(entry, "objectClass", {"top", "subentry", "subschema", "extensibleObject"});
  add_attribute(entry, "cn", {"Subschema"});
  add_attribute(entry, "structuralObjectClass", {"subentry"});
  const std::string timestamp = backend::generalized_time(loaded_at);
  add_attribute(entry, "createTimestamp", {timestamp});
  add_attribute(entry, "modifyTimestamp", {timestamp});
  add_attribute(entry, "subschemaSubentry", {std::string(kSubschemaEntryDn)});
  add_attribute(entry, "ldapSyntaxes", syntax_descriptions());
  add_attribute(entry, "matchingRules", matching_rule_descriptions());
  add_attribute(entry, "matchingRuleUse", matching_rule_uses(schema));
  std::vector<std::string> attribute_types;
  for (const schema::AttributeType* type : schema.attribute_types()) {
    attribute_types.push_back(type->definition);
  }
  add_attribute(entry, "attributeTypes", std::move(attribute_types));
  std::vector<std::string> object_classes;
  for (const schema::ObjectClass* object_class : schema.object_classes()) {
    object_classes.push_back(object_class->definition);
  }
  add_attribute(entry, "objectClasses", std::move(object_classes));
  return entry;
}

}  // namespace numadir::server
