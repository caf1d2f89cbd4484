// libFuzzer target for the schema definition parser (schema/schema_parser.h) and the registry
// built from it (Schema::load_text). Any input may be rejected; an accepted one must keep its
// properties, or the target traps:
//   - each single description parses back from its to_string() to an equal description, and
//     printing that again gives the same text;
//   - every definition of an accepted file round-trips the same way;
//   - a loaded Schema finds each element by its OID and each name, every attribute type has a
//     syntax, and every object class is a subclass of itself and of its superiors;
//   - check_entry and structural_class terminate on an entry built from the input.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "schema/schema.h"
#include "schema/schema_parser.h"

namespace {

using numadir::Result;
using namespace numadir::schema;

void check(bool condition) {
  if (!condition) {
    __builtin_trap();
  }
}

template <typename Description, typename Parse>
void check_round_trip(const Description& description, Parse parse) {
  const std::string printed = description.to_string();
  Result<Description> again = parse(printed, nullptr);
  check(again.ok());
  Description expected = description;
  expected.line = 0;
  check(*again == expected);
  check(again->to_string() == printed);
}

template <typename Description, typename Parse>
void check_single(std::string_view text, Parse parse) {
  Result<Description> parsed = parse(text, nullptr);
  if (!parsed.ok()) {
    check(parsed.status().code() == numadir::StatusCode::kMalformed);
    check(parsed.status().message().starts_with("offset "));
    return;
  }
  check_round_trip(*parsed, parse);
}

void check_schema(std::string_view text) {
  Result<Schema> loaded = Schema::load_text(text, "fuzz");
  if (!loaded.ok()) {
    check(loaded.status().message().starts_with("fuzz:"));
    return;
  }
  const Schema& schema = *loaded;
  for (const AttributeType* type : schema.attribute_types()) {
    check(schema.attribute_type(type->oid) == type);
    for (const std::string& name : type->names) {
      check(schema.attribute_type(name) == type);
    }
    check(type->syntax != nullptr);
    check(type->is_subtype_of(*type));
  }
  for (const ObjectClass* object_class : schema.object_classes()) {
    check(schema.object_class(object_class->oid) == object_class);
    for (const std::string& name : object_class->names) {
      check(schema.object_class(name) == object_class);
    }
    check(object_class->is_subclass_of(*object_class));
    for (const ObjectClass* superior : object_class->superiors) {
      check(object_class->is_subclass_of(*superior));
    }
  }
  // An entry naming every class and every type, with the input's first line as the value.
  const std::string value(text.substr(0, text.find('\n')));
  Entry entry{.dn = "cn=" + value, .attributes = {}};
  EntryAttribute classes{.description = "objectClass", .values = {}};
  for (const ObjectClass* object_class : schema.object_classes()) {
    classes.values.emplace_back(object_class->primary_name());
  }
  entry.attributes.push_back(std::move(classes));
  for (const AttributeType* type : schema.attribute_types()) {
    entry.attributes.push_back({std::string(type->primary_name()), {value}});
  }
  (void)schema.check_entry(entry);
  (void)schema.structural_class(entry);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  check_single<AttributeTypeDescription>(text, parse_attribute_type);
  check_single<ObjectClassDescription>(text, parse_object_class);
  check_single<SyntaxDescription>(text, parse_syntax);
  check_single<MatchingRuleDescription>(text, parse_matching_rule);

  OidMacros macros;
  Result<SchemaFileContents> contents = parse_schema_file(text, "fuzz", macros);
  if (contents.ok()) {
    for (const AttributeTypeDescription& d : contents->attribute_types) {
      check(d.line > 0);
      check_round_trip(d, parse_attribute_type);
    }
    for (const ObjectClassDescription& d : contents->object_classes) {
      check_round_trip(d, parse_object_class);
    }
    for (const SyntaxDescription& d : contents->syntaxes) {
      check_round_trip(d, parse_syntax);
    }
    for (const MatchingRuleDescription& d : contents->matching_rules) {
      check_round_trip(d, parse_matching_rule);
    }
  } else {
    check(contents.status().message().starts_with("fuzz:"));
  }

  check_schema(text);
  return 0;
}
