// schema/detail/schema_parser.h: the description parsers of schema/schema_parser.cc with
// the error kept as an offset and a problem, for the file parser (schema/schema_file_parser.cc)
// to turn the offset into a file line.
//
// Thread contract: free functions over caller-owned values.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "schema/schema_parser.h"

namespace numadir::schema::detail {

struct ParseError {
  std::size_t offset = 0;  // Bytes from the start of the parsed text.
  std::string problem;
};

// Each parses one description as its schema_parser.h namesake does.
// Returns: false when `text` does not parse, with `error` filled and `out` unspecified.
bool parse_attribute_type(std::string_view text, const OidMacros* macros,
                          AttributeTypeDescription& out, ParseError& error);
bool parse_object_class(std::string_view text, const OidMacros* macros, ObjectClassDescription& out,
                        ParseError& error);
bool parse_syntax(std::string_view text, const OidMacros* macros, SyntaxDescription& out,
                  ParseError& error);
bool parse_matching_rule(std::string_view text, const OidMacros* macros,
                         MatchingRuleDescription& out, ParseError& error);

// The whitespace between tokens: RFC 4512's SPACE, and the tabs and line ends that files and
// folded values bring.
inline bool is_schema_space(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

}  // namespace numadir::schema::detail
