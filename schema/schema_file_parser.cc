// schema/schema_file_parser.cc: parse_schema_file (schema/schema_parser.h): schema files in
// OpenLDAP's .schema form and in LDIF cn=schema form, statement by statement, with errors
// turned into "file:line: problem".
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "schema/ascii.h"
#include "schema/detail/quoted.h"
#include "schema/detail/schema_parser.h"
#include "schema/schema_parser.h"

namespace numadir::schema {
namespace {

using detail::ParseError;

// Where each physical line of a logical text (a statement or an LDIF value) starts.
struct LineMap {
  std::size_t first_line = 0;
  // (offset in the text, 1-based file line) for each physical line after the first.
  std::vector<std::pair<std::size_t, std::size_t>> breaks;

  std::size_t line_at(std::size_t offset) const {
    std::size_t line = first_line;
    for (const auto& [start, number] : breaks) {
      if (start > offset) {
        break;
      }
      line = number;
    }
    return line;
  }
};

Status file_error(std::string_view origin, std::size_t line, std::string_view problem) {
  std::string message(origin);
  message += ':';
  message += std::to_string(line);
  message += ": ";
  message += problem;
  return malformed(std::move(message));
}

enum class DefinitionKind { kAttributeType, kObjectClass, kSyntax, kMatchingRule };

// Parses one definition of `kind` from `text` into `contents`.
Status add_definition(DefinitionKind kind, std::string_view text, const LineMap& lines,
                      std::size_t text_offset, std::string_view origin, const OidMacros& macros,
                      SchemaFileContents& contents) {
  ParseError error;
  bool ok = false;
  switch (kind) {
    case DefinitionKind::kAttributeType: {
      AttributeTypeDescription d;
      ok = detail::parse_attribute_type(text, &macros, d, error);
      d.line = lines.first_line;
      contents.attribute_types.push_back(std::move(d));
      break;
    }
    case DefinitionKind::kObjectClass: {
      ObjectClassDescription d;
      ok = detail::parse_object_class(text, &macros, d, error);
      d.line = lines.first_line;
      contents.object_classes.push_back(std::move(d));
      break;
    }
    case DefinitionKind::kSyntax: {
      SyntaxDescription d;
      ok = detail::parse_syntax(text, &macros, d, error);
      d.line = lines.first_line;
      contents.syntaxes.push_back(std::move(d));
      break;
    }
    case DefinitionKind::kMatchingRule: {
      MatchingRuleDescription d;
      ok = detail::parse_matching_rule(text, &macros, d, error);
      d.line = lines.first_line;
      contents.matching_rules.push_back(std::move(d));
      break;
    }
  }
  if (!ok) {
    return file_error(origin, lines.line_at(text_offset + error.offset), error.problem);
  }
  return Status();
}

// "NAME OID" of an objectidentifier statement or olcObjectIdentifier value.
Status define_macro(std::string_view text, std::size_t line, std::string_view origin,
                    OidMacros& macros) {
  std::vector<std::string_view> tokens;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && detail::is_schema_space(static_cast<unsigned char>(text[i]))) {
      ++i;
    }
    const std::size_t start = i;
    while (i < text.size() && !detail::is_schema_space(static_cast<unsigned char>(text[i]))) {
      ++i;
    }
    if (i > start) {
      tokens.push_back(text.substr(start, i - start));
    }
  }
  if (tokens.size() != 2) {
    return file_error(origin, line, "objectidentifier needs a name and an OID");
  }
  Status status = macros.define(tokens[0], tokens[1]);
  if (!status.ok()) {
    return file_error(origin, line, status.message());
  }
  return Status();
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

bool is_blank(std::string_view line) {
  return std::all_of(line.begin(), line.end(),
                     [](char c) { return detail::is_schema_space(static_cast<unsigned char>(c)); });
}

// True if `line` reads "attribute[;options]:" as LDIF lines do.
bool looks_like_ldif(std::string_view line) {
  std::size_t i = 0;
  while (i < line.size() &&
         (is_keychar(static_cast<unsigned char>(line[i])) || line[i] == ';' || line[i] == '.')) {
    ++i;
  }
  return i > 0 && i < line.size() && line[i] == ':';
}

// A statement of the OpenLDAP form: its text (physical lines joined by '\n') and lines.
struct Statement {
  std::string text;
  LineMap lines;
};

Status parse_openldap_statement(const Statement& statement, std::string_view origin,
                                OidMacros& macros, SchemaFileContents& contents) {
  std::string_view text = statement.text;
  std::size_t i = 0;
  while (i < text.size() && !detail::is_schema_space(static_cast<unsigned char>(text[i])) &&
         text[i] != '(') {
    ++i;
  }
  const std::string keyword = ascii_lowered(text.substr(0, i));
  const std::string_view rest = text.substr(i);
  DefinitionKind kind = DefinitionKind::kAttributeType;
  if (keyword == "attributetype" || keyword == "attributetypes") {
    kind = DefinitionKind::kAttributeType;
  } else if (keyword == "objectclass" || keyword == "objectclasses") {
    kind = DefinitionKind::kObjectClass;
  } else if (keyword == "ldapsyntax" || keyword == "ldapsyntaxes") {
    kind = DefinitionKind::kSyntax;
  } else if (keyword == "matchingrule" || keyword == "matchingrules") {
    kind = DefinitionKind::kMatchingRule;
  } else if (keyword == "objectidentifier") {
    return define_macro(rest, statement.lines.first_line, origin, macros);
  } else {
    return file_error(origin, statement.lines.first_line,
                      "unknown keyword " + detail::in_quotes(text.substr(0, i)) +
                          " (expected attributetype, objectclass, objectidentifier or "
                          "ldapsyntax)");
  }
  return add_definition(kind, rest, statement.lines, i, origin, macros, contents);
}

// Splits the text into statements as slapd's fp_getline does: a line starting with whitespace
// continues the statement before it (a whitespace-only line too), so does any line after one
// ending in a single backslash; an empty line ends the statement; a statement whose first character
// is '#' is a comment, continuation lines included.
Status parse_openldap_file(std::string_view text, std::string_view origin, OidMacros& macros,
                           SchemaFileContents& contents) {
  const std::vector<std::string_view> lines = split_lines(text);
  Statement current;
  bool have_statement = false;
  bool in_comment = false;
  bool join_next = false;  // The statement so far ended in a backslash: join the next line.
  auto flush = [&]() -> Status {
    join_next = false;
    if (!have_statement) {
      return Status();
    }
    have_statement = false;
    return parse_openldap_statement(current, origin, macros, contents);
  };
  auto start = [&](std::string_view line, std::size_t number) {
    have_statement = true;
    current.text = std::string(line);
    current.lines = LineMap{.first_line = number, .breaks = {}};
  };
  // Drops a final single backslash of the statement and notes that it joins the next line.
  auto note_backslash = [&]() {
    const std::string& t = current.text;
    join_next = !t.empty() && t.back() == '\\' && (t.size() < 2 || t[t.size() - 2] != '\\');
    if (join_next) {
      current.text.pop_back();
    }
  };
  for (std::size_t index = 0; index < lines.size(); ++index) {
    const std::string_view line = lines[index];
    const std::size_t number = index + 1;
    if (join_next && have_statement) {
      current.lines.breaks.emplace_back(current.text.size(), number);
      current.text += line;
      note_backslash();
      continue;
    }
    if (line.empty()) {
      NUMADIR_RETURN_IF_ERROR(flush());
      in_comment = false;
      continue;
    }
    if (line[0] == ' ' || line[0] == '\t') {
      if (in_comment) {
        continue;
      }
      if (have_statement) {
        current.lines.breaks.emplace_back(current.text.size() + 1, number);
        current.text += '\n';
        current.text += line;
        note_backslash();
        continue;
      }
      // An indented line after an empty one starts a statement of its own (slapd skips the
      // leading whitespace when it splits the statement into words).
      std::string_view trimmed = line;
      while (!trimmed.empty() &&
             detail::is_schema_space(static_cast<unsigned char>(trimmed.front()))) {
        trimmed.remove_prefix(1);
      }
      if (trimmed.empty()) {
        continue;
      }
      if (trimmed.front() == '#') {
        in_comment = true;
        continue;
      }
      start(trimmed, number);
      note_backslash();
      continue;
    }
    NUMADIR_RETURN_IF_ERROR(flush());
    in_comment = line[0] == '#';
    if (!in_comment) {
      start(line, number);
      note_backslash();
    }
  }
  return flush();
}

// Decodes RFC 4648 base64 (RFC 2849 BASE64-STRING). Returns false on a bad character or
// length.
bool decode_base64(std::string_view text, std::string& out) {
  out.clear();
  std::uint32_t buffer = 0;
  int bits = 0;
  std::size_t padding = 0;
  std::size_t count = 0;
  for (const char c : text) {
    int value;
    if (c >= 'A' && c <= 'Z') {
      value = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      value = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      value = c - '0' + 52;
    } else if (c == '+') {
      value = 62;
    } else if (c == '/') {
      value = 63;
    } else if (c == '=') {
      ++padding;
      ++count;
      continue;
    } else {
      return false;
    }
    if (padding > 0) {
      return false;
    }
    ++count;
    buffer = (buffer << 6) | static_cast<std::uint32_t>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xff);
    }
  }
  return count % 4 == 0 && padding <= 2;
}

// An LDIF logical line: unfolded text and where its physical lines start.
struct LdifLine {
  std::string text;
  LineMap lines;
  bool comment = false;
};

Status parse_ldif_line(const LdifLine& line, std::string_view origin, OidMacros& macros,
                       SchemaFileContents& contents) {
  const std::string_view text = line.text;
  const std::size_t colon = text.find(':');
  if (colon == std::string_view::npos) {
    if (text == "-") {  // The separator of an LDIF modify record.
      return Status();
    }
    return file_error(origin, line.lines.first_line, "expected 'attribute: value'");
  }
  std::string_view attribute = text.substr(0, colon);
  attribute = attribute.substr(0, attribute.find(';'));  // Options play no part here.
  const std::string name = ascii_lowered(attribute);
  DefinitionKind kind = DefinitionKind::kAttributeType;
  bool is_macro = false;
  if (name == "olcattributetypes" || name == "attributetypes") {
    kind = DefinitionKind::kAttributeType;
  } else if (name == "olcobjectclasses" || name == "objectclasses") {
    kind = DefinitionKind::kObjectClass;
  } else if (name == "olcldapsyntaxes" || name == "ldapsyntaxes") {
    kind = DefinitionKind::kSyntax;
  } else if (name == "matchingrules") {
    kind = DefinitionKind::kMatchingRule;
  } else if (name == "olcobjectidentifier") {
    is_macro = true;
  } else {
    return Status();  // dn:, objectClass:, cn:, olcDitContentRules: and the rest play no part.
  }
  std::string decoded;
  std::string_view value;
  std::size_t value_offset = colon + 1;
  bool mapped = true;  // Whether offsets in `value` map to the file (not for base64).
  if (value_offset < text.size() && text[value_offset] == ':') {
    std::string_view encoded = text.substr(value_offset + 1);
    while (!encoded.empty() &&
           detail::is_schema_space(static_cast<unsigned char>(encoded.front()))) {
      encoded.remove_prefix(1);
    }
    while (!encoded.empty() &&
           detail::is_schema_space(static_cast<unsigned char>(encoded.back()))) {
      encoded.remove_suffix(1);
    }
    if (!decode_base64(encoded, decoded)) {
      return file_error(origin, line.lines.first_line, "invalid base64 value");
    }
    value = decoded;
    value_offset = 0;
    mapped = false;
  } else if (value_offset < text.size() && text[value_offset] == '<') {
    return file_error(origin, line.lines.first_line, "URL values (':<') are not supported");
  } else {
    while (value_offset < text.size() && text[value_offset] == ' ') {
      ++value_offset;
    }
    value = text.substr(value_offset);
  }
  // OpenLDAP's X-ORDERED prefix: "{0}( 1.2.3 ..." or "{0}OLcfg 1.3.6...".
  if (!value.empty() && value.front() == '{') {
    std::size_t close = 1;
    while (close < value.size() && is_ascii_digit(static_cast<unsigned char>(value[close]))) {
      ++close;
    }
    if (close > 1 && close < value.size() && value[close] == '}') {
      value.remove_prefix(close + 1);
      value_offset += close + 1;
    }
  }
  LineMap lines = line.lines;
  if (!mapped) {
    lines.breaks.clear();
  }
  if (is_macro) {
    return define_macro(value, line.lines.first_line, origin, macros);
  }
  return add_definition(kind, value, lines, mapped ? value_offset : 0, origin, macros, contents);
}

Status parse_ldif_file(std::string_view text, std::string_view origin, OidMacros& macros,
                       SchemaFileContents& contents) {
  const std::vector<std::string_view> lines = split_lines(text);
  LdifLine current;
  bool have_line = false;
  auto flush = [&]() -> Status {
    if (!have_line) {
      return Status();
    }
    have_line = false;
    if (current.comment) {
      return Status();
    }
    return parse_ldif_line(current, origin, macros, contents);
  };
  for (std::size_t index = 0; index < lines.size(); ++index) {
    const std::string_view line = lines[index];
    const std::size_t number = index + 1;
    if (line.empty()) {
      NUMADIR_RETURN_IF_ERROR(flush());
      continue;
    }
    if (line[0] == ' ') {  // RFC 2849 folding: the line continues the previous one.
      if (!have_line) {
        if (is_blank(line)) {
          continue;
        }
        return file_error(origin, number, "continuation line without a line before it");
      }
      current.lines.breaks.emplace_back(current.text.size(), number);
      current.text += line.substr(1);
      continue;
    }
    NUMADIR_RETURN_IF_ERROR(flush());
    have_line = true;
    current.text = std::string(line);
    current.comment = line[0] == '#';
    current.lines = LineMap{.first_line = number, .breaks = {}};
  }
  return flush();
}

}  // namespace

Result<SchemaFileContents> parse_schema_file(std::string_view text, std::string_view origin,
                                             OidMacros& macros) {
  bool ldif = false;
  for (const std::string_view line : split_lines(text)) {
    if (is_blank(line) || line[0] == '#') {
      continue;
    }
    ldif = looks_like_ldif(line);
    break;
  }
  SchemaFileContents contents;
  Status status = ldif ? parse_ldif_file(text, origin, macros, contents)
                       : parse_openldap_file(text, origin, macros, contents);
  if (!status.ok()) {
    return status;
  }
  return contents;
}

}  // namespace numadir::schema
