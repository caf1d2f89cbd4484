// schema/description_printer.cc: the canonical RFC 4512 form of the descriptions of
// schema/schema_parser.h (their to_string() methods), as published in a subschema subentry.
//
// Thread contract: const methods that read only the description; any thread.
#include <string>
#include <string_view>
#include <vector>

#include "schema/schema_parser.h"

namespace numadir::schema {
namespace {

void append_qdstring(std::string& out, std::string_view text) {
  out += '\'';
  for (const char c : text) {
    if (c == '\'') {
      out += "\\27";
    } else if (c == '\\') {
      out += "\\5C";
    } else {
      out += c;
    }
  }
  out += '\'';
}

// qdstrings (also qdescrs): one quoted string alone, or a parenthesized list of them.
void append_qdstrings(std::string& out, const std::vector<std::string>& values) {
  if (values.size() == 1) {
    append_qdstring(out, values.front());
    return;
  }
  out += '(';
  for (const std::string& value : values) {
    out += ' ';
    append_qdstring(out, value);
  }
  out += " )";
}

void append_names(std::string& out, const std::vector<std::string>& names) {
  if (!names.empty()) {
    out += " NAME ";
    append_qdstrings(out, names);
  }
}

void append_description(std::string& out, const std::string& description) {
  if (!description.empty()) {
    out += " DESC ";
    append_qdstring(out, description);
  }
}

void append_oid(std::string& out, std::string_view keyword, const std::string& oid) {
  if (!oid.empty()) {
    out += ' ';
    out += keyword;
    out += ' ';
    out += oid;
  }
}

void append_oids(std::string& out, std::string_view keyword, const std::vector<std::string>& oids) {
  if (oids.empty()) {
    return;
  }
  out += ' ';
  out += keyword;
  if (oids.size() == 1) {
    out += ' ';
    out += oids.front();
    return;
  }
  out += " (";
  for (std::size_t i = 0; i < oids.size(); ++i) {
    out += i == 0 ? " " : " $ ";
    out += oids[i];
  }
  out += " )";
}

void append_extensions(std::string& out, const std::vector<SchemaExtension>& extensions) {
  for (const SchemaExtension& extension : extensions) {
    out += ' ';
    out += extension.name;
    out += ' ';
    append_qdstrings(out, extension.values);
  }
}

std::string_view usage_keyword(AttributeUsage usage) {
  switch (usage) {
    case AttributeUsage::kUserApplications:
      return "userApplications";
    case AttributeUsage::kDirectoryOperation:
      return "directoryOperation";
    case AttributeUsage::kDistributedOperation:
      return "distributedOperation";
    case AttributeUsage::kDsaOperation:
      return "dSAOperation";
  }
  return "userApplications";
}

// Starts the form of `d`: "( " and its OID, then the clauses every kind has: NAME, DESC and
// (when Description has the field) OBSOLETE.
template <typename Description>
std::string begin_description(const Description& d) {
  std::string out = "( ";
  out += d.oid;
  append_names(out, d.names);
  append_description(out, d.description);
  if constexpr (requires { d.obsolete; }) {
    if (d.obsolete) {
      out += " OBSOLETE";
    }
  }
  return out;
}

// Ends the form: the extensions, then " )".
void end_description(std::string& out, const std::vector<SchemaExtension>& extensions) {
  append_extensions(out, extensions);
  out += " )";
}

}  // namespace

std::string AttributeTypeDescription::to_string() const {
  std::string out = begin_description(*this);
  append_oid(out, "SUP", superior);
  append_oid(out, "EQUALITY", equality);
  append_oid(out, "ORDERING", ordering);
  append_oid(out, "SUBSTR", substrings);
  if (!syntax.empty()) {
    out += " SYNTAX ";
    out += syntax;
    if (syntax_length != 0) {
      out += '{';
      out += std::to_string(syntax_length);
      out += '}';
    }
  }
  if (single_value) {
    out += " SINGLE-VALUE";
  }
  if (collective) {
    out += " COLLECTIVE";
  }
  if (no_user_modification) {
    out += " NO-USER-MODIFICATION";
  }
  if (usage != AttributeUsage::kUserApplications) {
    out += " USAGE ";
    out += usage_keyword(usage);
  }
  end_description(out, extensions);
  return out;
}

std::string ObjectClassDescription::to_string() const {
  std::string out = begin_description(*this);
  append_oids(out, "SUP", superiors);
  switch (kind) {
    case ObjectClassKind::kAbstract:
      out += " ABSTRACT";
      break;
    case ObjectClassKind::kStructural:
      out += " STRUCTURAL";
      break;
    case ObjectClassKind::kAuxiliary:
      out += " AUXILIARY";
      break;
  }
  append_oids(out, "MUST", must);
  append_oids(out, "MAY", may);
  end_description(out, extensions);
  return out;
}

std::string SyntaxDescription::to_string() const {
  std::string out = begin_description(*this);
  end_description(out, extensions);
  return out;
}

std::string MatchingRuleDescription::to_string() const {
  std::string out = begin_description(*this);
  out += " SYNTAX ";
  out += syntax;
  end_description(out, extensions);
  return out;
}

}  // namespace numadir::schema
