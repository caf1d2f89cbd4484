// schema/schema_parser.h: the RFC 4512 §4.1 schema definition parser, separate from the
// registry (schema/schema.h): one description at a time (AttributeTypeDescription,
// ObjectClassDescription, SyntaxDescription, MatchingRuleDescription), their canonical printed
// form, and whole schema files in the two forms admins have:
//   (a) OpenLDAP `.schema`: `attributetype ( ... )`, `objectclass ( ... )`, `ldapsyntax ( ... )`,
//       `objectidentifier NAME OID[:suffix]` (keywords case-insensitive, plural forms too),
//       continuation lines starting with whitespace, a line ending in a backslash joined to
//       the next, `#` comment lines, an empty line ending a definition (as slapd reads them);
//   (b) LDIF `cn=schema` entries (RFC 2849): `olcAttributeTypes:` / `attributeTypes:`,
//       `olcObjectClasses:` / `objectClasses:`, `olcLdapSyntaxes:` / `ldapSyntaxes:`,
//       `matchingRules:` and `olcObjectIdentifier:` values, folded lines, base64 (`::`) values and
//       the `{N}` ordering prefix OpenLDAP writes; every other line is ignored.
// The parser checks the grammar only; what the names refer to is the registry's business.
//
// Thread contract: free functions over caller-owned values; OidMacros is a plain value owned by
// one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "schema/attribute_type.h"
#include "schema/object_class.h"

namespace numadir::schema {

// One extension of a definition, e.g. X-ORIGIN 'RFC 4519'.
struct SchemaExtension {
  std::string name;                 // As written, e.g. "X-ORIGIN".
  std::vector<std::string> values;  // Unescaped.

  friend bool operator==(const SchemaExtension&, const SchemaExtension&) = default;
};

// RFC 4512 §4.1.2. References (superior, rules) are kept as written: a descr or a numeric OID.
struct AttributeTypeDescription {
  std::string oid;                 // Numeric (OID macros already expanded).
  std::vector<std::string> names;  // As written.
  std::string description;
  bool obsolete = false;
  std::string superior;             // Empty: none.
  std::string equality;             // Empty: none.
  std::string ordering;             // Empty: none.
  std::string substrings;           // Empty: none.
  std::string syntax;               // Numeric OID (macros expanded); empty: none.
  std::uint32_t syntax_length = 0;  // The {len} bound; 0: none.
  bool single_value = false;
  bool collective = false;
  bool no_user_modification = false;
  AttributeUsage usage = AttributeUsage::kUserApplications;
  std::vector<SchemaExtension> extensions;
  std::size_t line = 0;  // Where the definition starts in its file; 0 when parsed alone.

  // Returns: the canonical RFC 4512 form, fields in the RFC's order, e.g.
  // "( 2.5.4.3 NAME ( 'cn' 'commonName' ) SUP name )". Parsing it gives this description back
  // (with line 0).
  std::string to_string() const;

  friend bool operator==(const AttributeTypeDescription&,
                         const AttributeTypeDescription&) = default;
};

// RFC 4512 §4.1.1.
struct ObjectClassDescription {
  std::string oid;
  std::vector<std::string> names;
  std::string description;
  bool obsolete = false;
  std::vector<std::string> superiors;
  ObjectClassKind kind = ObjectClassKind::kStructural;
  std::vector<std::string> must;
  std::vector<std::string> may;
  std::vector<SchemaExtension> extensions;
  std::size_t line = 0;

  std::string to_string() const;

  friend bool operator==(const ObjectClassDescription&, const ObjectClassDescription&) = default;
};

// RFC 4512 §4.1.5; NAME is not in the RFC's grammar, but slapd accepts it (OpenLDAP's own
// pmi.schema uses it), so it is kept too.
struct SyntaxDescription {
  std::string oid;
  std::vector<std::string> names;
  std::string description;
  std::vector<SchemaExtension> extensions;
  std::size_t line = 0;

  std::string to_string() const;

  friend bool operator==(const SyntaxDescription&, const SyntaxDescription&) = default;
};

// RFC 4512 §4.1.3.
struct MatchingRuleDescription {
  std::string oid;
  std::vector<std::string> names;
  std::string description;
  bool obsolete = false;
  std::string syntax;  // Numeric OID of the assertion syntax.
  std::vector<SchemaExtension> extensions;
  std::size_t line = 0;

  std::string to_string() const;

  friend bool operator==(const MatchingRuleDescription&, const MatchingRuleDescription&) = default;
};

// OpenLDAP `objectidentifier` macros: a name standing for a numeric OID, usable as "NAME" or
// "NAME:suffix" (meaning OID.suffix) where a definition gives its own OID or a SYNTAX.
class OidMacros {
 public:
  // Defines `name` as `oid`, itself numeric or a macro reference ("OLcfg:3").
  // Errors: kMalformed for a name that is not a descr or an OID that is neither numeric nor a
  //   known macro reference; kAlreadyExists when `name` already stands for another OID
  //   (redefining it to the same OID is accepted).
  Status define(std::string_view name, std::string_view oid);

  // Returns: `text` unchanged when it is a numeric OID, else the expansion of "NAME[:suffix]".
  // Errors: kMalformed when `text` is neither, or names an undefined macro.
  Result<std::string> expand(std::string_view text) const;

  bool empty() const { return oids_.empty(); }

 private:
  std::unordered_map<std::string, std::string> oids_;  // Lower-cased name -> numeric OID.
};

// Parse one description, e.g. an attributeTypes value. Keywords are case-insensitive and may
// come in any order, each at most once; unknown keywords other than X- extensions are errors.
// Where RFC 4512 wants an oid, a quoted one ('1.2.3') is accepted, as slapd does. `macros`, when
// given, expands OID macros in the element's own OID and in SYNTAX.
// Errors: kMalformed "offset N: problem" (N counts bytes from the start of `text`).
Result<AttributeTypeDescription> parse_attribute_type(std::string_view text,
                                                      const OidMacros* macros = nullptr);
Result<ObjectClassDescription> parse_object_class(std::string_view text,
                                                  const OidMacros* macros = nullptr);
Result<SyntaxDescription> parse_syntax(std::string_view text, const OidMacros* macros = nullptr);
Result<MatchingRuleDescription> parse_matching_rule(std::string_view text,
                                                    const OidMacros* macros = nullptr);

// The definitions of one schema file, each in file order, each with its line.
struct SchemaFileContents {
  std::vector<AttributeTypeDescription> attribute_types;
  std::vector<ObjectClassDescription> object_classes;
  std::vector<SyntaxDescription> syntaxes;
  std::vector<MatchingRuleDescription> matching_rules;
};

// Parses a schema file's text in either form: LDIF when the first line that is neither blank
// nor a comment looks like "attribute: value", the OpenLDAP form otherwise. `origin` names the
// file in errors. `macros` receives the file's objectidentifier macros and expands references
// to them and to earlier files' macros (pass the same object for each file of a set).
// Errors: kMalformed "origin:line: problem", line 1-based (the line of the problem within a
//   definition that spans lines, where it can be told).
Result<SchemaFileContents> parse_schema_file(std::string_view text, std::string_view origin,
                                             OidMacros& macros);

}  // namespace numadir::schema
